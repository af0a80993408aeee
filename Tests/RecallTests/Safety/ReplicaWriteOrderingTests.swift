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
        var marksRead = 0
        /// A key another replica removes right after each store of it lands (before the storer
        /// goes on), as a `PUT` through it would.
        var removedRightAfterStore: String?
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

        /// Who hears of changes other replicas make (a memory tier over this replica).
        let observers = Locked<[@Sendable (String?) async -> Void]>([])

        init(table: SharedTable, countsRemovals: Bool) {
            self.table = table
            self.countsRemovals = countsRemovals
        }

        func subscribe(toChangesElsewhere observer: @escaping @Sendable (String?) async -> Void) {
            observers.withLock { $0.append(observer) }
        }

        func bytes(for key: String) async -> StoredBytes? {
            table.state.withLock { $0.bytes[key] }.map { StoredBytes($0) }
        }

        func write(_ data: Data, for key: String, expires: Date?) async {
            table.state.withLock { $0.bytes[key] = data }
            _ = await removedElsewhere(after: key)
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
            } ? await removedElsewhere(after: key) : false
        }

        /// Another replica's removal of `key`, right after a store of it, when the test asks for one.
        private func removedElsewhere(after key: String) async -> Bool {
            guard table.state.withLock({ $0.removedRightAfterStore == key }) else { return true }
            await SharedTable.Replica(table: table, countsRemovals: true).remove(key)
            for observer in observers.withLock({ $0 }) { await observer(key) }
            return true
        }

        func removalMark(for key: String) async -> RemovalMark? {
            let stripe = SharedTable.stripe(of: key)
            return table.state.withLock { state in
                state.marksRead += 1
                return countsRemovals ? RemovalMark(stripe: stripe, stripeRemovals: state.stripes[stripe], allRemovals: state.all) : nil
            }
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
        try await origin.slowGetAcrossAPut(through: replicaA, writeThrough: replicaB)
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
        // Named with the removal counts it read after the PUT: B claims a fetch of its own (the
        // first GET stays held at the origin until B has its answer).
        let race = try await origin.race(through: replicaA, writeThrough: replicaB)
        #expect(race.afterPut.bodyText == "v2" && race.getsBeforeRelease == 2)
        #expect(race.early.bodyText == "v1")
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
        #expect(table.state.withLock { $0.marksRead } == 0, "a storage that counts no removals is never asked for a mark")
    }

    @Test("concurrent misses of one key in a replica: only the request that goes to the origin reads the storage's mark")
    func oneMarkForCoalescedMisses() async throws {
        let table = SharedTable()
        let origin = MockTransport()
        let gate = Gate()
        origin.route("GET", "/doc") { request in
            await gate.wait()
            return RecallResponse(status: 200, headers: ["Cache-Control": "max-age=600"], body: Data("v".utf8), url: request.url)
        }
        let (a, _) = replicas(table, coalescing: true, coordinated: false)
        let pipeline = Pipeline(transport: origin, hooks: [a])
        let sends = (0..<8).map { _ in Task { try await pipeline.send(VersionedOrigin.request("GET")) } }
        try await waitUntil("one request at the origin and seven waiting") { origin.count(for: "/doc") == 1 && a.statistics.waiting == 7 }
        gate.open()
        for send in sends { #expect(try await send.value.bodyText == "v") }
        #expect(table.state.withLock { $0.marksRead } == 1)
    }

    @Test("a memory tier over a replica keeps nothing another replica removed right after this one's store landed below")
    func memoryTierAfterARemovalElsewhere() async throws {
        let table = SharedTable()
        let replica = table.replica(countingRemovals: true)
        let tiered = TieredStorage(memory: MemoryStorage(), lower: replica)
        let record = CacheRecord(
            key: "k",
            variants: [
                CacheEntry(status: 200, headers: ["Cache-Control": "max-age=600"], body: Data("v1".utf8), url: nil, requestTime: Date(), responseTime: Date())
            ])
        table.state.withLock { $0.removedRightAfterStore = "k" }
        for conditional in [false, true] {
            if conditional {
                let mark = try #require(await tiered.removalMark(for: "k"))
                #expect(await tiered.store(record, expires: nil, ifNotRemovedSince: mark))
            } else {
                await tiered.store(record, expires: nil)
            }
            #expect(table.state.withLock { $0.bytes["k"] } == nil)
            #expect(await tiered.record(for: "k") == nil, "the memory tier kept what the table no longer holds")
        }
    }
}
