import Foundation
import PostgresNIO
import Recall
import RecallPostgres
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Its own suite, so its own server: it stops the server mid-run.
@Suite("PostgresStorage when the database goes away and comes back", .postgres, .timeLimit(.minutes(2)))
struct PostgresOutageTests {
    @Test(
        "database down: requests still reach the origin within the storage timeout, stores are dropped and counted; back up: the cache recovers without a restart"
    )
    func outageAndRecovery() async throws {
        let server = try PostgresFixture.current
        try await PostgresFixture.withDatabase { client, _ in
            var configuration = PostgresFixture.patient
            configuration.timeout = .milliseconds(200)
            configuration.pause = .milliseconds(300)
            let storage = try await PostgresFixture.open(client, configuration)
            let origin = MockTransport()
            origin.route("GET", "/a", .text("a", headers: ["Cache-Control": "max-age=60"]))
            origin.route("GET", "/b", .text("b", headers: ["Cache-Control": "max-age=60"]))
            origin.route("GET", "/c", .text("c1", headers: ["Cache-Control": "max-age=60"]), .text("c2", headers: ["Cache-Control": "max-age=60"]))
            origin.route("POST", "/c", .text("changed"))
            let pipeline = Pipeline(transport: origin, hooks: [HTTPCache(storage: storage)])
            func get(_ path: String) async throws -> RecallResponse {
                try await pipeline.send(URLRequest(url: URL(string: "https://origin.test" + path)!))
            }
            #expect(try await get("/a").source == .network)
            #expect(try await get("/c").bodyText == "c1")
            // Stored before the outage (a store cut by the 200 ms limit on a loaded machine is
            // dropped: ask until both landed).
            try await PostgresStorageTests.eventually { try await get("/a").source == .cache }
            try await PostgresStorageTests.eventually { try await get("/c").source == .cache }

            try server.stopServer()
            // An invalidation while the database is down is kept, and /c is a miss meanwhile.
            var post = URLRequest(url: URL(string: "https://origin.test/c")!)
            post.httpMethod = "POST"
            _ = try await pipeline.send(post)
            #expect(storage.fleetStatistics.pendingRemovals == 1)
            // Every request is answered, from the origin, each within a bound (lookup timeout +
            // store timeout, or the pause's immediate miss).
            var slowest = Duration.zero
            for _ in 0..<10 {
                let started = ContinuousClock.now
                let answer = try await get("/b")
                slowest = max(slowest, ContinuousClock.now - started)
                #expect(answer.status == 200)
                #expect(answer.bodyText == "b")
                #expect(answer.source == .network)
            }
            // The 200 ms timeouts plus what a loaded machine adds; a request that waited for the
            // database would still be waiting (it is down until just below).
            #expect(slowest < .seconds(10), "a request waited \(slowest) for a database that is down")
            #expect(origin.count(for: "/b") == 10)
            #expect(storage.fleetStatistics.writeFailures >= 1)
            #expect(storage.fleetStatistics.failures >= 1)

            try server.start()
            // Back: within a pause or two the storage answers again (the pool reconnects).
            // (Generous: it ends as soon as the cache answers.)
            let recovered = (try? await waitUntil("the cache answers from the database", seconds: 40) { try await get("/a").source == .cache }) != nil
            #expect(recovered, "the cache did not answer from the database after it came back")
            // And stores again: /b, stored now, is a hit (a store cut by the 200 ms limit on a
            // loaded machine is cancelled in the database too, so ask until one lands).
            try await PostgresStorageTests.eventually { try await get("/b").source == .cache }
            // The kept removal was replayed: the old /c is gone from the table, not served again.
            // (A replay goes on after each statement that succeeds, as a service's traffic makes
            // them: one whose delete was cut by the limit on a loaded machine waits for the next.
            // The wait makes them with lookups of a key nobody stores.)
            try? await waitUntil("the kept removal replayed", seconds: 30) {
                _ = await storage.bytes(for: "https://origin.test/traffic")
                return storage.fleetStatistics.pendingRemovals == 0
            }
            #expect(storage.fleetStatistics.pendingRemovals == 0)
            let c = try await get("/c")
            #expect(c.bodyText == "c2" && c.source == .network)
            await storage.shutdown()
        }
    }
}
