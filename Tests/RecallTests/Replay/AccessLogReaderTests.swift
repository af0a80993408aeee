import Foundation
import RecallReplay
import Testing

@Suite("Replay: the access log reader")
struct AccessLogReaderTests {
    @Test("reads Common and Combined Log Format lines")
    func formats() throws {
        let common = try AccessLogReader.parse(#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1 HTTP/1.0" 200 2326"#, line: 1)
        #expect(common == AccessLogEntry(method: "GET", target: "/apache_pb.gif?x=1", status: 200, bytes: 2326, line: 1))
        let combined = try AccessLogReader.parse(
            #"203.0.113.9 - - [23/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" 304 - "https://ref.test/" "Mozilla/5.0 (X11; \"quoted\")""#, line: 2)
        #expect(combined == AccessLogEntry(method: "GET", target: "/a", status: 304, bytes: nil, line: 2))
        let probe = try AccessLogReader.parse(#"198.51.100.1 - - [23/Nov/2026:10:00:00 +0000] "-" 408 0"#, line: 3)
        #expect(probe.method == "" && probe.status == 408)
        let escaped = try AccessLogReader.parse(#"::1 - - [23/Nov/2026:10:00:00 +0000] "GET /say\"hi\" HTTP/1.1" 200 5"#, line: 4)
        #expect(escaped.target == #"/say\"hi\""#)
    }

    @Test("a line in another format is an error naming the line and the expected format")
    func otherFormats() throws {
        let cases = [
            #"{"time": "2026-11-23T10:00:00Z", "path": "/a"}"#,  // JSON logs
            #"2026-11-23 10:00:00 GET /a 200"#,  // IIS-like
            #"127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" OK 12"#,  // status not a number
            #"127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 twelve"#,  // size not a number
            #"127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1 200 12"#  // unterminated quote
        ]
        for (index, bad) in cases.enumerated() {
            let good = #"127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /ok HTTP/1.1" 200 12"#
            let path = ReplayFixtures.file([good, "", good, bad, good].joined(separator: "\n"), suffix: ".log")
            defer { try? FileManager.default.removeItem(atPath: path) }
            var reader = try AccessLogReader(path: path)
            var seen = 0
            let error = try #require(throws: ReplayInputError.self, "case \(index)") { _ = try reader.forEach { _ in seen += 1 } }
            #expect(error.line == 4, "case \(index): \(error)")
            #expect(error.reason.hasPrefix("not in Common or Combined Log Format"), "case \(index): \(error)")
            #expect(seen == 2)
        }
    }

    @Test("an absurd size is refused with its line, not allocated or summed into an overflow")
    func absurdSize() throws {
        let error = try #require(throws: ReplayInputError.self) {
            try AccessLogReader.parse(#"1.2.3.4 - - [t] "GET /a HTTP/1.1" 200 9223372036854775807"#, line: 9)
        }
        #expect(error.line == 9)
        #expect(error.reason.contains("more than 4 GiB"))
        let big = try AccessLogReader.parse(#"1.2.3.4 - - [t] "GET /a HTTP/1.1" 200 4294967296"#, line: 1)
        #expect(big.bytes == 4 << 30)
    }

    @Test("a binary file is refused at its first overlong line, not read into memory")
    func binary() throws {
        let path = ReplayFixtures.file(String(repeating: "\u{1}", count: AccessLogReader.lineLimit + 10), suffix: ".log")
        defer { try? FileManager.default.removeItem(atPath: path) }
        var reader = try AccessLogReader(path: path)
        let error = try #require(throws: ReplayInputError.self) { _ = try reader.forEach { _ in } }
        #expect(error.line == 1)
        #expect(error.reason.contains("longer than"))
    }

    @Test("the GET 200/203/304 lines become the trace; a 304 keeps the size seen before")
    func trace() throws {
        let lines = [
            #"h - - [t] "GET /a HTTP/1.1" 200 100"#,
            #"h - - [t] "GET /b HTTP/1.1" 404 10"#,
            #"h - - [t] "POST /a HTTP/1.1" 200 5"#,
            #"h - - [t] "GET /a HTTP/1.1" 304 -"#,
            #"h - - [t] "GET /c HTTP/1.1" 200 300"#,
            "",
            #"h - - [t] "GET /a HTTP/1.1" 200 150"#
        ]
        let path = ReplayFixtures.file(lines.joined(separator: "\r\n") + "\r\n", suffix: ".log")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (trace, count) = try Trace.objects(of: AccessLogReader(path: path, chunkSize: 5), name: "t")
        #expect(count == 7)
        #expect(trace.keys == ["/a", "/c"])
        #expect(trace.requests == [0, 0, 1, 0])
        #expect(trace.sizes == [150, 300])
    }
}
