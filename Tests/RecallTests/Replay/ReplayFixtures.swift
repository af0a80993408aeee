import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Builds HAR documents and temporary files for the replay tests.
enum ReplayFixtures {
    /// The sample capture shipped in docs/samples.
    static var sampleCapture: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/samples/dashboard.har").path
    }

    /// One HAR entry as JSON text.
    static func entry(
        _ seconds: Double, _ method: String = "GET", _ url: String, status: Int = 200,
        response: [(String, String)] = [], request: [(String, String)] = [], size: Int = 100,
        extra: String = ""
    ) -> String {
        let started = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: 1_800_000_000 + seconds))
        func fields(_ pairs: [(String, String)]) -> String {
            "[" + pairs.map { #"{"name": "\#($0.0)", "value": "\#($0.1)"}"# }.joined(separator: ", ") + "]"
        }
        return #"""
            {"startedDateTime": "\#(started)", "time": 1, \#(extra)
             "request": {"method": "\#(method)", "url": "\#(url)", "httpVersion": "HTTP/1.1", "headers": \#(fields(request))},
             "response": {"status": \#(status), "headers": \#(fields(response)), "content": {"size": \#(size), "mimeType": "text/plain"}, "bodySize": \#(size)}}
            """#
    }

    /// A whole HAR document around `entries`.
    static func har(_ entries: [String]) -> String {
        #"{"log": {"version": "1.2", "creator": {"name": "tests", "version": "1"}, "entries": [\#n"#
            + entries.joined(separator: ",\n") + "\n]}}\n"
    }

    /// Writes `text` to a new temporary file and returns its path.
    static func file(_ text: String, suffix: String = ".har") -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("recall-replay-\(UUID().uuidString.prefix(8))\(suffix)").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    /// A log of `count` Combined Log Format lines over `targets` targets, each line 80 bytes or so.
    static func log(lines count: Int, targets: Int = 97) -> String {
        (0..<count).map { index in
            #"10.0.0.1 - - [23/Nov/2026:10:00:\#(String(format: "%02d", index % 60)) +0000] "GET /item/\#(index % targets) HTTP/1.1" 200 1000"#
        }.joined(separator: "\n") + "\n"
    }

    /// A new FIFO (named pipe) at a temporary path, without a suffix, fed `data` by a thread once
    /// a reader opens it (`whenOpened` runs then, before the first byte is written). The writer
    /// stops when the reader goes away; without a reader its thread stays blocked in `open` until
    /// the process ends, holding nothing a test waits for, so a failing test never hangs on it.
    static func fifo(_ data: Data, whenOpened: @escaping @Sendable () -> Void = {}) -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("recall-fifo-\(UUID().uuidString.prefix(8))").path
        precondition(mkfifo(path, 0o600) == 0, "mkfifo failed")
        signal(SIGPIPE, SIG_IGN)
        Thread.detachNewThread {
            var descriptor: Int32
            repeat { descriptor = open(path, O_WRONLY) } while descriptor < 0 && errno == EINTR  // returns once a reader opens it
            guard descriptor >= 0 else { return }
            defer { close(descriptor) }
            whenOpened()  // the reader has opened the FIFO
            var offset = 0
            while offset < data.count {
                let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
                if written > 0 { offset += written } else if errno != EINTR { return }
            }
        }
        return path
    }
}
