import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

/// A real PostgreSQL server for one test run: `initdb` into a temporary directory, `postgres`
/// as a child process on a free loopback port, stopped and removed by ``stop()``. Run as the `postgres` user when
/// the tests run as root (PostgreSQL refuses to run as root). Trust authentication for the user
/// `recall` on 127.0.0.1 only.
public final class TemporaryPostgres: Sendable {
    /// Why a server could not be started here (the tests then skip, saying so).
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    /// Where the cluster lives.
    public let directory: URL
    /// The loopback port the server listens on.
    public let port: Int
    /// The superuser (trusted on 127.0.0.1).
    public let user = "recall"
    /// The database that always exists.
    public let database = "postgres"

    private static let asRoot = getuid() == 0
    /// The running server process.
    private let server = Mutex<Process?>(nil)

    /// Creates the cluster and starts the server.
    public init() throws {
        let initdb = try Self.tool("initdb")
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if Self.asRoot {
            try Self.run("/bin/chown", ["postgres:postgres", directory.path])
        }
        port = try Self.freePort()
        try Self.run(
            initdb, ["-D", directory.appendingPathComponent("data").path, "-U", user, "-A", "trust", "--no-sync", "-E", "UTF8"],
            asPostgres: Self.asRoot)
        try start()
    }

    /// Starts (or restarts after ``stopServer()``) the server — a child process of the tests,
    /// not a daemon — and waits until it accepts connections.
    public func start() throws {
        let process = Process()
        let arguments = [
            "-D", directory.appendingPathComponent("data").path, "-p", "\(port)", "-k", directory.path,
            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"
        ]
        let postgres = try Self.tool("postgres")
        if Self.asRoot {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=postgres", "--regid=postgres", "--init-groups", postgres] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: postgres)
            process.arguments = arguments
        }
        let log = directory.appendingPathComponent("log")
        if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        server.withLock { $0 = process }
        let ready = try Self.tool("pg_isready")
        let end = Date().addingTimeInterval(30)
        while Date() < end {
            if (try? Self.run(ready, ["-q", "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", database])) != nil { return }
            guard process.isRunning else { break }
            usleep(50_000)
        }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        throw Unavailable(description: "postgres did not accept connections within 30 s: \(text.suffix(2_000))")
    }

    /// Stops the server (a fast shutdown), keeping its data: an outage.
    public func stopServer() throws {
        guard let process = server.withLock({ $0 }), process.isRunning else { return }
        kill(process.processIdentifier, SIGINT)
        let end = Date().addingTimeInterval(15)
        while process.isRunning, Date() < end { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        while process.isRunning { usleep(20_000) }
        server.withLock { $0 = nil }
    }

    /// Stops the server and removes its directory.
    public func stop() {
        try? stopServer()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Helpers

    /// The path of PostgreSQL's program `name` (`pgbench`, say).
    public static func tool(_ name: String) throws -> String {
        guard let path = which(name) else {
            throw Unavailable(description: "\(name) is not on the PATH nor in /usr/lib/postgresql/*/bin: install PostgreSQL to run these tests")
        }
        return path
    }

    private static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        // Debian keeps the programs in /usr/lib/postgresql/<version>/bin: the newest version first.
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }
        let candidates = path.split(separator: ":").map { "\($0)/\(name)" } + versions.map { "/usr/lib/postgresql/\($0)/bin/\(name)" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `tool` (as `postgres` with `asPostgres`, in `directory` when given) and returns its
    /// output, throwing with it when it fails.
    @discardableResult
    public static func run(_ tool: String, _ arguments: [String], asPostgres: Bool = false, in directory: URL? = nil) throws -> String {
        let process = Process()
        if asPostgres {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", "postgres", "--", tool] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
        }
        process.currentDirectoryURL = directory
        // A file, not a pipe: a program that leaves a process running (it inherits the
        // descriptors) would keep a pipe from ever reaching its end.
        let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("recall-pg-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outputFile) }
        let output = try FileHandle(forWritingTo: outputFile)
        process.standardOutput = output
        process.standardError = output
        try process.run()
        process.waitUntilExit()
        try? output.close()
        let text = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0 else {
            throw Unavailable(description: "\((tool as NSString).lastPathComponent) \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }

    /// A loopback TCP port nothing listens on now.
    public static func freePort() throws -> Int {
        #if canImport(Glibc)
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let socket = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard socket >= 0 else { throw Unavailable(description: "no socket for a free port") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0 else { throw Unavailable(description: "cannot bind a loopback port") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
