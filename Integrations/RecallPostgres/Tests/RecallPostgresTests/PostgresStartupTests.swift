import Foundation
import Logging
import PostgresNIO
import RecallPostgres
import RecallPostgresTestSupport
import Testing
#if canImport(Glibc)
    import Glibc
#endif

/// Issue #40: a process that starts while PostgreSQL is down learns it in bounded time.
/// (No server: these tests need none.)
@Suite("PostgresStorage.open while the database is down", .timeLimit(.minutes(1)))
struct PostgresStartupTests {
    /// A loopback socket that takes connections and never answers: a database host that is up
    /// while its server hangs, or a proxy that stops forwarding. Closed when `body` ends.
    static func withSilentListener<Value>(_ body: (Int) async throws -> Value) async throws -> Value {
        let port = try TemporaryPostgres.freePort()
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(socket >= 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0 && listen(socket, 64) == 0)  // (the kernel completes connections; nobody answers them)
        return try await body(port)
    }

    /// `open` on a client for `port`, with `openTimeout` of 2 s: the error and how long it took.
    static func open(port: Int) async throws -> (error: PostgresStorageError?, took: Duration) {
        var client = PostgresClient.Configuration(host: "127.0.0.1", port: port, username: "nobody", password: nil, database: "none", tls: .disable)
        client.options.connectTimeout = .seconds(1)
        var configuration = PostgresStorage.Configuration()
        configuration.openTimeout = .seconds(2)
        let started = ContinuousClock.now
        return try await PostgresFixture.withClient(client) { client in
            do {
                _ = try await PostgresStorage.open(client: client, configuration: configuration, logger: PostgresFixture.logger)
                return (nil, ContinuousClock.now - started)
            } catch let error as PostgresStorageError {
                return (error, ContinuousClock.now - started)
            }
        }
    }

    @Test("nothing listens on the port (connection refused): open throws unreachable, bounded by openTimeout")
    func refused() async throws {
        let (error, took) = try await Self.open(port: try TemporaryPostgres.freePort())
        #expect(error?.code == .unreachable)
        #expect(error?.limit == .seconds(2))
        #expect(error?.description.contains("did not answer within") == true)
        // Bounded: it was 67 s before; the bound is the 2 s limit plus what a loaded machine adds.
        #expect(took < .seconds(30), "open took \(took)")
    }

    @Test("the host takes the connection and never answers: open throws unreachable, bounded by openTimeout")
    func silent() async throws {
        let (error, took) = try await Self.withSilentListener { port in try await Self.open(port: port) }
        #expect(error?.code == .unreachable)
        #expect(took < .seconds(30), "open took \(took)")
    }
}
