import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #12, point 1: the caller's answer comes at the limit, whatever the transport does.
/// Real clock, short limits, and transports that do not answer before the limit whatever the
/// machine's load: stubborn transports that answer only once the child releases them, after
/// every measurement, and a loopback origin that holds its answer for 30 s. The timed scenarios
/// run in a child process (`recall-test-child limits`): inside the test process other suites
/// keep the two-thread cooperative pool busy. Each asserts the caller's outcome (the limit's
/// error, not the transport's answer) and that it returned no earlier than the limit and within
/// `slack` of it — generous, so that a loaded machine passes; a Recall that waited for the
/// transport instead never returns before the origin's 30 s or the child's release, and fails.
@Suite("Retry: time limits against a transport that ignores cancellation", .timeLimit(.minutes(1)))
struct TimeLimitTests {
    static let request = URLRequest(url: URL(string: "https://stubborn.test/slow")!)
    /// Milliseconds a loaded machine may add to a limit (a timer that fires late, a thread that
    /// runs late). Far below what waiting for the transport would take (30 s, or forever).
    static let slack = 5_000.0

    /// The child's report: one line per scenario, `name key value key value …`.
    static let report = Task { () throws -> [String: [String: String]] in
        let server = try await OriginServer.shared.value
        let slow = server.url(OriginServer.uniquePath("slow"), ["delay_ms": "30000"])
        let result = try await ChildProcess.run("recall-test-child", ["limits", slow.absoluteString], deadline: .seconds(50))
        guard result.status == 0, !result.hung else {
            throw TransportError(.other, message: "recall-test-child limits: status \(result.status) \(result.error)")
        }
        var lines: [String: [String: String]] = [:]
        for line in result.output.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard let name = words.first else { continue }
            lines[name] = Dictionary(stride(from: 1, to: words.count - 1, by: 2).map { (words[$0], words[$0 + 1]) }) { $1 }
        }
        return lines
    }

    func scenario(_ name: String) async throws -> (elapsed: Double, values: [String: String]) {
        let values = try #require(try await Self.report.value[name], "no line for \(name)")
        return (try #require(values["elapsedMs"].flatMap(Double.init)), values)
    }

    @Test("a 200 ms attempt timeout answers at 200 ms with a timeout, not when the transport returns (never, until released)")
    func attemptTimeout() async throws {
        let (elapsed, values) = try await scenario("attemptTimeout")
        #expect(values["outcome"] == "timedOut")
        #expect(elapsed >= 200 && elapsed < 200 + Self.slack, "answered after \(elapsed) ms")
    }

    @Test("a 2 s deadline answers at 2 s with a deadline error, across retries of 250 ms attempts")
    func deadline() async throws {
        let (elapsed, values) = try await scenario("deadline")
        #expect(values["outcome"] == "deadlineExceeded")
        #expect(elapsed >= 2_000 && elapsed < 2_000 + Self.slack, "answered after \(elapsed) ms")
        #expect((values["attempts"].flatMap(Int.init) ?? 0) >= 2, "the attempts before the deadline were retried")
    }

    @Test("a cancelled call answers CancellationError at once, without a timeout configured")
    func cancellation() async throws {
        let (elapsed, values) = try await scenario("cancel")
        #expect(values["outcome"] == "cancelled")
        #expect(elapsed < Self.slack, "answered \(elapsed) ms after the cancellation")
    }

    @Test("a hanging host opens the circuit: attempts cut by Recall's timeout count as failures when they are cut")
    func hangingHostOpensCircuit() async throws {
        let (elapsed, values) = try await scenario("breaker")
        #expect(values["open"] == "true", "open before any of the hanging attempts returned")
        #expect(values["answered"] == "0")
        #expect(values["outcome"] == "circuitOpen" && elapsed < Self.slack)
    }

    @Test("through URLSessionTransport (attempts in the caller's task): a timeout and a cancellation answer at the limit too")
    func urlSession() async throws {
        let (timeout, timedOut) = try await scenario("sessionTimeout")
        #expect(timedOut["outcome"] == "timedOut")
        #expect(timeout >= 200 && timeout < 200 + Self.slack, "answered after \(timeout) ms")
        let (cancel, cancelled) = try await scenario("sessionCancel")
        #expect(cancelled["outcome"] == "cancelled")
        #expect(cancel < Self.slack, "answered \(cancel) ms after the cancellation")
    }

    @Test("the late answers of abandoned attempts change nothing: the circuit their cuts opened stays open when they arrive")
    func background() async throws {
        let values = try #require(try await Self.report.value["background"])
        // Precondition: every abandoned attempt has answered ("200 late") before the check.
        #expect(values["started"] != nil && values["started"] == values["finished"])
        // Recorded as successes, those answers would have counted in the circuit's window.
        #expect(values["stillOpen"] == "true")
    }

    @Test("the late answer of an abandoned attempt is dropped: the hooks and the caller see one outcome")
    func lateAnswerDropped() async throws {
        // A transport that answers only once released, after the 50 ms timeout has cut the
        // attempt: inside the busy test process the timer may fire late, and a transport on a
        // real-time delay (0.3 s, later 2 s) could answer first (then it is no late answer at all).
        let transport = StubbornTransport()
        defer { transport.release() }
        let hook = RecordingHook("h")
        var policy = RetryPolicy(maxAttempts: 1)
        policy.attemptTimeout = .milliseconds(50)
        let pipeline = Pipeline(transport: transport, hooks: [hook], retrierFactory: .policy(policy))
        // (Counted in a census: once the attempt's task has ended, its late answer has been handed
        // on — or dropped — and nothing of it is still on the way.)
        let census = TaskCensus()
        await TaskCensus.$current.withValue(census) {
            await #expect(throws: TransportError.self) { try await pipeline.send(Self.request) }
        }
        transport.release()  // the late answer comes now
        await transport.waitUntilIdle()
        try await waitUntil("the abandoned attempt's task ended") { census.live == 0 }
        #expect(transport.finished == 1)
        #expect(hook.log.events == ["h.schedule", "h.failure(TransportError)"])
    }
}
