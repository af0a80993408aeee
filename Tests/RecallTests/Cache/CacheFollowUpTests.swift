import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Recall
import RecallTesting
import Testing

/// The cache's follow-up takes one outcome: a background refresh told of a failure after its
/// answer (a body that broke off, a refetch that failed) ends its lead once, never the next one's.
@Suite("The cache's follow-up: one outcome per request", .timeLimit(.minutes(1)))
struct CacheFollowUpTests {
    struct Broken: Error {}

    @Test("a refresh's follow-up told of a failure after its answer does not end the key's next refresh lead")
    func oneOutcome() async throws {
        let clock = Locked(Date(timeIntervalSince1970: 1_700_000_000))
        let mock = MockTransport()
        mock.route("GET", "/a", .text("stored", headers: ["Cache-Control": "max-age=1, stale-while-revalidate=600"]))
        let cache = HTTPCache(storage: MemoryStorage(), now: { clock.withLock { $0 } })
        let request = URLRequest(url: URL(string: "https://origin.test/a")!)
        _ = try await Pipeline(transport: mock, hooks: [cache]).send(request)
        clock.withLock { $0 += 10 }  // stale, within stale-while-revalidate
        let context = RecallContext(originalRequest: request)
        guard case .respondThenRefresh(_, let refresh, let first?) = try await cache.onSchedule(request, context: context) else {
            Issue.record("a stale entry within stale-while-revalidate is not served with a refresh")
            return
        }
        // The refresh's answer (a 503 keeps the stored entry stale) ends its lead …
        _ = try await first.onSuccess(RecallResponse(status: 503), for: refresh, context: context)
        guard case .respondThenRefresh(_, _, let second?) = try await cache.onSchedule(request, context: context) else {
            Issue.record("the next stale hit does not refresh once the first refresh ended")
            return
        }
        // … and a failure told to the same follow-up afterwards ends nothing: the second refresh
        // still leads its key, so a third stale hit is answered without a refresh of its own.
        _ = try await first.onFailure(Broken(), for: refresh, context: context)
        guard case .respond = try await cache.onSchedule(request, context: context) else {
            Issue.record("two refreshes of one key at once: the first follow-up ended the second one's lead")
            return
        }
        _ = try await second.onFailure(Broken(), for: refresh, context: context)
        guard case .respondThenRefresh(_, _, let third?) = try await cache.onSchedule(request, context: context) else {
            Issue.record("a failed refresh does not let the next stale hit refresh")
            return
        }
        _ = try await third.onSuccess(RecallResponse(status: 503), for: refresh, context: context)
    }
}
