import Foundation
import RecallReplay
import Testing

@Suite("Replay: the HAR reader")
struct HARReaderTests {
    @Test("reads entries with their times, methods, fields, statuses, sizes and the client's cache")
    func readsEntries() throws {
        let path = ReplayFixtures.file(
            ReplayFixtures.har([
                ReplayFixtures.entry(
                    1, "GET", "https://a.test/x?q=1", response: [("Cache-Control", "max-age=60"), (":status", "200")],
                    request: [(":path", "/x"), ("Accept", "text/html")], size: 42),
                ReplayFixtures.entry(0, "post", "https://a.test/y", status: 201, size: 0, extra: #""_fromCache": "memory","#),
                ReplayFixtures.entry(2, "GET", "https://a.test/z", status: 304, extra: #""cache": {"beforeRequest": {"hitCount": 1}},"#)
            ]))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let entries = try HARReader.read(path: path)
        #expect(entries.map(\.url) == ["https://a.test/y", "https://a.test/x?q=1", "https://a.test/z"])  // sorted by start time
        #expect(entries[0].method == "POST")
        #expect(entries[0].clientCache == .memory)
        #expect(entries[1].clientCache == .network)
        #expect(entries[2].clientCache == .disk)
        #expect(entries[1].status == 200)
        #expect(entries[1].bodySize == 42)
        #expect(entries[1].requestHeaders.map(\.name) == ["Accept"])  // pseudo-fields dropped
        #expect(entries[1].responseHeaders.map(\.name) == ["Cache-Control"])
        #expect(entries[1].started == Date(timeIntervalSince1970: 1_800_000_001))
        #expect(entries[1].line == 2)  // where its object starts
    }

    @Test("reads the same entries whatever the chunk size (chunk boundaries inside strings, escapes and numbers)")
    func chunkBoundaries() throws {
        var whole = try HARReader(path: ReplayFixtures.sampleCapture)
        var wholeEntries: [HAREntry] = []
        _ = try whole.forEach { wholeEntries.append($0) }
        for chunk in [3, 7, 4093] {
            var reader = try HARReader(path: ReplayFixtures.sampleCapture, chunkSize: chunk)
            var entries: [HAREntry] = []
            #expect(try reader.forEach { entries.append($0) } == wholeEntries.count)
            #expect(entries == wholeEntries)
        }
        #expect(wholeEntries.count == 228)
    }

    @Test("decodes string escapes, surrogate pairs and a byte-order mark")
    func escapes() throws {
        let path = ReplayFixtures.file(
            "\u{FEFF}"
                + ReplayFixtures.har([
                    ReplayFixtures.entry(0, "GET", #"https://a.test/\u00e9\/\ud83d\ude00?a=\"b\""#)
                ]))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let entries = try HARReader.read(path: path)
        #expect(entries.first?.url == "https://a.test/é/😀?a=\"b\"")
    }

    @Test("keeps only the length of a long string (bodies), so memory holds no body")
    func longStringsDropped() throws {
        let body = String(repeating: "QUJD", count: 600_000)  // 2.4 MB of base64
        let path = ReplayFixtures.file(
            ReplayFixtures.har([
                ReplayFixtures.entry(0, "GET", "https://a.test/big", size: 1_800_000).replacingOccurrences(
                    of: #""mimeType": "text/plain""#, with: #""mimeType": "text/plain", "text": "\#(body)", "encoding": "base64""#)
            ]))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let entries = try HARReader.read(path: path)
        #expect(entries.first?.bodySize == 1_800_000)
    }

    @Test("a truncated capture is an error naming the line")
    func truncated() throws {
        let text = try String(contentsOfFile: ReplayFixtures.sampleCapture, encoding: .utf8)
        let cut = String(text.prefix(text.count / 2))
        let path = ReplayFixtures.file(cut)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let lines = cut.split(separator: "\n", omittingEmptySubsequences: false).count
        let error = try #require(throws: ReplayInputError.self) { try HARReader.read(path: path) }
        #expect(error.line == lines)
        #expect(error.reason.contains("truncated"))
    }

    @Test("JSON that is not a HAR, or not JSON, is an error that says so")
    func notHAR() throws {
        let cases: [(String, String, Int)] = [
            (#"{"log": {"version": "1.2"}}"#, "no log.entries", 0),
            ("GET / HTTP/1.1\n", "expected a JSON value", 1),
            ("{\"log\": {\"entries\": [{\"a\": 1,}]}}", "expected a string, found '}'", 1),
            ("{\"log\":\n{\"entries\": [{\"startedDateTime\": \"yesterday\"}]}}", "entry 1: startedDateTime 'yesterday' is not an ISO 8601 date", 2),
            (#"{"log": {"entries": []}} trailing"#, "after the end of the JSON document", 1),
            (String(repeating: "[", count: 100_000), "nested deeper", 1),
            ("", "truncated", 1),
            ("{\"log\": {\"entries\": [{\"startedDateTime\": \"2026\n-11\"}]}}", "control character (10) inside a string", 1)
        ]
        for (text, message, line) in cases {
            let path = ReplayFixtures.file(text)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let error = try #require(throws: ReplayInputError.self) { try HARReader.read(path: path) }
            #expect(error.reason.contains(message), "\(text.prefix(40)): \(error)")
            #expect(error.line == line, "\(text.prefix(40)): \(error)")
        }
    }

    @Test("an entry without a URL or a start time names the entry")
    func missingFields() throws {
        let path = ReplayFixtures.file(#"{"log": {"entries": [{"startedDateTime": "2026-11-23T10:00:00Z", "request": {"method": "GET"}}]}}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = try #require(throws: ReplayInputError.self) { try HARReader.read(path: path) }
        #expect(error.description == "line 1: entry 1: no request.url")
    }

    @Test("a missing file or a directory is a clear error")
    func missingFile() throws {
        let missing = try #require(throws: ReplayInputError.self) { try HARReader.read(path: "/nonexistent/capture.har") }
        #expect(missing.description == "/nonexistent/capture.har: no such file")
        let directory = try #require(throws: ReplayInputError.self) { try HARReader.read(path: FileManager.default.temporaryDirectory.path) }
        #expect(directory.reason.contains("is a directory"))
    }
}
