import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #13, point 4 (first half): cache results are events like the retry events, so one
/// observer sees the whole story of a request, and they agree with the statistics.
@Suite("HTTPCache: events in the request's story", .timeLimit(.minutes(1)))
struct CacheEventTests {
    /// Every event the pipeline's observer saw, by request URL path, in order.
    final class Story: Sendable {
        private let events = Locked<[(String, RecallEvent)]>([])
        func observe(_ event: RecallEvent, _ context: RecallContext) {
            events.withLock { $0.append((context.originalRequest.url?.path ?? "", event)) }
        }
        func of(_ path: String) -> [String] {
            events.withLock { $0.filter { $0.0 == path }.map { "\($0.1)" } }
        }
        func clear() { events.withLock { $0.removeAll() } }
    }

    @Test("one observer sees a miss, its retries and the store; then a hit; a revalidation; a stale answer")
    func wholeStory() async throws {
        let now = TestNow()
        let mock = MockTransport()
        mock.route(
            "GET", "/a", .status(503), .text("a", headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "Date": HTTPDate.format(now.value)]),
            .status(304, headers: ["ETag": "\"v1\""]), .status(500))
        let cache = HTTPCache(now: { now.value })
        let story = Story()
        let pipeline = Pipeline(
            transport: mock, hooks: [cache],
            retrierFactory: .exponentialBackoff(base: .zero, maxAttempts: 2, budget: nil),
            clock: ManualClock(autoAdvance: true), observer: story.observe)
        let request = URLRequest(url: URL(string: "https://api.test/a")!)
        _ = try await pipeline.send(request)
        await cache.flush()  // a miss over a memory storage is stored just after its answer
        #expect(story.of("/a") == ["cache miss", "attempt #1", "retry #2 in 0.0 s (status 503)", "attempt #2", "cache stored"])
        story.clear()
        _ = try await pipeline.send(request)
        #expect(story.of("/a") == ["cache hit"])
        story.clear()
        now.advance(20)
        #expect(try await pipeline.send(request).source == .revalidated)
        #expect(story.of("/a") == ["attempt #1", "cache revalidated", "cache stored"])
        let statistics = cache.statistics
        #expect(statistics.misses == 1 && statistics.hits == 1 && statistics.revalidated == 1 && statistics.stores == 2)
    }

    @Test("bypassed and invalidated requests, a stale-if-error answer and only-if-cached tell what happened too")
    func otherOutcomes() async throws {
        let now = TestNow()
        let mock = MockTransport()
        mock.route(
            "GET", "/s", .status(200, headers: ["Cache-Control": "max-age=1, stale-if-error=600", "Date": HTTPDate.format(now.value)]),
            .status(503))
        mock.route("POST", "/s", .status(204))
        let story = Story()
        let cache = HTTPCache(now: { now.value })
        let pipeline = Pipeline(transport: mock, hooks: [cache], observer: story.observe)
        let get = URLRequest(url: URL(string: "https://api.test/s")!)
        _ = try await pipeline.send(get)
        await cache.flush()
        now.advance(5)
        story.clear()
        #expect(try await pipeline.send(get).source == .stale)
        #expect(story.of("/s") == ["cache miss", "attempt #1", "cache stale (staleIfError)"], "no validator: fetched, then the 503 answered stale")
        story.clear()
        var post = get
        post.httpMethod = "POST"
        _ = try await pipeline.send(post)
        #expect(story.of("/s") == ["cache bypassed", "attempt #1", "cache invalidated"])
        story.clear()
        var offline = get
        offline.cachePolicy = .returnCacheDataDontLoad
        #expect(try await pipeline.send(offline).status == 504)
        #expect(story.of("/s") == ["cache gatewayTimeout"])
        #expect(CacheEvent.stale(.staleIfError).name == "stale" && CacheEvent.hit.name == "hit")
    }

    @Test("a store that makes the storage evict records how many it evicted")
    func evictions() async throws {
        let mock = MockTransport()
        for path in ["/1", "/2", "/3"] { mock.route("GET", path, .text(path, headers: ["Cache-Control": "max-age=60"])) }
        let cache = HTTPCache(storage: MemoryStorage(countLimit: 2, eviction: .lru))
        let story = Story()
        let pipeline = Pipeline(transport: mock, hooks: [cache], observer: story.observe)
        for path in ["/1", "/2", "/3"] { _ = try await pipeline.send(URLRequest(url: URL(string: "https://api.test" + path)!)) }
        await cache.flush()
        // (Stores made behind their answers may land in any order: the third to land evicts.)
        let stories = ["/1", "/2", "/3"].map { story.of($0) }
        #expect(stories.allSatisfy { Array($0.prefix(3)) == ["cache miss", "attempt #1", "cache stored"] }, "\(stories)")
        #expect(stories.map { $0.dropFirst(3) }.filter { !$0.isEmpty } == [["cache evicted 1"]], "\(stories)")
        #expect(cache.statistics.storage.evictions == 1)
    }

    @Test("without write-behind, a miss's story is whole when send returns: the store is made before the answer")
    func storedBeforeAnswer() async throws {
        let mock = MockTransport()
        mock.route("GET", "/w", .text("w", headers: ["Cache-Control": "max-age=60"]))
        var configuration = CacheConfiguration()
        configuration.writesBehind = false
        let cache = HTTPCache(configuration: configuration)
        #expect(cache.writeBehindQueue == nil, "without write-behind there is no queue to store after the answer")
        let story = Story()
        let pipeline = Pipeline(transport: mock, hooks: [cache], observer: story.observe)
        _ = try await pipeline.send(URLRequest(url: URL(string: "https://api.test/w")!))
        #expect(story.of("/w") == ["cache miss", "attempt #1", "cache stored"])
        #expect(cache.statistics.stores == 1)
    }
}
