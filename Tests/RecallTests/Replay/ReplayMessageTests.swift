import Foundation
import Testing

/// Review point 16: `recall replay` says what went wrong, names the path once, and keeps a
/// report it computed.
@Suite("recall replay: messages that say what is wrong and where", .timeLimit(.minutes(3)))
struct ReplayMessageTests {
    private static func run(_ arguments: [String]) async throws -> ChildProcess.Result {
        try await ChildProcess.replay(arguments, deadline: .seconds(60))
    }

    @Test("a header value over 1 MiB is reported as such, with its field's name, not as a field without a value")
    func hugeHeaderValue() async throws {
        let big = String(repeating: "a", count: (1 << 20) + 5)
        let path = ReplayFixtures.file(
            ReplayFixtures.har([
                ReplayFixtures.entry(0, "GET", "https://x.test/a"),
                ReplayFixtures.entry(1, "GET", "https://x.test/b", response: [("X-Big", big)])
            ]))
        defer { unlink(path) }
        let result = try await Self.run([path])
        #expect(result.status == 1)
        #expect(
            result.error.contains("entry 2: the response header field 'X-Big' has a value of 1048581 bytes, longer than the 1 MiB"),
            "\(result.error)")
        #expect(!result.error.contains("without a name"))
    }

    @Test("--chart into a missing directory is refused before the work, naming the path")
    func chartDirectoryMissing() async throws {
        let chart = "/nonexistent-\(UUID().uuidString.prefix(8))/chart.svg"
        let result = try await Self.run([ReplayFixtures.sampleCapture, "--chart", chart])
        #expect(result.status == 1)
        #expect(result.error.contains(chart), "\(result.error)")
        #expect(result.error.contains("does not exist"), "\(result.error)")
        #expect(result.output.isEmpty, "no replay was run")
        let directory = try await Self.run([ReplayFixtures.sampleCapture, "--chart", FileManager.default.temporaryDirectory.path])
        #expect(directory.status == 1)
        #expect(directory.error.contains("is a directory"), "\(directory.error)")
    }

    @Test("a chart that cannot be written after the replay: the report is printed, then the error naming the path")
    func chartWriteFailsAfterTheWork() async throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let chart = directory.appendingPathComponent("chart.svg").path
        // The replay has checked the directory once it opens its input (a FIFO): remove the
        // directory then, before the first byte arrives.
        let input = ReplayFixtures.fifo(try Data(contentsOf: URL(fileURLWithPath: ReplayFixtures.sampleCapture))) {
            try? FileManager.default.removeItem(at: directory)
        }
        defer { unlink(input) }
        let result = try await Self.run([input, "--format", "har", "--chart", chart])
        #expect(result.status == 1)
        #expect(result.output.contains("Through Recall's HTTPCache"), "the report was printed: \(result.output.prefix(200))")
        #expect(result.output.contains("| Belady |"))
        #expect(result.error.contains("--chart \(chart): the chart could not be written"), "\(result.error)")
    }

    @Test("a directory or a missing file is named once")
    func pathNamedOnce() async throws {
        let directory = FileManager.default.temporaryDirectory.path
        let result = try await Self.run([directory])
        #expect(result.status == 1)
        #expect(result.error.components(separatedBy: directory).count == 2, "\(result.error)")
        #expect(result.error.contains("is a directory"))
        let missing = "/nonexistent/\(UUID().uuidString.prefix(8)).har"
        let none = try await Self.run([missing])
        #expect(none.status == 1)
        #expect(none.error.components(separatedBy: missing).count == 2, "\(none.error)")
        #expect(none.error.contains("no such file"))
    }
}
