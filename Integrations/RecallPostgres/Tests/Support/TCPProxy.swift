import Foundation

/// A loopback TCP proxy in front of a port (Tests/Scripts/tcp_proxy.py, run with python3) that
/// can stop moving bytes without closing anything: a connection that dies silently.
public final class TCPProxy {
    /// The loopback port to connect to instead of the target's.
    public let port: Int
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    /// Starts a proxy to `127.0.0.1:target`.
    public init(target: Int) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Scripts/tcp_proxy.py")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, "\(target)"]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        guard let port = Int(try Self.line(output)) else { throw Failure(description: "the proxy printed no port") }
        self.port = port
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    /// Stops moving bytes on every connection, both ways (connections stay open).
    public func stall() throws { try command("stall") }

    /// Moves bytes again (what was held is delivered).
    public func resume() throws { try command("resume") }

    /// Holds every chunk `milliseconds` before passing it on, each way (0: none): a slow
    /// database, or a slow network to it.
    public func delay(milliseconds: Int) throws { try command("delay \(milliseconds)") }

    private func command(_ text: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((text + "\n").utf8))
        let answer = try Self.line(output)
        guard answer == "ok" else { throw Failure(description: "the proxy answered \(answer)") }
    }

    /// The next line of `pipe` (the proxy answers at once).
    private static func line(_ pipe: Pipe) throws -> String {
        var bytes = Data()
        while true {
            let byte = pipe.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { throw Failure(description: "the proxy exited") }
            if first == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(first)
        }
    }

    /// The proxy failed to start or to answer.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }
}
