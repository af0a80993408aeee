import Foundation
import Recall

/// A real HTTP origin on 127.0.0.1 for integration tests and benchmarks: runs a script (such
/// as Recall's `Tests/RecallTests/Support/origin_server.py`) that listens on an ephemeral port,
/// prints `PORT <n>` and exits when its standard input closes — so it also goes away when the
/// test process dies.
public final class LoopbackOrigin: Sendable {
    /// The port the server listens on.
    public let port: Int
    private let process: Locked<(Process, Pipe)>

    /// Starts `script` with `interpreter` and waits until it reports its port.
    /// - Throws: ``/Recall/TransportError`` with kind `.other` when the script exits or says something else.
    public init(script: URL, interpreter: String = "python3") throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [interpreter, script.path]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                throw TransportError(.other, message: "\(script.lastPathComponent) exited before listening (is \(interpreter) installed?)")
            }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            throw TransportError(.other, message: "\(script.lastPathComponent) said '\(text)' instead of 'PORT <n>'")
        }
        self.port = port
        self.process = Locked((process, input))
    }

    deinit {
        stop()
    }

    /// Stops the server (an origin that goes away: its port then refuses connections) and
    /// waits until it has exited. Stopping twice does nothing more.
    public func stop() {
        let process = process.withLock { running -> Process in
            try? running.1.fileHandleForWriting.close()
            if running.0.isRunning { running.0.terminate() }
            return running.0
        }
        process.waitUntilExit()
    }

    /// A URL on the server: `path` plus query items (percent-encoded, `+` included) in order.
    public func url(_ path: String, _ query: [(String, String)] = []) -> URL {
        var text = "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? path : "/" + path)"
        if !query.isEmpty {
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            text +=
                "?"
                + query.map { name, value in
                    "\(name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)"
                }.joined(separator: "&")
        }
        return URL(string: text)!
    }
}
