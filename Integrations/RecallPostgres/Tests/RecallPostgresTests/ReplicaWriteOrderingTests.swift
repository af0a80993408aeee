import Foundation
import PostgresNIO
import Recall
import RecallPostgres
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #53, point 4, over a real PostgreSQL: two replicas — each its own PostgresStorage, as two
/// processes would have — keep "no stale data after a completed write" between them through the
/// table's removal counts (schema version 2), with and without the fleet's fetch coordinator.
@Suite("PostgresStorage: no stale data after a completed write through another replica", .postgres, .timeLimit(.minutes(2)))
struct PostgresReplicaWriteOrderingTests {
    enum Tier: String, CaseIterable, Sendable {
        /// Each replica's cache over its PostgresStorage alone, or with a memory tier in front.
        case table, memoryTier
    }

    /// The caches of two replicas over `client`'s database.
    private func replicas(_ client: PostgresClient, tier: Tier, coordinated: Bool) async throws
        -> (a: HTTPCache, b: HTTPCache, storages: [PostgresStorage])
    {
        let first = try await PostgresFixture.open(client)
        let second = try await PostgresFixture.open(client)
        func cache(_ storage: PostgresStorage) -> HTTPCache {
            HTTPCache(storage: tier == .table ? storage : storage.withMemoryTier(), coordinator: coordinated ? storage : nil)
        }
        return (cache(first), cache(second), [first, second])
    }

    @Test(
        "a GET through replica A that began before a PUT through replica B is not stored over what B stored after it",
        arguments: Tier.allCases, [false, true])
    func lateAnswerFromAnotherReplica(tier: Tier, coordinated: Bool) async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let origin = VersionedOrigin()
            let (a, b, storages) = try await replicas(client, tier: tier, coordinated: coordinated)
            let replicaA = Pipeline(transport: origin.mock, hooks: [a])
            let replicaB = Pipeline(transport: origin.mock, hooks: [b])
            let race = try await origin.race(through: replicaA, writeThrough: replicaB)
            #expect(race.putStatus == 204 && race.afterPut.bodyText == "v2")
            #expect(race.early.bodyText == "v1")  // it began before the PUT: its own answer
            for (name, replica) in [("B", replicaB), ("A", replicaA)] {
                let later = try await replica.send(VersionedOrigin.request("GET"))
                #expect(later.bodyText == "v2", "replica \(name) served the answer from before the PUT")
                #expect(later.source == .cache)
            }
            #expect(storages[0].fleetStatistics.storesRefusedAfterRemoval == 1)
            for storage in storages { await storage.shutdown() }
        }
    }

    @Test("with the fleet's coordinator, B's GET that starts after B's PUT claims a fetch of its own, never waiting for A's older one")
    func noJoiningAnotherReplicasOlderFetch() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let origin = VersionedOrigin()
            let (a, b, storages) = try await replicas(client, tier: .memoryTier, coordinated: true)
            let replicaA = Pipeline(transport: origin.mock, hooks: [a])
            let replicaB = Pipeline(transport: origin.mock, hooks: [b])
            // The first GET stays held at the origin until B has its answer: had B waited for A's
            // claim, this would wait for the suite's time limit.
            let race = try await origin.race(through: replicaA, writeThrough: replicaB)
            #expect(race.afterPut.bodyText == "v2" && race.getsBeforeRelease == 2)
            #expect(race.early.bodyText == "v1")
            #expect(try await replicaA.send(VersionedOrigin.request("GET")).bodyText == "v2")
            for storage in storages { await storage.shutdown() }
        }
    }

    @Test("the counts are checked in the database: a store against counts read before another storage's removal — of the key, or of all keys — writes nothing")
    func conditionalStore() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let a = try await PostgresFixture.open(client)
            let b = try await PostgresFixture.open(client)
            let record = CacheRecord(key: "k", variants: [PostgresStorageTests.entry("v1")])
            let before = try #require(await a.removalMark(for: "k"))
            #expect(before.stripe >= 0 && before.stripe < 4096)
            #expect(await a.removalMark(for: "k") == before)  // nothing removed meanwhile
            await b.remove("k")
            #expect(await a.store(record, expires: nil, ifNotRemovedSince: before) == false)
            #expect(await a.record(for: "k") == nil)
            let after = try #require(await a.removalMark(for: "k"))
            #expect(after.stripeRemovals == before.stripeRemovals + 1 && after.allRemovals == before.allRemovals + 1)
            #expect(await a.store(record, expires: nil, ifNotRemovedSince: after))
            #expect(await a.record(for: "k") != nil)
            // A key of another stripe is checked against all removals.
            await b.removeAll()
            #expect(await a.store(CacheRecord(key: "other", variants: [PostgresStorageTests.entry("v1")]), expires: nil, ifNotRemovedSince: after) == false)
            #expect(a.fleetStatistics.storesRefusedAfterRemoval == 2)
            await a.shutdown()
            await b.shutdown()
        }
    }

    @Test("a version-1 database is migrated to version 2: its records stay, and the removal counts start at zero")
    func migratesVersionOne() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            // A version-1 database: version 2's, with what version 2 added taken away.
            let first = try await PostgresFixture.open(client)
            let record = CacheRecord(key: "k", variants: [PostgresStorageTests.entry("v1")])
            await first.store(record)
            await first.shutdown()
            for statement in [
                "DROP TABLE recall_removals", "DROP FUNCTION recall_remove(text, text)", "DROP FUNCTION recall_stripe(bytea)",
                "UPDATE recall_meta SET value = convert_to('1', 'UTF8') WHERE name = 'schema_version'"
            ] {
                _ = try await client.query(PostgresQuery(unsafeSQL: statement)).all()
            }
            let migrated = try await PostgresFixture.open(client)
            let version = try await client.query("SELECT convert_from(value, 'UTF8') FROM recall_meta WHERE name = 'schema_version'")
                .all().map { try $0.decode(String.self) }
            #expect(version == ["2"])
            let counts = try await client.query("SELECT count(*)::bigint, coalesce(sum(removals), 0)::bigint FROM recall_removals").all()
                .map { try $0.decode((Int64, Int64).self) }
            #expect(counts.first?.0 == 4097)
            #expect(counts.first?.1 == 0)
            #expect(await migrated.record(for: "k").map(PostgresStorageTests.summary) == PostgresStorageTests.summary(record))
            await migrated.remove("k")
            #expect(await migrated.record(for: "k") == nil)
            await migrated.shutdown()
        }
    }
}
