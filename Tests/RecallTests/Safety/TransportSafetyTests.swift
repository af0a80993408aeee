import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue #10, points 4, 10 and 13 (transport side): redirects, cancellation that cannot
/// freeze the process, and a truncated body classified as a lost connection.
@Suite("Safety: URLSessionTransport redirects, cancellation, truncation", .timeLimit(.minutes(2)))
struct TransportSafetyTests {
    @Test("redirects are a choice: followed (the response carries the target's URL) or returned as they are")
    func redirects() async throws {
        let server = try await OriginServer.shared.value
        let target = OriginServer.uniquePath("redirect-target")
        let source = server.url(OriginServer.uniquePath("redirect-source"), ["status": "302"],
                                extra: [.init(name: "header", value: "Location: \(target)")])
        let followed = try await URLSessionTransport().send(URLRequest(url: source))
        #expect(followed.status == 200)
        #expect(followed.url?.path == target)
        let returned = try await URLSessionTransport(redirects: .doNotFollow).send(URLRequest(url: source))
        #expect(returned.status == 302)
        #expect(returned.headers["Location"] == target)
        #expect(try await server.hits(target) == 1) // only the following transport went there
    }

    @Test("a body cut short by the server is a lost connection, and so retried")
    func truncatedBody() async throws {
        let server = try await OriginServer.shared.value
        let url = server.url(OriginServer.uniquePath("truncated"), ["truncate": "1", "size": "100"])
        await #expect {
            try await URLSessionTransport().send(URLRequest(url: url))
        } throws: { error in
            (error as? TransportError)?.kind == .connectionLost
        }
    }

    /// The deadlock of swift-corelibs-foundation's `data(for:)` needed a cancellation to race
    /// the completion of the same task: attempt timeouts near the server's answer time make
    /// that race happen hundreds of times. A deadlock freezes the whole process (no test time
    /// limit can fire), so the loop runs in a child process that is killed after 60 s. Against
    /// the old `session.data(for:)` transport this child never finished.
    @Test("600 attempt timeouts racing the answers never freeze the process (child process, 60 s deadline)")
    func racingTimeouts() async throws {
        let executable = Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("recall-test-child")
        try #require(FileManager.default.isExecutableFile(atPath: executable.path), "recall-test-child was not built next to the tests")
        let server = try await OriginServer.shared.value
        let process = Process()
        process.executableURL = executable
        process.arguments = ["race", server.url(OriginServer.uniquePath("race")).absoluteString, "4", "150"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let hung = process.isRunning
        if hung {
            process.terminate()
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(!hung, "the request loop hung for 60 s")
        #expect(printed.contains("finished 600"), "the child said: \(printed)")
    }
}
