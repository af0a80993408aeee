import Foundation
@testable import Recall
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
        let source = server.url(
            OriginServer.uniquePath("redirect-source"), ["status": "302"],
            extra: [.init(name: "header", value: "Location: \(target)")])
        let followed = try await URLSessionTransport().send(URLRequest(url: source)).collected()
        #expect(followed.status == 200)
        #expect(followed.url?.path == target)
        let returned = try await URLSessionTransport(redirects: .doNotFollow).send(URLRequest(url: source)).collected()
        #expect(returned.status == 302)
        #expect(returned.headers["Location"] == target)
        #expect(try await server.hits(target) == 1)  // only the following transport went there
    }

    @Test("a body cut short by the server is a lost connection (URLError.networkConnectionLost through a session), never a success")
    func truncatedBody() async throws {
        let server = try await OriginServer.shared.value
        let url = server.url(OriginServer.uniquePath("truncated"), ["truncate": "1", "size": "100"])
        let error = await #expect(throws: TransportError.self) { try await URLSessionTransport().send(URLRequest(url: url)).collected() }
        #expect(error?.code == .connectionLost)
        #expect(RecallURLProtocol.sessionError(try #require(error), url: url).code == .networkConnectionLost)
    }

    /// The deadlock of swift-corelibs-foundation's `data(for:)` needed a cancellation to race
    /// the completion of the same task: attempt timeouts near the server's answer time make
    /// that race happen hundreds of times. A deadlock freezes the whole process (no test time
    /// limit can fire), so the loop runs in a child process that is killed after 60 s. Against
    /// the old `session.data(for:)` transport this child never finished.
    @Test("600 attempt timeouts racing the answers never freeze the process (child process, 60 s deadline)")
    func racingTimeouts() async throws {
        let server = try await OriginServer.shared.value
        let result = try await ChildProcess.run(
            "recall-test-child",
            ["race", server.url(OriginServer.uniquePath("race")).absoluteString, "4", "150"],
            deadline: .seconds(60))
        #expect(!result.hung, "the request loop hung for 60 s")
        // "finished 600 answered A timedOut T": both outcomes happened, so timeouts raced answers.
        let words = result.output.split(whereSeparator: \.isWhitespace).map(String.init)
        #expect(words.prefix(2) == ["finished", "600"], "the child said: \(result.output)")
        let answered = words.firstIndex(of: "answered").flatMap { Int(words[$0 + 1]) } ?? 0
        let timedOut = words.firstIndex(of: "timedOut").flatMap { Int(words[$0 + 1]) } ?? 0
        #expect(answered > 0 && timedOut > 0, "no race between timeouts and answers: \(result.output)")
    }

    /// A `URLSession` sending through `RecallURLProtocol`, 3,000 requests cancelled after
    /// 0–3 ms while their answers arrive — half `async` `data(from:)` calls whose Swift task is
    /// cancelled, half completion-handler tasks cancelled with `URLSessionTask.cancel()`: a
    /// delivery racing the cancellation crashed the process every run (a continuation resumed
    /// twice, a task no longer in the session's registry, the registry read while it changed),
    /// and delivering on the session's work queue deadlocked `async` calls. A crash or a hang
    /// can only be seen from outside, so the loop runs in a child process.
    @Test("RecallURLProtocol: 3,000 cancellations racing the answers never crash nor hang the process (child process)")
    func protocolCancellation() async throws {
        let result = try await ChildProcess.run("recall-test-child", ["protocol-cancel", "3000", "3000", "both"], deadline: .seconds(120))
        #expect(!result.hung, "the loop hung for 120 s")
        #expect(result.status == 0, "the child ended with status \(result.status): \(result.error.suffix(2_000))")
        let words = result.output.split(whereSeparator: \.isWhitespace).map(String.init)
        #expect(words.prefix(2) == ["finished", "3000"], "the child said: \(result.output)")
        let answered = words.firstIndex(of: "answered").flatMap { Int(words[$0 + 1]) } ?? 0
        let cancelled = words.firstIndex(of: "cancelled").flatMap { Int(words[$0 + 1]) } ?? 0
        #expect(answered > 0 && cancelled > 0, "no race between cancellations and answers: \(result.output)")
    }

    /// Issue #36, point 5: request body streams were read with blocking reads on Dispatch's
    /// global pool, which on Linux also runs Swift concurrency's executor: 300 stalled uploads
    /// froze the process (this child never finished before the fix). Now an unrelated request
    /// answers while they stall, and cancelled uploads close their streams.
    @Test("300 stalled request-body streams neither freeze the process nor outlive their cancellation (child process)")
    func stalledUploads() async throws {
        let result = try await ChildProcess.run("recall-test-child", ["stalled-uploads", "300"], deadline: .seconds(120))
        #expect(!result.hung, "the process froze: \(result.output)")
        let words = result.output.split(whereSeparator: \.isWhitespace).map(String.init)
        func value(_ name: String) -> Int? { words.firstIndex(of: name).flatMap { Int(words[$0 + 1]) } }
        #expect(value("blocked") == 300, "every upload's read was under way: \(result.output)")
        // Generous: it answers in milliseconds, where the old reader never let it answer at all.
        #expect((value("unrelatedMs") ?? .max) < 30_000, "the unrelated request waited: \(result.output)")
        #expect(value("closed") == 300, "every cancelled upload's stream was closed: \(result.output)")
    }
}
