import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport that ignores cancellation: it answers `delay` after it was asked, whatever
/// happens to the task that asked (the review measured the first edition waiting for it).
final class StubbornTransport: Transport {
    let delay: Double
    private let counts = Locked((started: 0, finished: 0))

    init(seconds delay: Double) {
        self.delay = delay
    }

    var started: Int { counts.withLock { $0.started } }
    var finished: Int { counts.withLock { $0.finished } }

    func send(_ request: URLRequest) async throws -> Response {
        counts.withLock { $0.started += 1 }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { done.resume() }
        }
        counts.withLock { $0.finished += 1 }
        return .text("late")
    }

    /// Waits (polling every few milliseconds, at most `limit` seconds) until every attempt started has finished.
    func waitUntilIdle(limit: Double = 5) async throws {
        let end = ContinuousClock.now + .seconds(limit)
        while finished < started, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(5)) }
    }
}

/// Issue #12, point 1: the caller's answer comes at the limit, whatever the transport does.
/// Real clock, short limits, a transport that holds on for several times the limit; each test
/// asserts the caller returned within 50 ms of the limit.
@Suite("Retry: time limits against a transport that ignores cancellation", .timeLimit(.minutes(1)))
struct TimeLimitTests {
    static let request = URLRequest(url: URL(string: "https://stubborn.test/slow")!)
    static let slack: Duration = .milliseconds(50)

    func policy(maxAttempts: Int = 1, attemptTimeout: Duration? = nil, deadline: Duration? = nil) -> RetryPolicy {
        var policy = RetryPolicy(maxAttempts: maxAttempts, backoff: .constant(.milliseconds(10)), jitter: .none)
        policy.attemptTimeout = attemptTimeout
        policy.deadline = deadline
        policy.budget = nil
        return policy
    }

    @Test("a 200 ms attempt timeout answers at 200 ms with a timeout, not when the transport returns (1 s)")
    func attemptTimeout() async throws {
        let transport = StubbornTransport(seconds: 1)
        let pipeline = Pipeline(transport: transport, retrierFactory: .policy(policy(attemptTimeout: .milliseconds(200))))
        let start = ContinuousClock.now
        let error = await #expect(throws: TransportError.self) { try await pipeline.send(Self.request) }
        let elapsed = ContinuousClock.now - start
        #expect(error?.kind == .timedOut)
        #expect(elapsed >= .milliseconds(200) && elapsed < .milliseconds(200) + Self.slack, "answered after \(elapsed)")
        try await transport.waitUntilIdle()
        #expect(transport.finished == 1, "the abandoned attempt finished in the background")
    }

    @Test("a 300 ms deadline answers at 300 ms with a deadline error, across retries")
    func deadline() async throws {
        let transport = StubbornTransport(seconds: 1)
        let pipeline = Pipeline(transport: transport,
                                retrierFactory: .policy(policy(maxAttempts: 5, attemptTimeout: .milliseconds(100), deadline: .milliseconds(300))))
        let start = ContinuousClock.now
        let error = await #expect(throws: RetryError.self) { try await pipeline.send(Self.request) }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .deadlineExceeded)
        #expect(elapsed >= .milliseconds(300) && elapsed < .milliseconds(300) + Self.slack, "answered after \(elapsed)")
        #expect(transport.started >= 2, "the attempts before the deadline were retried")
        try await transport.waitUntilIdle()
    }

    @Test("a cancelled call answers CancellationError at once, without a timeout configured")
    func cancellation() async throws {
        let transport = StubbornTransport(seconds: 1)
        let pipeline = Pipeline(transport: transport)
        let call = Task { try await pipeline.send(Self.request) }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        call.cancel()
        let result = await call.result
        let elapsed = ContinuousClock.now - start
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(elapsed < Self.slack, "answered \(elapsed) after the cancellation")
        try await transport.waitUntilIdle()
    }

    @Test("the late answer of an abandoned attempt is dropped: the hooks and the caller see one outcome")
    func lateAnswerDropped() async throws {
        let transport = StubbornTransport(seconds: 0.3)
        let hook = RecordingHook("h")
        let pipeline = Pipeline(transport: transport, hooks: [hook], retrierFactory: .policy(policy(attemptTimeout: .milliseconds(50))))
        await #expect(throws: TransportError.self) { try await pipeline.send(Self.request) }
        try await transport.waitUntilIdle()
        try await Task.sleep(for: .milliseconds(20))
        #expect(hook.log.events == ["h.schedule", "h.failure(TransportError)"])
    }

    @Test("a hanging host opens the circuit: attempts cut by Recall's timeout count as failures when they are cut")
    func hangingHostOpensCircuit() async throws {
        let transport = StubbornTransport(seconds: 0.5)
        let breaker = CircuitBreaker(minimumCalls: 3, breakDuration: .seconds(60))
        let pipeline = Pipeline(transport: transport.withCircuitBreaker(breaker),
                                retrierFactory: .policy(policy(attemptTimeout: .milliseconds(30))))
        for _ in 0..<3 { await #expect(throws: TransportError.self) { try await pipeline.send(Self.request) } }
        #expect(breaker.state(of: "stubborn.test") == .open, "open before any of the hanging attempts returned")
        #expect(transport.finished == 0)
        let start = ContinuousClock.now
        await #expect(throws: CircuitOpenError.self) { try await pipeline.send(Self.request) }
        #expect(ContinuousClock.now - start < Self.slack)
        try await transport.waitUntilIdle()
        #expect(breaker.state(of: "stubborn.test") == .open, "the late answers changed nothing")
    }
}
