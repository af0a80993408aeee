import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Two caches over one storage and one coordinator stand for two replicas of a service.
@Suite("HTTPCache with a FetchCoordinator: one fetch for the fleet", .timeLimit(.minutes(1)))
struct FetchCoordinatorTests {
    /// Replicas sharing `storage`, `coordinator` and one mock origin whose answers wait for `gate`.
    /// Claims hold for an hour unless released: however slowly a loaded machine runs the test,
    /// none lapses by itself and lets a second replica fetch (each claim here ends by its release).
    struct Fleet {
        let storage = MemoryStorage()
        let coordinator: InMemoryFetchCoordinator
        let origin = MockTransport()
        let replicas: [HTTPCache]
        let pipelines: [Pipeline]
        let arrived = Locked(0)

        init(replicas count: Int, leaseTime: Duration = .seconds(3_600)) {
            let (storage, origin) = (storage, origin)
            let coordinator = InMemoryFetchCoordinator(leaseTime: leaseTime)
            let replicas = (0..<count).map { _ in HTTPCache(storage: storage, coordinator: coordinator) }
            self.coordinator = coordinator
            self.replicas = replicas
            pipelines = replicas.map { Pipeline(transport: origin, hooks: [$0]) }
        }

        func get(_ replica: Int, _ path: String) async throws -> RecallResponse {
            try await pipelines[replica].send(URLRequest(url: URL(string: "https://origin.test" + path)!))
        }
    }

    @Test("concurrent misses in two replicas cost the origin one request; the follower reads the leader's answer")
    func oneFetchForTwoReplicas() async throws {
        let fleet = Fleet(replicas: 2)
        let gate = AsyncStream<Void>.makeStream()
        fleet.origin.route("GET", "/shared") { _ in
            fleet.arrived.withLock { $0 += 1 }
            var iterator = gate.stream.makeAsyncIterator()
            await iterator.next()
            return .text("once", headers: ["Cache-Control": "max-age=60"])
        }
        async let first = fleet.get(0, "/shared")
        while fleet.arrived.withLock({ $0 }) == 0 { await Task.yield() }
        async let second = fleet.get(1, "/shared")
        // The second replica is refused the claim before the leader answers.
        try await waitUntil("the second replica is refused the claim") { fleet.coordinator.counts.refused > 0 }
        gate.continuation.yield()
        gate.continuation.finish()
        let answers = try await [first, second]
        #expect(answers.map(\.bodyText) == ["once", "once"])
        #expect(answers[1].source == .cache)
        #expect(fleet.origin.count(for: "/shared") == 1)
        #expect(fleet.replicas[1].statistics.coalesced == 1)
        // The claim was released once the answer was stored (it does not lapse within the
        // suite's time limit).
        try await waitUntil("the claim is released") { fleet.coordinator.held == 0 }
    }

    @Test("a leader whose answer is not stored leaves the follower to fetch for itself")
    func followerFetchesWhenLeaderStoredNothing() async throws {
        let fleet = Fleet(replicas: 2)
        let gate = AsyncStream<Void>.makeStream()
        fleet.origin.route("GET", "/flaky") { _ in
            let call = fleet.arrived.withLock { count -> Int in
                count += 1; return count
            }
            if call == 1 {
                var iterator = gate.stream.makeAsyncIterator()
                await iterator.next()
                return RecallResponse(status: 503, headers: ["Cache-Control": "no-store"], body: Data())
            }
            return .text("second", headers: ["Cache-Control": "max-age=60"])
        }
        async let first = fleet.get(0, "/flaky")
        while fleet.arrived.withLock({ $0 }) == 0 { await Task.yield() }
        async let second = fleet.get(1, "/flaky")
        try await waitUntil("the second replica is refused the claim") { fleet.coordinator.counts.refused > 0 }
        gate.continuation.yield()
        gate.continuation.finish()
        let answers = try await [first, second]
        #expect(answers.map(\.status) == [503, 200])
        #expect(answers[1].bodyText == "second")
        #expect(fleet.origin.count(for: "/flaky") == 2)
    }

    @Test("a claim never released (a crashed replica) blocks the others only until it lapses")
    func lapsedClaim() async throws {
        let fleet = Fleet(replicas: 0)
        fleet.origin.route("GET", "/orphan") { _ in .text("fetched", headers: ["Cache-Control": "max-age=60"]) }
        // Another replica claimed the fetch and died. The lease runs on a manual clock: it lapses
        // when the test says, not when a busy test process happens to get there (on real time,
        // a 50 ms and later an 800 ms lease lapsed before the survivor asked).
        let clock = ManualClock()
        let crashed = InMemoryFetchCoordinator(leaseTime: .seconds(2), clock: clock)
        let replica = HTTPCache(storage: fleet.storage, coordinator: crashed)
        let pipeline = Pipeline(transport: StallingTransport(), hooks: [replica])
        let stalled = Task { try await pipeline.send(URLRequest(url: URL(string: "https://origin.test/orphan")!)) }
        try await waitUntil("the crashed replica holds the claim") { crashed.counts.granted > 0 }
        // A survivor on the same coordinator is refused and waits while the claim holds…
        let survivor = Pipeline(transport: fleet.origin, hooks: [HTTPCache(storage: fleet.storage, coordinator: crashed)])
        let asked = Task { try await survivor.send(URLRequest(url: URL(string: "https://origin.test/orphan")!)) }
        try await waitUntil("the survivor is refused the claim") { crashed.counts.refused > 0 }
        #expect(fleet.origin.count(for: "/orphan") == 0, "the survivor fetched while the claim held")
        // …and fetches itself once the lease time has passed.
        clock.advance(by: .seconds(2))
        let answer = try await asked.value
        #expect(answer.bodyText == "fetched")
        #expect(crashed.counts.refused == 1)
        #expect(fleet.origin.count(for: "/orphan") == 1)
        stalled.cancel()
        _ = try? await stalled.value
    }
}

/// A transport that never answers until cancelled (a replica stuck or dead mid-fetch).
private struct StallingTransport: Transport {
    func send(_ request: URLRequest) async throws -> RecallResponse {
        try await untilCancelled()
    }
}
