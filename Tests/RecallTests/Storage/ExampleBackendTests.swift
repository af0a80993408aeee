import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The backend docs/architecture.md shows (`ExpiringByteStore`, in DocSnippets): I/O only, and
/// the cache works over it — it also runs every RFC 9111 suite (`StorageKind.example`).
@Suite("The documented example backend", .timeLimit(.minutes(1)))
struct ExampleBackendTests {
    @Test("HTTPCache over it: a miss stores, a hit is answered from bytes at hand, a POST invalidates")
    func endToEnd() async throws {
        let store = ExpiringByteStore()
        let mock = MockTransport()
        mock.route("GET", "/r", .text("stored", headers: ["Cache-Control": "max-age=60"]))
        mock.route("POST", "/r", .status(204))
        let cache = HTTPCache(storage: store)
        let pipeline = Pipeline(transport: mock, hooks: [cache])
        let url = URL(string: "https://origin.test/r")!
        #expect(try await pipeline.send(URLRequest(url: url)).source == .network)
        let key = try #require(cache.key(for: URLRequest(url: url)))
        #expect(store.recordWithoutSuspending(for: key)?.key == key, "the record is at hand without suspending")
        let hit = try await pipeline.send(URLRequest(url: url))
        #expect(hit.source == .cache && hit.data == Data("stored".utf8))
        var post = URLRequest(url: url)
        post.httpMethod = "POST"
        _ = try await pipeline.send(post)
        #expect(store.statistics.count == 0, "the POST invalidated the URL")
        #expect(try await pipeline.send(URLRequest(url: url)).source == .network)
    }

    @Test("an entry goes when the cache's hint passes: a miss then, never a stale answer it could not serve")
    func expires() async throws {
        let now = TestNow()
        let store = ExpiringByteStore(now: { now.value })
        var configuration = CacheConfiguration()
        configuration.servesStaleWhenDisconnected = false
        let mock = MockTransport()
        mock.route("GET", "/r", .text("v", headers: ["Cache-Control": "max-age=60"]))
        let pipeline = Pipeline(transport: mock, hooks: [HTTPCache(storage: store, configuration: configuration, now: { now.value })])
        let request = URLRequest(url: URL(string: "https://origin.test/r")!)
        _ = try await pipeline.send(request)
        now.advance(59)
        #expect(try await pipeline.send(request).source == .cache)
        now.advance(2)
        #expect(store.statistics.count == 1)
        #expect(try await pipeline.send(request).source == .network)
        #expect(store.statistics.evictions == 1, "the expired entry was dropped at the read")
        #expect(mock.count(for: "/r") == 2)
    }

    @Test("past its byte limit, the entry that expires soonest goes first; one without an expiry last")
    func limit() async {
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        let store = ExpiringByteStore(byteLimit: 300, now: { base })
        await store.write(Data(repeating: 1, count: 100), for: "never", expires: nil)
        await store.write(Data(repeating: 2, count: 100), for: "late", expires: base.addingTimeInterval(600))
        await store.write(Data(repeating: 3, count: 100), for: "soon", expires: base.addingTimeInterval(60))
        await store.write(Data(repeating: 4, count: 100), for: "new", expires: base.addingTimeInterval(300))
        #expect(await store.bytes(for: "soon") == nil)
        #expect(await store.bytes(for: "never") != nil && store.bytesWithoutSuspending(for: "late") != nil)
        await store.write(Data(repeating: 5, count: 400), for: "huge", expires: nil)
        #expect(store.statistics.rejected == 1 && store.statistics.count == 3 && store.statistics.bytes == 300)
    }

    @Test("bytes that are not a record are a miss, removed and counted as corrupt")
    func corrupt() async {
        let store = ExpiringByteStore()
        await store.write(Data("not a record".utf8), for: "k", expires: nil)
        #expect(await store.record(for: "k") == nil)
        #expect(store.statistics.count == 0 && store.statistics.corruptRemoved == 1)
    }
}
