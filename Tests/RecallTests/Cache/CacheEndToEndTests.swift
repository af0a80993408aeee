import Foundation
import Recall
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("HTTPCache end to end: URLSessionTransport and the loopback origin", .timeLimit(.minutes(1)))
struct CacheEndToEndTests {
    @Test("a max-age response is answered from cache with zero further origin hits")
    func maxAge() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("e2e-max-age")
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = server.url(path, ["cc": "max-age=60", "size": "2048"])
        let first = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(first.source == .network)
        #expect(first.data.count == 2048)
        for _ in 0..<5 {
            let again = try await pipeline.send(URLRequest(url: url)).collected()
            #expect(again.source == .cache)
            #expect(again.body == first.body)
        }
        #expect(try await server.hits(path) == 1)
    }

    @Test("an ETag revalidation gets a 304 and serves the stored body")
    func etagRevalidation() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("e2e-etag")
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = server.url(path, ["cc": "no-cache", "etag": "v7"])
        let first = try await pipeline.send(URLRequest(url: url)).collected()
        let second = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(second.source == .revalidated)
        #expect(second.status == 200)
        #expect(second.body == first.body)
        #expect(try await server.hits(path) == 2)
        #expect(cache.statistics.revalidated == 1)
    }

    @Test("a DiskStorage reopened in a new instance still serves its entries")
    func diskSurvivesRestart() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("e2e-disk")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-e2e-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = server.url(path, ["cc": "max-age=600", "size": "4096"])
        let body: Data
        do {
            let disk = try DiskStorage(directory: directory)
            let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache(storage: disk)])
            body = try await pipeline.send(URLRequest(url: url)).collected().data
            await disk.flush()
        }
        let reopened = try DiskStorage(directory: directory)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache(storage: TieredStorage(memory: MemoryStorage(), lower: reopened))])
        let again = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(again.source == .cache)
        #expect(again.data == body)
        #expect(try await server.hits(path) == 1)
    }

    @Test("retries and stale-if-error across a real socket: a 503 is retried, then the retrier gives up and a stale copy is served")
    func retryThenStale() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("e2e-flaky")
        let cache = HTTPCache()
        let pipeline = Pipeline(
            transport: URLSessionTransport(), hooks: [cache],
            retrierFactory: .exponentialBackoff(base: .milliseconds(1), cap: .milliseconds(5), maxAttempts: 3))
        // Fresh for 0 s, usable for 60 s if the origin fails; the origin fails after its first answer.
        let url = server.url(path, ["cc": "max-age=0, stale-if-error=60", "fail_after": "1", "size": "100"])
        let good = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(good.source == .network)
        let context = RecallContext(originalRequest: URLRequest(url: url))
        let stale = try await pipeline.send(URLRequest(url: url), context: context).collected()
        #expect(stale.source == .stale)
        #expect(stale.body == good.body)
        #expect(context.attempts == 3)
        #expect(try await server.hits(path) == 4)
        #expect(cache.statistics.staleServed[.staleIfError] == 1)

        // A 503 on first contact is retried until it succeeds.
        let flaky = server.url(path + "-b", ["fail_first": "2"])
        #expect(try await pipeline.send(URLRequest(url: flaky)).collected().status == 200)
        #expect(try await server.hits(path + "-b") == 3)
    }
}
