import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A `recall-postgres-fleet-worker` child process, spoken to a line at a time.
public final class FleetWorkerProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()

    /// Starts a worker on `database` of the server at `port`, in front of `origin`; without
    /// `coordinated`, it does not share misses with the fleet. `lease` and `timeout` set its
    /// storage's (defaults: a minute and 10 s, for tests of behaviour on a loaded machine).
    public init(
        port: Int, database: String, origin: URL, coordinated: Bool = true,
        lease: Duration? = nil, timeout: Duration? = nil
    ) throws {
        var environment = ProcessInfo.processInfo.environment
        if let lease { environment["RECALL_LEASE_MS"] = "\(lease.components.seconds * 1_000 + lease.components.attoseconds / 1_000_000_000_000_000)" }
        if let timeout { environment["RECALL_TIMEOUT_MS"] = "\(timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)" }
        process.environment = environment
        // Built next to the test bundle or the benchmark that runs it.
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("recall-postgres-fleet-worker")
        process.arguments = ["\(port)", database, origin.absoluteString] + (coordinated ? [] : ["no-coordinator"])
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// Sends one command line.
    public func send(_ line: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// The next line the worker prints, waiting 20 s at most.
    public func line() throws -> String {
        let descriptor = output.fileHandleForReading.fileDescriptor
        let end = Date().addingTimeInterval(20)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let left = Int32(max(0, end.timeIntervalSinceNow * 1_000))
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&poller, 1, left) > 0 else { throw WorkerError(description: "no answer within 20 s") }
            var chunk = [UInt8](repeating: 0, count: 4_096)
            let count = read(descriptor, &chunk, chunk.count)
            guard count > 0 else { throw WorkerError(description: "the worker exited") }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }

    /// Sends `line` and returns the answer.
    public func ask(_ line: String) throws -> String {
        try send(line)
        return try self.line()
    }

    /// Kills it at once (SIGKILL): a replica that crashes, holding whatever it held.
    public func crash() {
        _ = kill(process.processIdentifier, SIGKILL)
    }

    /// Closes its input (it exits), killing it after 5 s.
    public func stop() {
        try? input.fileHandleForWriting.close()
        let end = Date().addingTimeInterval(5)
        while process.isRunning, Date() < end { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// A worker that did not answer.
    public struct WorkerError: Error, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }
}
