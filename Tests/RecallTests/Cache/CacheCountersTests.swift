import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
@testable import Recall
import Testing

@Suite("CacheCounters: the statistics and the events tell the same story")
struct CacheCountersTests {
    private static func context() -> RecallContext {
        RecallContext(originalRequest: URLRequest(url: URL(string: "https://example.com/a")!))
    }

    @Test("hits, misses and bypasses count and record one event each; hits and misses count from many tasks")
    func hitsMissesBypasses() async {
        let counters = CacheCounters()
        let context = Self.context()
        counters.hit(context)
        counters.miss(context)
        counters.bypass(context)
        #expect(context.events == [.cache(.hit), .cache(.miss), .cache(.bypassed)])
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<1_000 { counters.hit(Self.context()); counters.miss(Self.context()) } }
            }
        }
        let statistics = counters.statistics
        #expect(statistics.hits == 8_001)
        #expect(statistics.misses == 8_001)
        #expect(statistics.bypassed == 1)
    }

    @Test("what the strategy decided for an answer: a revalidation, a stale answer, a changed representation, an invalidation")
    func afterAnswers() {
        let counters = CacheCounters()
        let context = Self.context()
        let stored = CacheEntry(status: 200, headers: ["ETag": "\"v1\""], body: Data(), url: nil, requestTime: Date(), responseTime: Date())
        let validating = CacheStrategy.Mode.validating(stored: stored, alternates: [])
        let network = RecallResponse(status: 200)
        counters.count(
            .revalidated(stored, answer: network), response: network, mode: validating, method: .get, isRefresh: false,
            context: context)
        counters.count(
            .serveStale(network, .staleIfError), response: network, mode: validating, method: .get, isRefresh: false,
            context: context)
        counters.count(.store(stored), response: network, mode: validating, method: .get, isRefresh: false, context: context)
        counters.count(.remove, response: network, mode: .fetching(stored: stored), method: .get, isRefresh: false, context: context)
        counters.count(
            .revalidated(stored, answer: network), response: network, mode: validating, method: .get, isRefresh: true,
            context: context)  // a background refresh counts nothing
        counters.count(
            .store(stored), response: network, mode: validating, method: .head, isRefresh: false,
            context: context)  // a HEAD answer updates, it does not replace: no change counted
        var cached = network
        cached.source = .cache
        counters.count(
            .pass, response: cached, mode: validating, method: .get, isRefresh: false,
            context: context)  // an answer not from the network is no new representation
        counters.count(
            .refetch(URLRequest(url: URL(string: "https://example.com/a")!), removing: true), response: network,
            mode: validating, method: .get, isRefresh: false, context: context)
        let statistics = counters.statistics
        #expect(statistics.revalidated == 1)
        #expect(statistics.staleServed[.staleIfError] == 1)
        #expect(statistics.revalidatedChanged == 2)
        #expect(statistics.refetched == 1)
        #expect(
            context.events == [
                .cache(.revalidated), .cache(.stale(.staleIfError)), .cache(.changed), .cache(.invalidated),
                .cache(.changed), .cache(.invalidated)
            ])
    }

    @Test("what the strategy decided before the network, and after a failure: one count and one event each")
    func beforeAndFailures() throws {
        let counters = CacheCounters()
        let context = Self.context()
        let request = URLRequest(url: URL(string: "https://example.com/a")!)
        let answer = RecallResponse(status: 200)
        let stored = CacheEntry(status: 200, headers: ["ETag": "\"v1\""], body: Data(), url: nil, requestTime: Date(), responseTime: Date())
        let validating = CacheStrategy.Mode.validating(stored: stored, alternates: [])
        let range = try #require(ByteRange(rangeField: "bytes=0-3"))
        counters.count(.serve(answer, stale: nil), context: context)
        counters.count(.serve(answer, stale: .maxStale), context: context)
        counters.count(.serveAndRefresh(answer, refresh: request, mode: validating), context: context)
        counters.count(.send(request, .fetching(stored: nil)), context: context)
        counters.count(.send(request, .ranging(range, stored: nil)), context: context)
        counters.count(.send(request, validating), context: context)  // a revalidation counts when it is answered
        counters.count(.bypass, context: context)
        counters.count(.gatewayTimeout(answer), context: context)
        #expect(
            context.events == [
                .cache(.hit), .cache(.stale(.maxStale)), .cache(.stale(.staleWhileRevalidate)), .cache(.miss),
                .cache(.miss), .cache(.bypassed), .cache(.gatewayTimeout)
            ])
        let failures = Self.context()
        counters.count(.serveStale(answer, .staleIfError), mode: validating, isRefresh: false, context: failures)
        counters.count(.serveStale(answer, .staleIfError), mode: validating, isRefresh: true, context: failures)  // serves nobody
        counters.count(.gatewayTimeout(answer), mode: validating, isRefresh: false, context: failures)  // a revalidation that failed: a miss
        counters.count(.fail, mode: .fetching(stored: nil), isRefresh: false, context: failures)  // counted as a miss when sent
        counters.count(.fail, mode: validating, isRefresh: false, context: failures)
        #expect(failures.events == [.cache(.stale(.staleIfError)), .cache(.miss), .cache(.miss)])
        let statistics = counters.statistics
        #expect(statistics.hits == 1 && statistics.misses == 4 && statistics.bypassed == 1 && statistics.gatewayTimeouts == 1)
        #expect(statistics.staleServed == [.maxStale: 1, .staleWhileRevalidate: 1, .staleIfError: 1])
    }
}
