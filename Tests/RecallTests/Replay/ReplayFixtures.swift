import Foundation

/// Builds HAR documents and temporary files for the replay tests.
enum ReplayFixtures {
    /// The sample capture shipped in docs/samples.
    static var sampleCapture: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/samples/dashboard.har").path
    }

    /// One HAR entry as JSON text.
    static func entry(_ seconds: Double, _ method: String = "GET", _ url: String, status: Int = 200,
                      response: [(String, String)] = [], request: [(String, String)] = [], size: Int = 100,
                      extra: String = "") -> String {
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
}
