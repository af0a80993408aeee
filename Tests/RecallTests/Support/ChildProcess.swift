import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The programs built next to the test bundle (`recall`, `recall-test-child`,
/// `recall-crash-writer`), run as child processes: for what cannot run inside the test process
/// (a hang no time limit can stop, a resident-set measurement, a SIGKILL mid-write, the CLI).
enum ChildProcess {
    /// How a run ended.
    struct Result {
        var status: Int32
        var output: String
        var error: String
        /// Still running at the deadline (then killed).
        var hung: Bool
    }

    /// The executable `name` next to the test bundle.
    static func url(_ name: String) -> URL {
        Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Starts `name` with `arguments`; its standard output goes to the returned pipe.
    static func launch(_ name: String, _ arguments: [String], standardError: Any = FileHandle.nullDevice) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = url(name)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = standardError
        try process.run()
        return (process, output)
    }

    /// Runs `name` with `arguments` to its end, or kills it at `deadline`.
    static func run(_ name: String, _ arguments: [String], deadline: Duration = .seconds(20)) async throws -> Result {
        let error = Pipe()
        let (process, output) = try launch(name, arguments, standardError: error)
        let end = ContinuousClock.now + deadline
        while process.isRunning, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(10))
        }
        let hung = process.isRunning
        if hung {
            process.terminate()
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      output: String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                      error: String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                      hung: hung)
    }
}
