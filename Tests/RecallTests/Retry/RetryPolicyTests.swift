import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let url = URL(string: "https://api.test/items")!

private func request(_ method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
    var request = URLRequest(url: url)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    return request
}

/// A policy without jitter or budget, so delays are exact.
private func exactPolicy(maxAttempts: Int = 3, base: Duration = .seconds(1)) -> RetryPolicy {
    var policy = RetryPolicy(maxAttempts: maxAttempts, backoff: .exponential(base: base, multiplier: 2, cap: .seconds(30)), jitter: .none)
    policy.budget = nil
    policy.now = { Date(timeIntervalSince1970: 784_111_777) }
    return policy
}

/// Runs `request` through a pipeline on a manual clock and advances the clock by each retry
/// delay as the retrier schedules it. With a deadline, every attempt races a timer on the same
/// clock, so an auto-advancing clock would fire that timer at once; stepping on the
/// `retryScheduled` event instead is exact (the attempt's timer is gone by then).
private func drive(
    _ clock: ManualClock, policy: RetryPolicy, transport: any Transport, request: URLRequest,
    context: RecallContext? = nil
) -> Task<RecallResponse, any Error> {
    let (events, continuation) = AsyncStream<RecallEvent>.makeStream()
    let context =
        context.map { given in
            RecallContext(originalRequest: given.originalRequest) { event, own in
                continuation.yield(event)
                given.record(event)
            }
        } ?? RecallContext(originalRequest: request) { event, _ in continuation.yield(event) }
    let pipeline = Pipeline(transport: transport, retrierFactory: .policy(policy), clock: clock)
    let task = Task {
        defer { continuation.finish() }
        return try await pipeline.send(request, context: context)
    }
    Task {
        for await event in events {
            if case .retryScheduled(_, let delay, _, _) = event {
                await clock.waitForSleepers(1)
                clock.advance(by: delay)
            }
        }
    }
    return task
}

@Suite("Retry strategies", .timeLimit(.minutes(1)))
struct RetryPolicyTests {
    @Test(
        "default classification: retryable statuses and transport failures; others not",
        arguments: [
            (408, true), (429, true), (500, true), (502, true), (503, true), (504, true),
            (200, false), (304, false), (400, false), (401, false), (404, false), (501, false)
        ])
    func statusClassification(status: Int, retryable: Bool) async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(status))
        let pipeline = Pipeline(transport: mock, retrierFactory: .policy(exactPolicy()), clock: ManualClock(autoAdvance: true))
        let response = try await pipeline.send(request())
        #expect(response.status == status)
        #expect(mock.requests.count == (retryable ? 3 : 1))
    }

    @Test("transport failures: retryable kinds retried, TLS and other not", arguments: TransportError.Code.known)
    func errorClassification(kind: TransportError.Code) async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .error(TransportError(kind)))
        let pipeline = Pipeline(transport: mock, retrierFactory: .policy(exactPolicy()), clock: ManualClock(autoAdvance: true))
        await #expect(throws: (any Error).self) { try await pipeline.send(request()) }
        let retryable: Set<TransportError.Code> = [.timedOut, .cannotConnect, .connectionLost, .dnsFailure]
        #expect(mock.requests.count == (retryable.contains(kind) ? 3 : 1))
    }

    @Test("maxAttempts counts attempts, not retries, and is capped at 10")
    func maxAttempts() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503))
        let clock = ManualClock(autoAdvance: true)
        let context = RecallContext(originalRequest: request())
        _ = try await Pipeline(transport: mock, retrierFactory: .policy(exactPolicy(maxAttempts: 4)), clock: clock).send(request(), context: context)
        #expect(mock.requests.count == 4)
        #expect(clock.sleeps == [.seconds(1), .seconds(2), .seconds(4)])
        #expect(context.events.last == .gaveUp(attempts: 4, reason: .maxAttempts))

        mock.reset()
        _ = try await Pipeline(transport: mock, retrierFactory: .policy(exactPolicy(maxAttempts: 1000)), clock: clock).send(request())
        #expect(mock.requests.count == RetryPolicy.attemptLimit)
        #expect(RetryPolicy(maxAttempts: 0).maxAttempts == 1)
    }

    @Test("a success after failures returns the success")
    func eventualSuccess() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .error(TransportError(.connectionLost)), .status(502), .text("ok"))
        let pipeline = Pipeline(transport: mock, retrierFactory: .policy(exactPolicy()), clock: ManualClock(autoAdvance: true))
        let context = RecallContext(originalRequest: request())
        let response = try await pipeline.send(request(), context: context)
        #expect(response.bodyText == "ok")
        #expect(
            context.events == [
                .attemptStarted(number: 1),
                .retryScheduled(attempt: 1, delay: .seconds(1), reason: .transport(.connectionLost), usedRetryAfter: false),
                .attemptStarted(number: 2),
                .retryScheduled(attempt: 2, delay: .seconds(2), reason: .status(502), usedRetryAfter: false),
                .attemptStarted(number: 3)
            ])
    }

    @Test(
        "Retry-After is a lower bound on the delay, in seconds (leading zeros allowed) or as a date",
        arguments: [
            ("5", 5), ("0000000000005", 5), ("Sun, 06 Nov 1994 08:49:47 GMT", 10), ("Sunday, 06-Nov-94 08:49:47 GMT", 10),
            ("Sun Nov  6 08:49:47 1994", 10), ("0", 1), ("60", 60)
        ])
    func retryAfter(value: String, expectedSeconds: Int) async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(429, headers: ["Retry-After": value]), .text("ok"))
        let clock = ManualClock(autoAdvance: true)
        let context = RecallContext(originalRequest: request())
        _ = try await Pipeline(transport: mock, retrierFactory: .policy(exactPolicy()), clock: clock).send(request(), context: context)
        #expect(clock.sleeps == [.seconds(expectedSeconds)])
        let usedHint = expectedSeconds > 1
        #expect(context.events.contains(.retryScheduled(attempt: 1, delay: .seconds(expectedSeconds), reason: .status(429), usedRetryAfter: usedHint)))
    }

    @Test("hostile Retry-After values fall back to the backoff", arguments: ["-1", "garbage", "1e9", "", "Sun, 99 Nov 1994"])
    func hostileRetryAfter(value: String) async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503, headers: ["Retry-After": value]), .text("ok"))
        let clock = ManualClock(autoAdvance: true)
        let response = try await Pipeline(transport: mock, retrierFactory: .policy(exactPolicy()), clock: clock).send(request())
        #expect(response.status == 200)
        #expect(clock.sleeps == [.seconds(1)])
    }

    @Test("a Retry-After that cannot fit in the deadline fails at once with the hint")
    func retryAfterBeyondDeadline() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503, headers: ["Retry-After": "30"]))
        var policy = exactPolicy()
        policy.deadline = .seconds(10)
        let clock = ManualClock()
        let error = await #expect(throws: RetryError.self) {
            try await drive(clock, policy: policy, transport: mock, request: request()).value
        }
        #expect(error?.code == .retryAfterExceedsDeadline && error?.hint == .seconds(30) && error?.remaining == .seconds(10))
        #expect(error?.response?.status == 503, "the server's answer travels with the error")
        #expect(clock.now.offset == .zero)  // failed at once, no wait
        #expect(mock.requests.count == 1)
    }

    @Test(
        "a Retry-After longer than the policy waits ends the request at once with the hint, never an earlier retry",
        arguments: [("3600", 3600), ("99999999999999999999", 86_400 * 365), ("61", 61)])
    func retryAfterTooLong(value: String, hintSeconds: Int) async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503, headers: ["Retry-After": value]), .text("ok"))
        let clock = ManualClock(autoAdvance: true)
        let context = RecallContext(originalRequest: request())
        let error = await #expect(throws: RetryError.self) {
            try await Pipeline(transport: mock, retrierFactory: .policy(exactPolicy()), clock: clock).send(request(), context: context)
        }
        #expect(error?.code == .retryAfterTooLong && error?.hint == .seconds(hintSeconds) && error?.limit == .seconds(60))
        #expect(clock.sleeps.isEmpty && mock.requests.count == 1)
        #expect(context.events.contains(.gaveUp(attempts: 1, reason: .retryAfterTooLong)))
    }

    @Test("a 3600 s Retry-After with a 90 s deadline gives up at once (it used to retry after 60 s)")
    func longHintShortDeadline() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503, headers: ["Retry-After": "3600"]), .text("ok"))
        var policy = exactPolicy()
        policy.deadline = .seconds(90)
        let clock = ManualClock()
        let error = await #expect(throws: RetryError.self) {
            try await drive(clock, policy: policy, transport: mock, request: request()).value
        }
        #expect(error?.code == .retryAfterExceedsDeadline && error?.hint == .seconds(3600))
        #expect(clock.now.offset == .zero && mock.requests.count == 1)
    }

    @Test("no wait is started that cannot end before the deadline")
    func deadlineStopsWaits() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503))
        var policy = exactPolicy(maxAttempts: 10)
        policy.deadline = .seconds(6)
        let clock = ManualClock()
        let context = RecallContext(originalRequest: request())
        let response = try await drive(clock, policy: policy, transport: mock, request: request(), context: context).value
        #expect(response.status == 503)
        // Waits 1 s and 2 s (ends at 3 s); 4 s more would end at 7 s > 6 s, so it stops.
        let waits = context.events.compactMap { event -> Duration? in
            if case .retryScheduled(_, let delay, _, _) = event { return delay } else { return nil }
        }
        #expect(waits == [.seconds(1), .seconds(2)])
        #expect(clock.now.offset == .seconds(3))
        // Each attempt was given what was left of the deadline: 6 s, then 5 s, then 3 s.
        #expect(clock.sleeps == [.seconds(6), .seconds(1), .seconds(5), .seconds(2), .seconds(3)])
        #expect(context.events.suffix(2) == [.deadlineExceeded(elapsed: .seconds(3), deadline: .seconds(6)), .gaveUp(attempts: 3, reason: .deadline)])
    }

    @Test("the per-attempt timeout is enforced by Recall on the pipeline's clock")
    func attemptTimeout() async throws {
        let clock = ManualClock()
        let mock = MockTransport()
        let calls = Locked(0)
        mock.route("GET", "/items") { _ in
            let call = calls.withLock {
                $0 += 1; return $0
            }
            if call == 1 { try await clock.sleep(for: .seconds(100)) }
            return .text("attempt \(call)")
        }
        var policy = exactPolicy()
        policy.attemptTimeout = .milliseconds(500)
        let context = RecallContext(originalRequest: request())
        let task = drive(clock, policy: policy, transport: mock, request: request(), context: context)
        await clock.waitForSleepers(2)  // the slow attempt and its timeout
        clock.advance(by: .milliseconds(500))  // drive() then advances the backoff wait
        let response = try await task.value
        #expect(response.bodyText == "attempt 2")
        #expect(context.events.contains(.attemptTimedOut(number: 1, after: .milliseconds(500))))
        #expect(context.events.contains(.retryScheduled(attempt: 1, delay: .seconds(1), reason: .transport(.timedOut), usedRetryAfter: false)))
    }

    @Test("the total deadline cuts a running attempt and fails with deadlineExceeded")
    func deadlineCutsAttempt() async throws {
        let clock = ManualClock()
        let mock = MockTransport()
        mock.route("GET", "/items") { _ in
            try await clock.sleep(for: .seconds(100))
            return .text("late")
        }
        var policy = exactPolicy()
        policy.deadline = .seconds(5)
        let pipeline = Pipeline(transport: mock, retrierFactory: .policy(policy), clock: clock)
        let task = Task { try await pipeline.send(request()) }
        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(5))
        let error = await #expect(throws: RetryError.self) { try await task.value }
        #expect(error == .deadlineExceeded(deadline: .seconds(5), attempts: 1))
    }

    @Test("cancellation ends the loop at once, also in the middle of a backoff wait")
    func cancellationInWait() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503))
        let clock = ManualClock()
        let pipeline = Pipeline(transport: mock, retrierFactory: .policy(exactPolicy(maxAttempts: 5)), clock: clock)
        let task = Task { try await pipeline.send(request()) }
        await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(mock.requests.count == 1)
        #expect(clock.sleeperCount == 0)
    }

    @Test("POST and PATCH are not retried by default", arguments: ["POST", "PATCH"])
    func nonIdempotent(method: String) async throws {
        let mock = MockTransport()
        mock.route(method, "/items", .status(503))
        let context = RecallContext(originalRequest: request(method))
        _ = try await Pipeline(transport: mock, retrierFactory: .policy(exactPolicy()), clock: ManualClock(autoAdvance: true))
            .send(request(method), context: context)
        #expect(mock.requests.count == 1)
        #expect(context.events.last == .gaveUp(attempts: 1, reason: .notIdempotent))
    }

    @Test("idempotent methods are retried", arguments: ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"])
    func idempotent(method: String) async throws {
        let mock = MockTransport()
        mock.route(method, "/items", .status(503))
        _ = try await Pipeline(transport: mock, retrierFactory: .policy(exactPolicy()), clock: ManualClock(autoAdvance: true)).send(request(method))
        #expect(mock.requests.count == 3)
    }

    @Test("POST is retried with an Idempotency-Key that stays the same across attempts")
    func idempotencyKey() async throws {
        let mock = MockTransport()
        mock.route("POST", "/items", .status(503), .text("created", status: 201))
        let counter = Locked(0)
        let hook = IdempotencyKeyHook {
            counter.withLock {
                $0 += 1; return "key-\($0)"
            }
        }
        let pipeline = Pipeline(transport: mock, hooks: [hook], retrierFactory: .policy(exactPolicy()), clock: ManualClock(autoAdvance: true))
        let response = try await pipeline.send(request("POST"))
        #expect(response.status == 201)
        #expect(mock.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") } == ["key-1", "key-1"])
        // A caller's own key is kept.
        mock.reset()
        _ = try await pipeline.send(request("POST", headers: ["Idempotency-Key": "mine"]))
        #expect(mock.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") } == ["mine", "mine"])
        // GET gets no key.
        mock.route("GET", "/items", .text("ok"))
        _ = try await pipeline.send(request())
        #expect(mock.requests.last?.value(forHTTPHeaderField: "Idempotency-Key") == nil)
    }

    @Test("POST is retried when the request provably never left (connection refused), or when the caller opts in")
    func postNeverSentOrOptIn() async throws {
        let mock = MockTransport()
        mock.route("POST", "/items", .error(TransportError(.cannotConnect)), .text("ok"))
        let pipeline = Pipeline(transport: mock, retrierFactory: .policy(exactPolicy()), clock: ManualClock(autoAdvance: true))
        #expect(try await pipeline.send(request("POST")).bodyText == "ok")

        let lost = MockTransport()
        lost.route("POST", "/items", .error(TransportError(.connectionLost)), .text("ok"))
        await #expect(throws: TransportError.self) {
            try await Pipeline(transport: lost, retrierFactory: .policy(exactPolicy()), clock: ManualClock(autoAdvance: true)).send(request("POST"))
        }
        var optIn = exactPolicy()
        optIn.idempotency.retryAllMethods = true
        lost.reset()
        #expect(
            try await Pipeline(transport: lost, retrierFactory: .policy(optIn), clock: ManualClock(autoAdvance: true)).send(request("POST")).bodyText == "ok")
    }

    @Test(
        "storm protection: under a total outage, attempts settle near the request count once the budget is spent",
        arguments: ["token", "percentage"])
    func retryStorm(kind: String) async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503))
        let clock = ManualClock(autoAdvance: true)
        var policy = exactPolicy(maxAttempts: 5, base: .milliseconds(10))
        policy.budget = kind == "token" ? RetryQuota() : PercentageBudget(minRetriesPerSecond: 0, clock: clock)
        let pipeline = Pipeline(transport: mock, retrierFactory: .policy(policy), clock: clock)
        let requests = 1000
        let exhausted = HookLog()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<requests {
                group.addTask {
                    let context = RecallContext(originalRequest: request())
                    _ = try await pipeline.send(request(), context: context)
                    if context.events.contains(.retryBudgetExhausted(host: "api.test")) { exhausted.append("exhausted") }
                }
            }
            try await group.waitForAll()
        }
        let attempts = mock.requests.count
        #expect(Double(attempts) <= 1.2 * Double(requests), "\(attempts) attempts for \(requests) requests")
        #expect(attempts > requests)  // the budget did allow some retries
        #expect(!exhausted.events.isEmpty)
        // Without a budget the same outage costs 5x.
        var unlimited = policy
        unlimited.budget = nil
        mock.reset()
        for _ in 0..<20 { _ = try await Pipeline(transport: mock, retrierFactory: .policy(unlimited), clock: clock).send(request()) }
        #expect(mock.requests.count == 100)
    }

    @Test("the budget is per host: one host's outage does not spend another's")
    func budgetPerHost() {
        let budget = RetryQuota(capacity: 10, retryCost: 5, successRefund: 1)
        let failure = RetryReason.status(503)
        #expect(budget.withdraw(partition: "a", reason: failure) == 5)
        #expect(budget.withdraw(partition: "a", reason: failure) == 5)
        #expect(budget.withdraw(partition: "a", reason: failure) == nil)
        #expect(budget.withdraw(partition: "b", reason: failure) == 5)
        for _ in 0..<5 { budget.attemptSucceeded(partition: "a", lastWithdrawal: nil) }
        #expect(budget.withdraw(partition: "a", reason: failure) == 5)
        #expect(budget.tokens(partition: "a") == 0)
    }

    @Test("auth refresh composes with backoff: 401 refreshes once, then 503 backs off, then success")
    func authRefreshWithBackoff() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items") { request in
            switch request.value(forHTTPHeaderField: "Authorization") {
            case "Bearer fresh": return .text("ok")
            default: return RecallResponse(status: 401)
            }
        }
        let refreshes = Locked(0)
        let outageLeft = Locked(1)
        let flaky = MockTransport()
        flaky.route("GET", "/items") { request in
            // The first request with the fresh credential meets a 503.
            let fresh = request.value(forHTTPHeaderField: "Authorization") == "Bearer fresh"
            if fresh,
                outageLeft.withLock({ left in
                    defer { left -= 1 }; return left > 0
                })
            {
                return RecallResponse(status: 503)
            }
            return try await mock.send(request)
        }
        let factory = BackoffRetrierFactory(policy: exactPolicy(maxAttempts: 4)).refreshingAuth { request in
            refreshes.withLock { $0 += 1 }
            var request = request
            request.setValue("Bearer fresh", forHTTPHeaderField: "Authorization")
            return request
        }
        let clock = ManualClock(autoAdvance: true)
        let context = RecallContext(originalRequest: request())
        let response = try await Pipeline(transport: flaky, retrierFactory: factory, clock: clock)
            .send(request(headers: ["Authorization": "Bearer stale"]), context: context)
        #expect(response.bodyText == "ok")
        #expect(refreshes.withLock { $0 } == 1)
        #expect(flaky.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer stale", "Bearer fresh", "Bearer fresh"])
        #expect(context.events.contains(.retryScheduled(attempt: 1, delay: .zero, reason: .custom("credential refreshed after 401"), usedRetryAfter: false)))
        #expect(clock.sleeps == [.seconds(2)])  // the refresh retried at once; the 503 (second retry) backed off

        // A second 401 after the refresh is not refreshed again.
        let denied = MockTransport()
        denied.route("GET", "/items", .status(401))
        let response401 = try await Pipeline(transport: denied, retrierFactory: factory, clock: clock).send(request())
        #expect(response401.status == 401)
        #expect(denied.requests.count == 2)
    }

    @Test("circuit breaker opens on a failure ratio, fails fast, and closes after a good probe")
    func circuitBreaker() async throws {
        let clock = ManualClock()
        let breaker = CircuitBreaker(
            failureRatio: 0.5, minimumCalls: 4, window: .time(.seconds(10)),
            breakDuration: .seconds(30), probes: 1, clock: clock)
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503), .status(503), .text("ok"), .status(503), .text("recovered"))
        let pipeline = Pipeline(transport: mock.withCircuitBreaker(breaker), retrierFactory: .none, clock: clock)
        for _ in 0..<4 { _ = try await pipeline.send(request()) }  // 3 failures of 4 → open
        #expect(breaker.state(of: "api.test") == .open)
        let error = await #expect(throws: CircuitOpenError.self) { try await pipeline.send(request()) }
        #expect(error?.retryIn == .seconds(30))
        #expect(mock.requests.count == 4)  // refused without touching the transport

        clock.advance(by: .seconds(30))
        #expect(breaker.state(of: "api.test") == .halfOpen)
        #expect(try await pipeline.send(request()).bodyText == "recovered")
        #expect(breaker.state(of: "api.test") == .closed)
    }

    @Test("a failed half-open probe opens the circuit again; the retrier stops at once on an open circuit")
    func circuitProbeFails() async throws {
        let clock = ManualClock()
        let breaker = CircuitBreaker(failureRatio: 1, minimumCalls: 2, breakDuration: .seconds(5), probes: 1, clock: clock)
        let mock = MockTransport()
        mock.route("GET", "/items", .status(500))
        let retrying = Pipeline(
            transport: mock.withCircuitBreaker(breaker), retrierFactory: .policy(exactPolicy(maxAttempts: 5)),
            clock: ManualClock(autoAdvance: true))
        let context = RecallContext(originalRequest: request())
        await #expect(throws: CircuitOpenError.self) { try await retrying.send(request(), context: context) }
        #expect(mock.requests.count == 2)
        #expect(context.events.contains(.circuitOpen(host: "api.test")))
        clock.advance(by: .seconds(5))
        _ = try await Pipeline(transport: mock.withCircuitBreaker(breaker)).send(request())
        #expect(breaker.state(of: "api.test") == .open)
    }
}
