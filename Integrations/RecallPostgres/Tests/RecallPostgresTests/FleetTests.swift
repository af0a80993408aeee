import Foundation
import Recall
import RecallPostgresTestSupport
import RecallTesting
import Testing
#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #14, point 3: four OS processes (`recall-postgres-fleet-worker`) on one database, in
/// front of one loopback origin that counts what reaches it.
@Suite("A fleet of four processes on one PostgreSQL", .postgres, .timeLimit(.minutes(3)))
struct FleetTests {
    @Test("shared hits, one origin request for a burst of misses from four processes, an invalidation seen by all")
    func fleet() async throws {
        let server = try PostgresFixture.current
        let origin = try LoopbackOrigin(script: Self.originScript)
        try await PostgresFixture.withDatabase { _, database in
            // The four start together and race to create the tables (the migration lock).
            let workers = try Self.startWorkers(4, port: server.port, database: database, origin: origin)
            defer { workers.forEach { $0.stop() } }

            // A burst of identical misses, one from each process, while the origin takes 5 s: a
            // worker a loaded machine runs late still asks while the first one's fetch is under
            // way (with 300 ms, one could arrive after the answer was stored, and find it there
            // without waiting). The workers' claims hold for a minute, so none lapses meanwhile.
            let burst = "/burst?cc=max-age%3D60&delay_ms=5000"
            for worker in workers { try worker.send("get " + burst) }
            let answers = try workers.map { try $0.line() }
            #expect(try await Self.hits(origin, "/burst") == 1, "\(answers)")
            #expect(answers.filter { $0 == "200 network 1" }.count == 1, "\(answers)")
            #expect(answers.filter { $0 == "200 cache 1" }.count == 3, "\(answers)")

            // Stored by one, a hit in the others.
            let shared = "/shared?cc=max-age%3D60"
            try #expect(workers[0].ask("get " + shared) == "200 network 1")
            for worker in workers.dropFirst() { try #expect(worker.ask("get " + shared) == "200 cache 1") }

            // An unsafe method in one invalidates it for all, memory tiers included: each of the
            // others hears one more notification.
            let heard = try workers.map { try Self.invalidations($0.ask("stats")) }
            try #expect(workers[0].ask("post " + shared) == "200 network 2")
            for (worker, before) in zip(workers, heard).dropFirst() {
                // (Generous: it ends as soon as the notification is heard.)
                try? await waitUntil("the removal reached this replica", seconds: 30) { try Self.invalidations(worker.ask("stats")) > before }
                #expect(try Self.invalidations(worker.ask("stats")) > before, "the removal reached this replica")
            }
            try #expect(workers[1].ask("get " + shared) == "200 network 3")
            for worker in workers.dropFirst(2) { try #expect(worker.ask("get " + shared) == "200 cache 3") }
            try #expect(workers[0].ask("get " + shared) == "200 cache 3")
            #expect(try await Self.hits(origin, "/shared") == 3)

            let coalesced = try workers.map { try $0.ask("stats") }
            #expect(coalesced.filter { $0.hasPrefix("coalesced=1 ") }.count == 3, "\(coalesced)")
        }
    }

    /// Starts `count` workers on `database` (the server or a proxy at `port`) in front of
    /// `origin`, all at once (they race to create the tables), and waits until each is ready.
    /// The caller stops them.
    static func startWorkers(
        _ count: Int, port: Int, database: String, origin: LoopbackOrigin,
        lease: Duration? = nil, timeout: Duration? = nil
    ) throws -> [FleetWorkerProcess] {
        let workers = try (0..<count).map { _ in
            try FleetWorkerProcess(port: port, database: database, origin: origin.url("/"), lease: lease, timeout: timeout)
        }
        for worker in workers {
            let line = try worker.line()
            guard line == "ready" else {
                workers.forEach { $0.stop() }
                throw FleetWorkerProcess.WorkerError(description: "a worker did not start: \(line)")
            }
        }
        return workers
    }

    static var originScript: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/RecallTests/Support/origin_server.py")
    }

    /// The `invalidations=N` of a worker's `stats` line.
    static func invalidations(_ stats: String) -> Int {
        stats.split(separator: " ").first { $0.hasPrefix("invalidations=") }.flatMap { Int($0.dropFirst("invalidations=".count)) } ?? -1
    }

    /// Requests that reached the origin for `prefix`0 … `prefix`(`count` − 1), together.
    static func hits(_ origin: LoopbackOrigin, prefix: String, count: Int) async throws -> Int {
        var total = 0
        for index in 0..<count { total += try await hits(origin, "\(prefix)\(index)") }
        return total
    }

    /// Requests that reached the origin for `path`.
    static func hits(_ origin: LoopbackOrigin, _ path: String) async throws -> Int {
        struct Hits: Decodable { let hits: Int }
        let (data, _) = try await URLSession.shared.data(from: origin.url("/__hits", [("path", path)]))
        return try JSONDecoder().decode(Hits.self, from: data).hits
    }
}
