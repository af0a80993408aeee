import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #12, points 2 and 3: the breaker on resilience4j's model, on a manual clock.
@Suite("Retry: circuit breaker", .timeLimit(.minutes(1)))
struct CircuitBreakerTests {
    let clock = ManualClock()
    let host = "api.test"

    func breaker(_ make: (ManualClock) -> CircuitBreaker) -> CircuitBreaker { make(clock) }

    /// Lets one attempt through and records it.
    func call(_ breaker: CircuitBreaker, failed: Bool?) throws {
        let permit = try breaker.acquire(host).get()
        breaker.record(permit, failed: failed)
    }

    func fail(_ breaker: CircuitBreaker, times: Int) throws {
        for _ in 0..<times { try call(breaker, failed: true) }
    }

    @Test("half-open is judged by its probes: an attempt let through before the circuit opened changes nothing when it answers late")
    func lateAnswerHasNoSay() throws {
        let breaker = CircuitBreaker(minimumCalls: 2, breakDuration: .seconds(10), probes: 2, clock: clock)
        let early = try breaker.acquire(host).get()  // in flight while the circuit opens
        try fail(breaker, times: 2)
        #expect(breaker.state(of: host) == .open)
        clock.advance(by: .seconds(10))
        #expect(breaker.state(of: host) == .halfOpen)
        breaker.record(early, failed: false)  // a late success from before the break
        #expect(breaker.state(of: host) == .halfOpen, "a request admitted before the circuit opened must not close it")
        try call(breaker, failed: false)
        #expect(breaker.state(of: host) == .halfOpen, "one of two probes answered")
        try call(breaker, failed: false)
        #expect(breaker.state(of: host) == .closed)
    }

    @Test("half-open: the probes' failure share decides; a failed share reopens the circuit for another break")
    func probesDecide() throws {
        let breaker = CircuitBreaker(failureRatio: 0.5, minimumCalls: 2, breakDuration: .seconds(10), probes: 4, clock: clock)
        try fail(breaker, times: 2)
        clock.advance(by: .seconds(10))
        try call(breaker, failed: false)
        try call(breaker, failed: true)
        try call(breaker, failed: false)
        #expect(breaker.state(of: host) == .halfOpen)
        try call(breaker, failed: true)  // 2 of 4 failed: 50 %
        #expect(breaker.state(of: host) == .open)
        let refused = breaker.acquire(host)
        guard case .failure(let error) = refused else { Issue.record("let through"); return }
        #expect(error.retryIn == .seconds(10))
    }

    @Test("retryIn says something true: the rest of the break while open; nil while every probe is out")
    func retryInWhileProbing() throws {
        let breaker = CircuitBreaker(minimumCalls: 1, breakDuration: .seconds(30), probes: 1, clock: clock)
        try fail(breaker, times: 1)
        clock.advance(by: .seconds(12))
        guard case .failure(let open) = breaker.acquire(host) else { Issue.record("let through"); return }
        #expect(open.retryIn == .seconds(18))
        clock.advance(by: .seconds(18))
        let probe = try breaker.acquire(host).get()
        #expect(probe.isProbe)
        guard case .failure(let probing) = breaker.acquire(host) else { Issue.record("a second probe let through"); return }
        #expect(probing.retryIn == nil)
        #expect(probing.description.contains("probes are still out"))
        breaker.record(probe, failed: nil)  // a cancelled probe: another may go
        #expect((try? breaker.acquire(host).get())?.isProbe == true)
    }

    @Test("429 is not a host failure by default; 5xx, 408 and transport failures are")
    func defaultClassification() async throws {
        let breaker = CircuitBreaker(minimumCalls: 4, clock: clock)
        let mock = MockTransport()
        mock.route("GET", "/limited", .status(429))
        mock.route("GET", "/down", .status(503))
        let pipeline = Pipeline(transport: mock.withCircuitBreaker(breaker))
        for _ in 0..<10 { _ = try await pipeline.send(URLRequest(url: URL(string: "https://api.test/limited")!)) }
        #expect(breaker.state(of: host) == .closed)
        for _ in 0..<10 { _ = try await pipeline.send(URLRequest(url: URL(string: "https://api.test/down")!)) }
        #expect(breaker.state(of: host) == .open)
        for (status, failure) in [(408, true), (500, true), (429, false), (404, false), (200, false)] {
            let response = RecallResponse(status: status)
            let attempt = Attempt(
                request: URLRequest(url: URL(string: "https://api.test/")!), outcome: .success(response),
                number: 1, elapsed: .zero, context: RecallContext(originalRequest: URLRequest(url: URL(string: "https://api.test/")!)))
            #expect((breaker.classifier.retryReason(for: attempt) != nil) == failure, "\(status)")
        }
    }

    @Test("slow calls open the circuit when their share reaches slowCallRatio, whatever their status")
    func slowCalls() throws {
        let breaker = CircuitBreaker(minimumCalls: 4, slowCallDuration: .seconds(2), slowCallRatio: 0.5, clock: clock)
        for slow in [true, false, true, false] {
            let permit = try breaker.acquire(host).get()
            clock.advance(by: slow ? .seconds(3) : .milliseconds(100))
            breaker.record(permit, failed: false)
        }
        #expect(breaker.state(of: host) == .open)
        let fast = CircuitBreaker(minimumCalls: 4, slowCallDuration: .seconds(2), slowCallRatio: 0.5, clock: clock)
        for _ in 0..<10 { try call(fast, failed: false) }
        #expect(fast.state(of: host) == .closed)
    }

    @Test("time window: failures older than the window no longer count")
    func timeWindowForgets() throws {
        let breaker = CircuitBreaker(failureRatio: 0.5, minimumCalls: 4, window: .time(.seconds(10)), clock: clock)
        try fail(breaker, times: 3)
        clock.advance(by: .seconds(11))
        for _ in 0..<3 { try call(breaker, failed: false) }
        try call(breaker, failed: true)  // 1 of 4 in the window
        #expect(breaker.state(of: host) == .closed)
        try fail(breaker, times: 1)  // 2 of 5
        try fail(breaker, times: 1)  // 3 of 6: 50 %
        #expect(breaker.state(of: host) == .open)
    }

    @Test("count window: only the last n attempts count")
    func countWindow() throws {
        let breaker = CircuitBreaker(failureRatio: 0.5, minimumCalls: 4, window: .count(4), clock: clock)
        try fail(breaker, times: 1)
        for _ in 0..<2 { try call(breaker, failed: false) }
        // 1 failure of 3: below minimumCalls yet.
        try call(breaker, failed: false)  // [F S S S]: 25 %
        try call(breaker, failed: false)  // [S S S S]: the failure left the window
        try fail(breaker, times: 1)  // [S S S F]: 25 %
        #expect(breaker.state(of: host) == .closed)
        try fail(breaker, times: 1)  // [S S F F]: 50 %
        #expect(breaker.state(of: host) == .open)
    }

    @Test("hosts have their own circuits", arguments: [CircuitBreaker.Window.time(.seconds(30)), .count(10)])
    func perHost(window: CircuitBreaker.Window) throws {
        let breaker = CircuitBreaker(minimumCalls: 2, window: window, clock: clock)
        try fail(breaker, times: 2)
        #expect(breaker.state(of: host) == .open)
        #expect(breaker.state(of: "other.test") == .closed)
        #expect((try? breaker.acquire("other.test").get()) != nil)
    }

    @Test("hostile settings are held to sensible ranges")
    func hostileSettings() throws {
        let breaker = CircuitBreaker(
            failureRatio: .nan, minimumCalls: -5, window: .count(-1), breakDuration: .seconds(-3), probes: 0,
            slowCallDuration: .seconds(-1), slowCallRatio: 7, clock: clock)
        #expect(breaker.failureRatio == 0.5 && breaker.minimumCalls == 1 && breaker.window == .count(1))
        #expect(breaker.breakDuration == .milliseconds(1) && breaker.probes == 1 && breaker.slowCallRatio == 1)
        try fail(breaker, times: 1)
        #expect(breaker.state(of: host) == .open)
        clock.advance(by: .milliseconds(1))
        try call(breaker, failed: false)
        #expect(breaker.state(of: host) == .closed)
    }

    @Test("a count window smaller than minimumCalls still opens; a ratio of 0 means any failure, never a success")
    func smallCountWindowAndZeroRatio() throws {
        let small = CircuitBreaker(minimumCalls: 10, window: .count(3), clock: clock)
        #expect(small.minimumCalls == 3)
        try fail(small, times: 3)
        #expect(small.state(of: host) == .open, "three failures fill a window of three")
        let zero = CircuitBreaker(failureRatio: 0, minimumCalls: 2, slowCallDuration: .seconds(1), slowCallRatio: 0, clock: clock)
        for _ in 0..<5 { try call(zero, failed: false) }
        #expect(zero.state(of: host) == .closed, "successes alone never open a circuit")
        try call(zero, failed: true)
        #expect(zero.state(of: host) == .open)
    }

    @Test("a time window of any length is accepted (no trap converting it to slices)")
    func hugeTimeWindow() throws {
        let breaker = CircuitBreaker(minimumCalls: 1, window: .time(.seconds(Int64.max)), breakDuration: .seconds(Int64.max), clock: clock)
        try fail(breaker, times: 1)
        #expect(breaker.state(of: host) == .open)
    }

    @Test("a cancelled probe hands its permit back at once, over a transport that ignores cancellation")
    func cancelledProbeOverStubbornTransport() async throws {
        let breaker = CircuitBreaker(minimumCalls: 1, breakDuration: .seconds(10), probes: 1, clock: clock)
        try fail(breaker, times: 1)
        clock.advance(by: .seconds(10))
        // Answers only when released: however slowly this test runs, the probe's transport is
        // still out when the breaker is asked (a 2 s real-time answer once came first under load).
        let stubborn = StubbornTransport()
        defer { stubborn.release() }
        let pipeline = Pipeline(transport: stubborn.withCircuitBreaker(breaker), clock: clock)
        let call = Task { try await pipeline.send(URLRequest(url: URL(string: "https://api.test/probe")!)) }
        await stubborn.waitUntilStarted()
        call.cancel()
        let outcome = await call.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(stubborn.finished == 0, "the probe's transport is still out")
        #expect((try? breaker.acquire(host).get())?.isProbe == true, "the cancelled probe's permit is free again")
    }

    @Test("an attempt cut by its timeout is recorded before the caller hears of it")
    func cutRecordedBeforeCallerResumes() async throws {
        let breaker = CircuitBreaker(minimumCalls: 1, clock: clock)
        // Answers only when released, so the attempt is still out when its timeout cuts it (a
        // 2 s real-time answer once came first under load and was recorded as a success).
        let stubborn = StubbornTransport()
        defer { stubborn.release() }
        let pipeline = Pipeline(
            transport: stubborn.withCircuitBreaker(breaker),
            retrierFactory: .exponentialBackoff(maxAttempts: 1, attemptTimeout: .seconds(1), budget: nil), clock: clock)
        let call = Task { try await pipeline.send(URLRequest(url: URL(string: "https://api.test/hang")!)) }
        // Both under way before the cut: the attempt (past the breaker, which registered for the
        // cut when it let it through) and its timer on the manual clock.
        await stubborn.waitUntilStarted()
        await clock.waitForSleepers()
        clock.advance(by: .seconds(1))
        _ = await call.result
        #expect(stubborn.finished == 0, "the attempt was still out when its caller resumed")
        #expect(breaker.state(of: host) == .open, "the cut was recorded when the caller resumed")
    }

    @Test("cancellation in every spelling hands a probe's permit back: POSIX ECANCELED and convertible errors too")
    func cancellationSpellings() async throws {
        struct ClientCancelled: TransportErrorConvertible { var transportError: TransportError { TransportError(.cancelled) } }
        for error in [POSIXError(.ECANCELED), ClientCancelled()] as [any Error] {
            #expect(error.isCancellation)
            let breaker = CircuitBreaker(minimumCalls: 1, breakDuration: .seconds(10), probes: 1, clock: clock)
            try fail(breaker, times: 1)
            clock.advance(by: .seconds(10))
            let mock = MockTransport()
            mock.route("GET", "/x") { _ in throw error }
            _ = try? await Pipeline(transport: mock.withCircuitBreaker(breaker)).send(URLRequest(url: URL(string: "https://api.test/x")!))
            #expect(breaker.state(of: host) == .halfOpen && (try? breaker.acquire(host).get())?.isProbe == true, "\(error)")
        }
        #expect(!POSIXError(.ECONNRESET).isCancellation)
    }

    @Test("per-host state stays bounded: idle partitions are forgotten, busy ones kept")
    func partitionTableBounded() {
        final class Slot: Sendable { let busy: Bool; init(busy: Bool) { self.busy = busy } }
        let table = PartitionTable<Slot>(stripes: 4, limit: 64, isIdle: { !$0.busy }) { name in Slot(busy: name.hasPrefix("busy")) }
        for index in 0..<20 { _ = table.value(for: "busy-\(index)") }
        for index in 0..<10_000 { _ = table.value(for: "idle-\(index)") }
        #expect(table.count <= 64 + 20 + 4)
        #expect((0..<20).allSatisfy { table.existing("busy-\($0)") != nil }, "a partition with state of its own is never forgotten")
        let quota = RetryQuota(capacity: 10, retryCost: 5)
        #expect(quota.withdraw(partition: "spent", reason: .status(503)) == 5)
        for index in 0..<10_000 { _ = quota.withdraw(partition: "host-\(index)", reason: .status(503)) }
        #expect(quota.tokens(partition: "spent") == 5, "a bucket that is not full is kept")
    }

    @Test("the sliding window adds and forgets in slices, and its totals stay exact over many calls")
    func slidingWindowTotals() {
        var window = SlidingWindow<CircuitBreaker.Outcomes>(.time(.seconds(10), slices: 10))
        for second in 0..<100 {
            window.add(CircuitBreaker.Outcomes(calls: 1, failures: second % 2, slow: 0), at: .seconds(second))
        }
        // Slices of 1 s: at t = 99.x the window holds seconds 90...99.
        #expect(window.total(at: .milliseconds(99_500)) == CircuitBreaker.Outcomes(calls: 10, failures: 5, slow: 0))
        #expect(window.total(at: .seconds(1_000)) == .zero)
        var ring = SlidingWindow<CircuitBreaker.Outcomes>(.count(3))
        for index in 0..<7 { ring.add(CircuitBreaker.Outcomes(calls: 1, failures: index >= 5 ? 1 : 0, slow: 0), at: .zero) }
        #expect(ring.total == CircuitBreaker.Outcomes(calls: 3, failures: 2, slow: 0))
    }
}
