import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A table several replicas share, as a database's is: bytes by key and removal counts per
/// stripe of keys and in all, changed atomically with the bytes (the stand-in for
/// PostgresStorage's conditional upsert, which RecallPostgres tests against a real PostgreSQL).
private final class SharedTable: Sendable {
    struct State {
        var bytes: [String: Data] = [:]
        var stripes = [Int64](repeating: 0, count: 16)
        var all: Int64 = 0
        var refused = 0
    }

    let state = Locked(State())

    static func stripe(of key: String) -> Int {
        Int(key.utf8.reduce(UInt8(0), &+) % 16)
    }

    /// A replica's storage over this table: its own object, as another process's would be (no
    /// in-process write order shared with the other replicas).
    func replica(countingRemovals: Bool) -> Replica {
        Replica(table: self, countsRemovals: countingRemovals)
    }

    final class Replica: CacheByteStore {
        let table: SharedTable
        let countsRemovals: Bool

        init(table: SharedTable, countsRemovals: Bool) {
            self.table = table
            self.countsRemovals = countsRemovals
        }

        func bytes(for key: String) async -> StoredBytes? {
            table.state.withLock { $0.bytes[key] }.map { StoredBytes($0) }
        }

        func write(_ data: Data, for key: String, expires: Date?) async {
            table.state.withLock { $0.bytes[key] = data }
        }

        func write(_ data: Data, for key: String, expires: Date?, ifNotRemovedSince mark: RemovalMark) async -> Bool {
            table.state.withLock { state in
                let stripe = SharedTable.stripe(of: key)
                let current = stripe == mark.stripe ? state.stripes[stripe] == mark.stripeRemovals : state.all == mark.allRemovals
                guard current else {
                    state.refused += 1
                    return false
                }
                state.bytes[key] = data
                return true
            }
        }

        func removalMark(for key: String) async -> RemovalMark? {
            guard countsRemovals else { return nil }
            let stripe = SharedTable.stripe(of: key)
            return table.state.withLock { RemovalMark(stripe: stripe, stripeRemovals: $0.stripes[stripe], allRemovals: $0.all) }
        }

        func removeCorrupt(_ key: String, ifStill data: Data) async {
            table.state.withLock { state in
                if state.bytes[key] == data { state.bytes[key] = nil }
            }
        }

        func remove(_ key: String) async {
            table.state.withLock { state in
                state.stripes[SharedTable.stripe(of: key)] += 1
                state.all += 1
                state.bytes[key] = nil
            }
        }

        func removeAll() async {
            table.state.withLock { state in
                for stripe in state.stripes.indices { state.stripes[stripe] += 1 }
                state.all += 1
                state.bytes = [:]
            }
        }

        var statistics: StorageStatistics { StorageStatistics() }
    }
}

/// Issue #53, point 4, across processes: replicas that share only a storage's table (and a fetch
/// coordinator) keep "no stale data after a completed write" through the storage's removal counts
/// (``RemovalMark``) — a store checks them atomically, and the fleet's name of a fetch carries them.
@Suite("Safety: no stale data after a completed write through another replica (a storage's removal counts)", .timeLimit(.minutes(1)))
struct ReplicaWriteOrderingTests {
    /// Two replicas' caches over `table`, with a shared coordinator when `coordinated`.
    private func replicas(
        _ table: SharedTable, coalescing: Bool, coordinated: Bool, countingRemovals: Bool = true
    ) -> (HTTPCache, HTTPCache) {
        var configuration = CacheConfiguration()
        configuration.coalescesRequests = coalescing
        let coordinator = coordinated ? InMemoryFetchCoordinator(leaseTime: .seconds(600)) : nil
        func cache() -> HTTPCache {
            HTTPCache(storage: table.replica(countingRemovals: countingRemovals), configuration: configuration, coordinator: coordinator)
        }
        return (cache(), cache())
    }

    @Test(
        "a GET through replica A that began before a PUT through replica B is not stored over what B stored after it",
        arguments: [(false, false), (true, false), (true, true)])
    func lateAnswerFromAnotherReplica(coalescing: Bool, coordinated: Bool) async throws {
        let table = SharedTable()
        let origin = VersionedOrigin()
        let (a, b) = replicas(table, coalescing: coalescing, coordinated: coordinated)
        let replicaA = Pipeline(transport: origin.mock, hooks: [a])
        let replicaB = Pipeline(transport: origin.mock, hooks: [b])
        let early = Task { try await replicaA.send(VersionedOrigin.request("GET")) }
        try await waitUntil("the first GET at the origin") { origin.getsSeen == 1 }
        #expect(try await replicaB.send(VersionedOrigin.request("PUT")).status == 204)
        #expect(try await replicaB.send(VersionedOrigin.request("GET")).bodyText == "v2")
        origin.firstGet.open()
        #expect(try await early.value.bodyText == "v1")  // it began before the PUT: its own answer
        for (name, replica) in [("B", replicaB), ("A", replicaA)] {
            let later = try await replica.send(VersionedOrigin.request("GET"))
            #expect(later.bodyText == "v2", "replica \(name) served the answer from before the PUT")
            #expect(later.source == .cache)
        }
        #expect(table.state.withLock { $0.refused } == 1)
    }

    @Test("with a fleet coordinator, a GET through B that starts after B's PUT never waits for A's fetch begun before it")
    func noJoiningAnotherReplicasOlderFetch() async throws {
        let table = SharedTable()
        let origin = VersionedOrigin()
        let (a, b) = replicas(table, coalescing: true, coordinated: true)
        let replicaA = Pipeline(transport: origin.mock, hooks: [a])
        let replicaB = Pipeline(transport: origin.mock, hooks: [b])
        let early = Task { try await replicaA.send(VersionedOrigin.request("GET")) }
        try await waitUntil("the first GET at the origin") { origin.getsSeen == 1 }
        #expect(try await replicaB.send(VersionedOrigin.request("PUT")).status == 204)
        // Named with the removal counts it read after the PUT: B claims a fetch of its own (the
        // first GET stays held at the origin until B has its answer).
        let after = try await replicaB.send(VersionedOrigin.request("GET"))
        #expect(after.bodyText == "v2")
        #expect(origin.getsSeen == 2)
        origin.firstGet.open()
        #expect(try await early.value.bodyText == "v1")
        #expect(try await replicaA.send(VersionedOrigin.request("GET")).bodyText == "v2")
    }

    @Test("a storage that counts no removals is given plain stores, as before (nothing refused, nothing asked)")
    func storageWithoutCounts() async throws {
        let table = SharedTable()
        let origin = VersionedOrigin()
        origin.firstGet.open()
        let (a, _) = replicas(table, coalescing: true, coordinated: false, countingRemovals: false)
        let pipeline = Pipeline(transport: origin.mock, hooks: [a])
        #expect(try await pipeline.send(VersionedOrigin.request("GET")).source == .network)
        #expect(try await pipeline.send(VersionedOrigin.request("GET")).source == .cache)
        #expect(table.state.withLock { $0.refused } == 0)
    }
}
