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
