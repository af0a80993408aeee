import Foundation
import RecallPostgresTestSupport
import Logging
import PostgresNIO
import RecallPostgres
import Testing

/// One real PostgreSQL server for a suite (the trait starts it before the suite and stops it
/// after), and a fresh database on it for each test, so tests run in parallel without sharing
/// rows. Where PostgreSQL cannot be started the suite is skipped, saying why — unless
/// `RECALL_REQUIRE_POSTGRES=1` (set by `.ci/run`), which makes that a failure.
struct PostgresServerTrait: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let server: TemporaryPostgres
        do {
            server = try TemporaryPostgres()
        } catch {
            if ProcessInfo.processInfo.environment["RECALL_REQUIRE_POSTGRES"] == "1" { throw error }
            try Test.cancel("PostgreSQL is not available here: \(error)")
        }
        defer { server.stop() }
        try await PostgresFixture.$server.withValue(server) { try await function() }
    }
}

extension Trait where Self == PostgresServerTrait {
    /// Runs the suite against a real PostgreSQL server of its own.
    static var postgres: Self { PostgresServerTrait() }
}

enum PostgresFixture {
    @TaskLocal static var server: TemporaryPostgres?

    /// The running server of the suite.
    static var current: TemporaryPostgres {
        get throws { try #require(server, "the suite needs the .postgres trait") }
    }

    /// A client configuration for `database` on `server`. Its connect timeout is long enough for
    /// a loaded machine (PostgreSQL forks a backend per connection) and short enough that an
    /// outage test does not wait long for one attempt (a server that is down refuses at once).
    /// With `port`, it connects there instead (a proxy in front of the server).
    static func configuration(_ server: TemporaryPostgres, database: String, port: Int? = nil) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: "127.0.0.1", port: port ?? server.port, username: server.user,
            password: nil, database: database, tls: .disable)
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    /// Storage settings for tests that check what the storage does, not how fast: a statement
    /// may take 10 s (not 250 ms), maintenance 30 s, before it counts as failed, and the
    /// listener may go a minute without hearing its heartbeat — on a loaded
    /// machine a request-path statement over 250 ms made a lookup a miss or a claim "held by
    /// nobody". Tests of the timeouts themselves set theirs.
    static var patient: PostgresStorage.Configuration {
        var configuration = PostgresStorage.Configuration()
        configuration.timeout = .seconds(10)
        configuration.maintenanceTimeout = .seconds(30)
        // A heartbeat late on a loaded machine would empty memory tiers the tests look into.
        configuration.silenceLimit = .seconds(60)
        return configuration
    }

    /// Runs `body` with a running client on a new, empty database of the suite's server; the
    /// client stops afterwards.
    static func withDatabase<Value: Sendable>(_ body: (PostgresClient, String) async throws -> Value) async throws -> Value {
        let server = try current
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try await withClient(configuration(server, database: "postgres")) { admin in
            _ = try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        return try await withClient(configuration(server, database: name)) { try await body($0, name) }
    }

    /// A logger for the storage under test: warnings and worse only (a green run prints nothing).
    static let logger: Logger = {
        var logger = Logger(label: "recall.postgres.tests")
        logger.logLevel = .warning
        return logger
    }()

    /// Opens a storage on `client` with the quiet logger.
    static func open(
        _ client: PostgresClient, _ configuration: PostgresStorage.Configuration = PostgresFixture.patient,
        clock: any Clock<Duration> = ContinuousClock()
    ) async throws -> PostgresStorage {
        try await PostgresStorage.open(client: client, configuration: configuration, logger: logger, clock: clock)
    }

    /// Runs `body` with a running client for `configuration`.
    static func withClient<Value: Sendable>(
        _ configuration: PostgresClient.Configuration,
        _ body: (PostgresClient) async throws -> Value
    ) async throws -> Value {
        let client = PostgresClient(configuration: configuration)
        let run = Task { await client.run() }
        defer { run.cancel() }
        return try await body(client)
    }

    /// Runs `statement` in a transaction on `client` and keeps that transaction open — its locks
    /// held — while `body` runs (not for some time of real time, which a loaded machine could
    /// spend before `body` did anything); commits once `body` returned.
    static func whileHeld<Value>(_ client: PostgresClient, _ statement: PostgresQuery, _ body: () async throws -> Value) async throws -> Value {
        let (held, holding) = AsyncStream<Void>.makeStream()
        let (done, finishing) = AsyncStream<Void>.makeStream()
        let transaction = Task {
            // (Also when the statement fails: the wait below ends, and the error comes from the task.)
            defer { holding.finish() }
            try await client.withTransaction(logger: logger) { connection in
                _ = try await connection.query(statement, logger: logger).all()
                holding.yield()
                var gate = done.makeAsyncIterator()
                await gate.next()
            }
        }
        var iterator = held.makeAsyncIterator()
        guard await iterator.next() != nil else {
            // (The statement failed, or the test was cancelled while waiting: the transaction ends.)
            finishing.finish()
            try await transaction.value
            throw CancellationError()
        }
        defer { finishing.finish() }
        let value = try await body()
        finishing.finish()
        try await transaction.value
        return value
    }
}

extension AsyncSequence where Self: Sendable {
    /// Every element (test helper).
    func all() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }
}
