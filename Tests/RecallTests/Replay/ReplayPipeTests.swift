import Foundation
import Testing

/// Review point 6: `recall replay` on what can be read only once — a FIFO, `<(…)`, standard
/// input. The format is detected from the bytes the replay reads, never by reading ahead and
/// opening the input again (which lost its first 4 KB, or failed with a false "line 1").
@Suite("recall replay: pipes, FIFOs and standard input are read once, whole", .timeLimit(.minutes(3)))
struct ReplayPipeTests {
    private static let lines = 3_000

    @Test("a FIFO without a suffix: a log and a HAR are detected from the bytes read, and replayed whole")
    func fifo() async throws {
        let log = ReplayFixtures.fifo(Data(ReplayFixtures.log(lines: Self.lines).utf8))
        defer { unlink(log) }
        let logResult = try await ChildProcess.run("recall", ["replay", log, "--sizes", "50%"], deadline: .seconds(60))
        #expect(logResult.status == 0, "\(logResult.error)")
        #expect(logResult.output.contains("access log, \(Self.lines) lines, \(Self.lines) GET requests"), "\(logResult.output.prefix(300))")

        let har = ReplayFixtures.fifo(try Data(contentsOf: URL(fileURLWithPath: ReplayFixtures.sampleCapture)))
        defer { unlink(har) }
        let harResult = try await ChildProcess.run("recall", ["replay", har, "--sizes", "50%"], deadline: .seconds(60))
        #expect(harResult.status == 0, "\(harResult.error)")
        #expect(harResult.output.contains("HAR capture, 228 entries (228 replayed"), "\(harResult.output.prefix(300))")
    }

    @Test("process substitution, <(cat FILE): every line is replayed")
    func processSubstitution() async throws {
        let bash = "/bin/bash"
        try #require(FileManager.default.isExecutableFile(atPath: bash), "the test needs bash for <(…)")
        let file = ReplayFixtures.file(ReplayFixtures.log(lines: Self.lines), suffix: ".txt")
        defer { unlink(file) }
        let result = try await ChildProcess.run(
            executable: bash,
            [
                "-c", #""$0" replay <(cat "$1") --sizes 50%"#,
                ChildProcess.url("recall").path, file
            ], deadline: .seconds(60))
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("access log, \(Self.lines) lines, \(Self.lines) GET requests"), "\(result.output.prefix(300))")
    }

    @Test("standard input: a log is detected from its first byte, not taken for a HAR")
    func standardInput() async throws {
        let result = try await ChildProcess.run(
            "recall", ["replay", "-", "--sizes", "50%"],
            input: Data(ReplayFixtures.log(lines: Self.lines).utf8), deadline: .seconds(60))
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("standard input: access log, \(Self.lines) lines"), "\(result.output.prefix(300))")
        let har = try await ChildProcess.run(
            "recall", ["replay", "-", "--sizes", "50%"],
            input: try Data(contentsOf: URL(fileURLWithPath: ReplayFixtures.sampleCapture)),
            deadline: .seconds(60))
        #expect(har.status == 0, "\(har.error)")
        #expect(har.output.contains("HAR capture, 228 entries"))
    }
}
