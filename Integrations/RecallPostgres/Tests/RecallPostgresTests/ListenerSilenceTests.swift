import Foundation
import PostgresNIO
import Recall
import RecallPostgres
import RecallPostgresTestSupport
import Testing

/// Issue #40: the listening connection dies — with a reset (its backend terminated) or silently
/// (a proxy stops moving bytes: no packet, no error) — and memory tiers must not go on serving
/// what they can no longer be told about.
@Suite("PostgresStorage's listener loses the fleet", .postgres, .timeLimit(.minutes(2)))
struct ListenerSilenceTests {
    @Test("a connection that stops carrying packets: memory tiers stop serving within the silence limit (heartbeat), and catch up when it returns")
    func silentConnection() async throws {
        let server = try PostgresFixture.current
        try await PostgresFixture.withDatabase { client, database in
            let b = try await PostgresFixture.open(client)  // another replica, connected directly
            let proxy = try TCPProxy(target: server.port)
            let viaProxy = PostgresFixture.configuration(server, database: database, port: proxy.port)
            try await PostgresFixture.withClient(viaProxy) { proxied in
                var configuration = PostgresFixture.patient
                configuration.timeout = .milliseconds(300)
                configuration.heartbeat = .milliseconds(200)
                configuration.silenceLimit = .seconds(1)
                let a = try await PostgresFixture.open(proxied, configuration)
                let memoryA = MemoryStorage()
                let tieredA = a.withMemoryTier(memoryA)
                try await PostgresStorageTests.eventually { a.fleetStatistics.listeningStarts >= 1 && !a.fleetStatistics.listenerSilent }
                let v1 = CacheRecord(key: "k", variants: [PostgresStorageTests.entry("v1")])
                let v2 = CacheRecord(key: "k", variants: [PostgresStorageTests.entry("v2")])
                await b.store(v1)
                // Read through and kept in memory (asked again if a late heartbeat on a loaded
                // machine had the tier keep nothing).
                try await PostgresStorageTests.eventually {
                    let read = await tieredA.record(for: "k")
                    let kept = await memoryA.record(for: "k")
                    return read.map(PostgresStorageTests.summary) == PostgresStorageTests.summary(v1) && kept != nil
                }
                let silences = a.fleetStatistics.silences

                try proxy.stall()
                let stalled = ContinuousClock.now
                await b.store(v2)  // A cannot hear of it
                try await PostgresStorageTests.eventually { a.fleetStatistics.listenerSilent }
                let noticed = ContinuousClock.now - stalled
                #expect(a.fleetStatistics.silences > silences)
                // The tier holds nothing and keeps nothing: v1 is not served again (the tier is
                // emptied just after the silence is declared).
                try await PostgresStorageTests.eventually { await memoryA.record(for: "k") == nil }
                #expect(await tieredA.record(for: "k").map(PostgresStorageTests.summary) != PostgresStorageTests.summary(v1))
                #expect(await memoryA.record(for: "k") == nil)

                try proxy.resume()
                try await PostgresStorageTests.eventually { !a.fleetStatistics.listenerSilent }
                try await PostgresStorageTests.eventually {
                    await tieredA.record(for: "k").map(PostgresStorageTests.summary) == PostgresStorageTests.summary(v2)
                }
                #expect(a.fleetStatistics.listeningStarts >= 2, "the silent connection was replaced")
                FleetFailureTests.report("silent listener: memory tiers stopped serving \(noticed) after the stall (heartbeat 200 ms, silence limit 1 s)")
                await a.shutdown()
            }
            await b.shutdown()
        }
    }

    @Test("the listener's backend is terminated (pg_terminate_backend): it listens again, its memory tier is emptied, and serves the fleet's newer record")
    func terminatedBackend() async throws {
        try await PostgresFixture.withDatabase { client, _ in
            let a = try await PostgresFixture.open(client)
            let b = try await PostgresFixture.open(client)
            let memoryA = MemoryStorage()
            let tieredA = a.withMemoryTier(memoryA)
            try await PostgresStorageTests.eventually { a.fleetStatistics.listeningStarts >= 1 }
            let v1 = CacheRecord(key: "k", variants: [PostgresStorageTests.entry("v1")])
            let v2 = CacheRecord(key: "k", variants: [PostgresStorageTests.entry("v2")])
            await b.store(v1)
            // Once A has heard of B's store (a notice that came later would drop what A read), A reads through and keeps it.
            try await PostgresStorageTests.eventually { a.fleetStatistics.invalidationsReceived >= 1 }
            #expect(await tieredA.record(for: "k").map(PostgresStorageTests.summary) == PostgresStorageTests.summary(v1))
            #expect(await memoryA.record(for: "k") != nil)
            let starts = a.fleetStatistics.listeningStarts
            _ = try await client.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE \(unescaped: PostgresStorageTests.listenerActivity)
                """
            ).all()
            await b.store(v2)  // while A may not be listening: its notification may be lost
            try await PostgresStorageTests.eventually { a.fleetStatistics.listeningStarts > starts }
            #expect(await tieredA.record(for: "k").map(PostgresStorageTests.summary) == PostgresStorageTests.summary(v2))
            await a.shutdown()
            await b.shutdown()
        }
    }
}

/// Issue #53, point 7: the look a replica makes after winning the claim of a fetch gets the
/// coordination limit, as the look after waiting does: with the documented 250 ms limit, a
/// database slower than that must not make it a miss (then a second fetch of what another
/// replica just stored).
@Suite("PostgresStorage: the look after a won claim", .postgres, .timeLimit(.minutes(2)))
struct ClaimedLookTests {
    @Test("a round trip of 300 ms (past the 250 ms limit): the look after a won claim still reads what another replica stored")
    func patientAfterClaim() async throws {
        let server = try PostgresFixture.current
        try await PostgresFixture.withDatabase { client, database in
            let b = try await PostgresFixture.open(client)  // the replica that stored it, connected directly
            let proxy = try TCPProxy(target: server.port)
            try await PostgresFixture.withClient(PostgresFixture.configuration(server, database: database, port: proxy.port)) { proxied in
                var configuration = PostgresFixture.patient
                configuration.timeout = .milliseconds(250)  // the documented default
                let a = try await PostgresFixture.open(proxied, configuration)
                // Connections opened while the database is fast (opening one through the slow proxy takes several round trips).
                #expect(await a.bytes(for: "warm") == nil)
                let stored = CacheRecord(key: "k", variants: [PostgresStorageTests.entry("v1")])
                await b.store(stored)
                try proxy.delay(milliseconds: 150)
                #expect(await a.claim("fetch of k", storingUnder: "k"))
                let read = await a.record(for: "k")
                #expect(read.map(PostgresStorageTests.summary) == PostgresStorageTests.summary(stored), "a miss: the look was cut at 250 ms")
                try proxy.delay(milliseconds: 0)
                await a.release("fetch of k")
                await a.shutdown()
            }
            await b.shutdown()
        }
    }
}
