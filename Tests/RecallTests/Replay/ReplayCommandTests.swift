import Foundation
import Testing

/// `recall replay` as a user runs it: the real binary, on the sample capture, an access log and
/// bad input.
@Suite("recall replay: the command", .timeLimit(.minutes(3)))
struct ReplayCommandTests {
    private static func run(_ arguments: [String]) async throws -> ChildProcess.Result {
        try await ChildProcess.replay(arguments, deadline: .seconds(40))
    }

    @Test("--help explains the formats and options and succeeds")
    func help() async throws {
        let result = try await Self.run(["--help"])
        #expect(result.status == 0)
        for text in ["HAR 1.2", "Combined Log Format", "--sizes", "--chart", "--format"] { #expect(result.output.contains(text)) }
    }

    @Test("the sample capture: the HTTPCache report, the eviction table and an SVG chart")
    func sampleCapture() async throws {
        let chart = FileManager.default.temporaryDirectory.appendingPathComponent("recall-replay-\(UUID().uuidString.prefix(8)).svg").path
        defer { unlink(chart) }
        let result = try await Self.run([ReplayFixtures.sampleCapture, "--sizes", "10%,50%", "--chart", chart])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("Through Recall's HTTPCache"))
        #expect(result.output.contains("origin requests"))
        for policy in ["LRU", "S3-FIFO", "W-TinyLFU", "Belady"] { #expect(result.output.contains("| \(policy) |")) }
        let svg = try String(contentsOfFile: chart, encoding: .utf8)
        #expect(svg.hasPrefix("<svg") || svg.hasPrefix("<?xml"))
        #expect(svg.contains("W-TinyLFU"))
    }

    @Test("an access log replays through the eviction policies; a bad line stops with its number and status 1")
    func accessLog() async throws {
        var lines = (0..<40).map { index in
            #"10.0.0.1 - - [23/Nov/2026:10:00:\#(String(format: "%02d", index % 60)) +0000] "GET /item/\#(index % 7) HTTP/1.1" 200 1000"#
        }
        let good = ReplayFixtures.file(lines.joined(separator: "\n") + "\n", suffix: ".log")
        defer { unlink(good) }
        let result = try await Self.run([good])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("| Belady |"))
        lines.insert("this is not a log line", at: 12)
        let bad = ReplayFixtures.file(lines.joined(separator: "\n") + "\n", suffix: ".log")
        defer { unlink(bad) }
        let failed = try await Self.run([bad])
        #expect(failed.status == 1)
        #expect(failed.error.contains("line 13"), "\(failed.error)")
    }

    @Test("a truncated capture is an error naming the line; a missing file and a wrong option are clear errors")
    func badInput() async throws {
        let truncated = ReplayFixtures.file(String(ReplayFixtures.har([ReplayFixtures.entry(0, "GET", "https://x.test/a")]).dropLast(12)))
        defer { unlink(truncated) }
        let result = try await Self.run([truncated])
        #expect(result.status == 1)
        #expect(result.error.contains("line"), "\(result.error)")
        let missing = try await Self.run(["/nonexistent/capture.har"])
        #expect(missing.status == 1)
        #expect(!missing.error.isEmpty)
        let option = try await Self.run([ReplayFixtures.sampleCapture, "--sizes", "lots"])
        #expect(option.status == 2)
        #expect(option.error.contains("--sizes"))
    }
}
