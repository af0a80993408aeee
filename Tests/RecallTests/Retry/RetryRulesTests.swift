import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #12, points 4–9: no input traps, classification for any transport, budgets faithful to
/// their references, auth refresh inside the limits, ergonomics.
@Suite("Retry: rules of the second edition", .timeLimit(.minutes(1)))
struct RetryRulesTests {
    static let url = URL(string: "https://api.test/items")!

    func request(_ method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
        var request = URLRequest(url: Self.url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    func policy(maxAttempts: Int = 3, budget: (any RetryBudget)? = nil) -> RetryPolicy {
        var policy = RetryPolicy(maxAttempts: maxAttempts, backoff: .constant(.seconds(1)), jitter: .none)
        policy.budget = budget
        return policy
    }

    func send(_ request: URLRequest, through transport: any Transport, policy: RetryPolicy) async throws -> RecallResponse {
        try await Pipeline(transport: transport, retrierFactory: .policy(policy), clock: ManualClock(autoAdvance: true)).send(request)
    }

    // MARK: 5. No input traps

    /// A source of hostile randomness: out of range, negative, NaN.
    struct HostileRandom: RandomSource {
        let value: Double
        func nextUnit() -> Double { value }
    }

    @Test("property: any backoff, any retry number, any jitter gives a delay in 0...cap, without trapping")
    func backoffProperty() {
        var random = SeededRandomSource(seed: 12)
        let doubles: [Double] = [-1e22, -1, 0, 0.5, 1, 2, 1e6, 1e300, .infinity, -.infinity, .nan]
        let durations: [Duration] = [
            .zero, .nanoseconds(1), .milliseconds(100), .seconds(20), .seconds(-5), .seconds(Int64.max / 4),
            .seconds(-Int64.max / 4)
        ]
        let retries = [Int.min, -1, 0, 1, 2, 43, 44, 45, 1_000, 1 << 40, Int.max - 1, Int.max]
        for _ in 0..<400 {
            let base =
                Bool.random(using: &random)
                ? durations.randomElement(using: &random)!
                : .nanoseconds(Int64.random(in: -1_000_000_000_000...1_000_000_000_000, using: &random))
            let cap = durations.randomElement(using: &random)!
            let shape: Backoff.Shape =
                switch Int.random(in: 0..<3, using: &random) {
                case 0: .constant
                case 1: .linear(increment: durations.randomElement(using: &random)!)
                default:
                    .exponential(
                        multiplier: Bool.random(using: &random)
                            ? doubles.randomElement(using: &random)!
                            : Double.random(in: -1e6...1e6, using: &random))
                }
            var backoff = Backoff(base: base, shape: shape, cap: cap)
            if Bool.random(using: &random) { backoff.shape = shape }  // set after creation: unsanitized
            if Bool.random(using: &random) { backoff.base = base; backoff.cap = cap }
            let limit = max(Duration.zero, backoff.cap)
            for retry in retries + [Int.random(in: 1...Int.max, using: &random)] {
                let delay = backoff.delay(forRetry: retry)
                #expect(delay >= .zero && delay <= limit, "\(backoff) retry \(retry): \(delay)")
                for jitter in Jitter.allCases {
                    let hostile = HostileRandom(value: doubles.randomElement(using: &random)!)
                    let source: any RandomSource = Bool.random(using: &random) ? random : hostile
                    let jittered = jitter.apply(to: delay, previous: durations.randomElement(using: &random)!, backoff: backoff, random: source)
                    #expect(jittered >= .zero && jittered <= max(limit, delay), "\(jitter) \(backoff): \(jittered)")
                }
            }
        }
    }

    @Test("the first edition's traps: linear at retry Int.max, a negative multiplier from retry 44, -1e22 through a pipeline")
    func knownTraps() async throws {
        #expect(Backoff.linear(base: .seconds(1), increment: .seconds(20)).delay(forRetry: .max) == .seconds(30))
        let negative = Backoff(base: .milliseconds(100), shape: .exponential(multiplier: -2), cap: .seconds(10))
        #expect((1...100).allSatisfy { negative.delay(forRetry: $0) == .milliseconds(100) })
        var policy = policy(maxAttempts: .max)
        policy.backoff = Backoff(base: .seconds(1), shape: .exponential(multiplier: -1e22), cap: .seconds(5))
        policy.jitter = .decorrelated
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503))
        #expect(try await send(request(), through: mock, policy: policy).status == 503)
        #expect(mock.requests.count == RetryPolicy.attemptLimit)
    }

    @Test("maxAttempts outside 1...10 is held to it and reported in adjustments")
    func attemptsReported() {
        #expect(RetryPolicy().adjustments.isEmpty)
        var policy = RetryPolicy(maxAttempts: 50)
        #expect(policy.maxAttempts == 10)
        #expect(policy.adjustments == ["maxAttempts 50 is outside 1...10: 10 attempts are made"])
        policy.maxAttempts = 4
        #expect(policy.adjustments.isEmpty)
        policy.maxAttempts = Int.min
        #expect(policy.maxAttempts == 1 && policy.adjustments.count == 1)
    }

    @Test("budgets: hostile numbers count as zero, never trap")
    func hostileBudgets() {
        let quota = RetryQuota(capacity: .nan, retryCost: -5, timeoutCost: .infinity, successRefund: -1)
        #expect(quota.capacity == 0 && quota.retryCost == 0 && quota.timeoutCost == 0)
        #expect(quota.withdraw(partition: "h", reason: .status(503)) == 0)  // costs nothing, so allowed
        let throttle = RetryThrottle(maxTokens: -3, tokenRatio: .nan)
        #expect(throttle.maxTokens == 1 && throttle.tokenRatio == 0.1)
        let share = PercentageBudget(percent: .infinity, minRetriesPerSecond: -1, window: .seconds(-10))
        #expect(share.percent == 0 && share.minRetriesPerSecond == 0 && share.window == .seconds(1))
        #expect(share.withdraw(partition: "h", reason: .status(503)) == nil)
    }

    // MARK: 6. Classification for any transport

    struct ClientError: TransportErrorConvertible {
        let transportError: TransportError
    }

    @Test(
        "errors of any transport are classified like their URLError equivalents",
        arguments: [
            (POSIXError(.ECONNRESET) as any Error, TransportError.Code.connectionLost, false),
            (POSIXError(.ECONNREFUSED), .cannotConnect, true),
            (POSIXError(.ETIMEDOUT), .timedOut, false),
            (POSIXError(.EPIPE), .connectionLost, false),
            (POSIXError(.EHOSTUNREACH), .cannotConnect, true),
            (NSError(domain: NSPOSIXErrorDomain, code: Int(ECONNRESET)), .connectionLost, false),
            (NSError(domain: NSURLErrorDomain, code: URLError.cannotConnectToHost.rawValue), .cannotConnect, true),
            (URLError(.cannotConnectToHost), .cannotConnect, true),
            (URLError(.networkConnectionLost), .connectionLost, false),
            (ClientError(transportError: TransportError(.connectionLost, requestNeverSent: true)), .connectionLost, true)
        ])
    func classification(error: any Error, kind: TransportError.Code, neverSent: Bool) {
        let classified = TransportError.classify(error)
        #expect(classified?.code == kind)
        #expect(classified?.requestNeverSent == neverSent)
    }

    @Test("errors that say nothing of the connection are not transport failures")
    func unclassified() {
        #expect(TransportError.classify(POSIXError(.ENOENT)) == nil)
        #expect(TransportError.classify(CocoaError(.fileNoSuchFile)) == nil)
        struct Mine: Error {}
        #expect(TransportError.classify(Mine()) == nil)
    }

    @Test(
        "a GET is retried after a POSIX reset; a POST only after an error proving it was never sent",
        arguments: [
            ("GET", POSIXError(.ECONNRESET) as any Error, 3), ("POST", POSIXError(.ECONNRESET), 1), ("POST", POSIXError(.ECONNREFUSED), 3),
            ("POST", URLError(.cannotConnectToHost), 3), ("POST", URLError(.networkConnectionLost), 1),
            ("POST", ClientError(transportError: TransportError(.cannotConnect)), 3), ("GET", POSIXError(.ENOENT), 1)
        ])
    func retriedByKind(method: String, error: any Error, attempts: Int) async throws {
        let mock = MockTransport()
        mock.route(method, "/items", .error(error))
        await #expect(throws: (any Error).self) { try await send(request(method), through: mock, policy: policy()) }
        #expect(mock.requests.count == attempts)
    }

    @Test("an empty or blank Idempotency-Key does not make a POST retryable; a real one does", arguments: [("", 1), ("  ", 1), ("k-1", 3)])
    func idempotencyKey(key: String, attempts: Int) async throws {
        let mock = MockTransport()
        mock.route("POST", "/items", .status(503))
        _ = try await send(request("POST", headers: ["Idempotency-Key": key]), through: mock, policy: policy())
        #expect(mock.requests.count == attempts)
    }

    @Test("a POSIX refusal is a disconnection: the cache answers stale offline")
    func posixOffline() async throws {
        let h = CacheHarness()
        h.origin("/o", headers: ["Cache-Control": "max-age=10"], body: "stored")
        try await h.get("/o")
        h.now.advance(60)
        h.mock.route("GET", "/o", .error(POSIXError(.ECONNREFUSED)))
        let answer = try await h.get("/o")
        #expect(answer.source == .stale && answer.bodyText == "stored")
    }

    // MARK: 7. Budgets faithful to their references

    @Test("RetryQuota is AWS's standard quota: 500 tokens, 5 a retry, 10 after a timeout; a success refunds the last retry, else 1")
    func awsQuota() {
        let quota = RetryQuota()
        #expect(quota.capacity == 500 && quota.retryCost == 5 && quota.timeoutCost == 10 && quota.successRefund == 1)
        var retries = 0
        while quota.withdraw(partition: "h", reason: .status(503)) != nil { retries += 1 }
        #expect(retries == 100)
        quota.attemptSucceeded(partition: "h", lastWithdrawal: nil)
        #expect(quota.tokens(partition: "h") == 1)
        quota.attemptSucceeded(partition: "h", lastWithdrawal: 10)
        #expect(quota.tokens(partition: "h") == 11)
        #expect(quota.withdraw(partition: "h", reason: .transport(.timedOut)) == 10)
        #expect(quota.withdraw(partition: "h", reason: .transport(.timedOut)) == nil)
        #expect(quota.withdraw(partition: "h", reason: .status(503)) == nil)
        let timeouts = RetryQuota()
        var afterTimeouts = 0
        while timeouts.withdraw(partition: "h", reason: .transport(.timedOut)) != nil { afterTimeouts += 1 }
        #expect(afterTimeouts == 50)
    }

    @Test("RetryThrottle is gRFC A6: failures take 1, successes give tokenRatio, retries only above half (hysteresis)")
    func grpcThrottle() {
        let throttle = RetryThrottle(maxTokens: 10, tokenRatio: 0.1)
        var allowed: [Bool] = []
        for _ in 0..<10 {
            throttle.attemptFailed(partition: "h", reason: .status(503))
            allowed.append(throttle.withdraw(partition: "h", reason: .status(503)) != nil)
        }
        #expect(allowed == [true, true, true, true, false, false, false, false, false, false])
        #expect(throttle.tokens(partition: "h") == 0)
        for _ in 0..<50 { throttle.attemptSucceeded(partition: "h", lastWithdrawal: nil) }
        #expect(throttle.withdraw(partition: "h", reason: .status(503)) == nil, "exactly half is not above half")
        throttle.attemptSucceeded(partition: "h", lastWithdrawal: nil)
        #expect(throttle.withdraw(partition: "h", reason: .status(503)) == 0)
    }

    @Test("a non-retryable answer (404, 401) is not a success that refunds tokens; a 2xx is")
    func notASuccess() async throws {
        let quota = RetryQuota(capacity: 10, retryCost: 5, successRefund: 1)
        #expect(quota.withdraw(partition: "api.test", reason: .status(503)) == 5)
        for status in [404, 401, 400] {
            let mock = MockTransport()
            mock.route("GET", "/items", .status(status))
            _ = try await send(request(), through: mock, policy: policy(budget: quota))
        }
        #expect(quota.tokens(partition: "api.test") == 5)
        let ok = MockTransport()
        ok.route("GET", "/items", .text("ok"))
        _ = try await send(request(), through: ok, policy: policy(budget: quota))
        #expect(quota.tokens(partition: "api.test") == 6)
        // A success after a retry gives back what the retry took.
        let flaky = MockTransport()
        flaky.route("GET", "/items", .status(503), .text("ok"))
        _ = try await send(request(), through: flaky, policy: policy(budget: quota))
        #expect(quota.tokens(partition: "api.test") == 6)
    }

    @Test("RetryThrottle through the pipeline: every failed attempt costs a token, the last one too")
    func throttleThroughPipeline() async throws {
        let throttle = RetryThrottle(maxTokens: 10, tokenRatio: 0.5)
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503))
        _ = try await send(request(), through: mock, policy: policy(maxAttempts: 3, budget: throttle))
        #expect(throttle.tokens(partition: "api.test") == 7)
        _ = try await send(request(), through: mock, policy: policy(maxAttempts: 3, budget: throttle))
        // 7 → 6 (retry) → 5 (refused: not above half)
        #expect(throttle.tokens(partition: "api.test") == 5)
        #expect(mock.requests.count == 5)
    }

    @Test("PercentageBudget: retries within 20 % of the window's requests plus the reserve; the window forgets")
    func percentageWindow() {
        let clock = ManualClock()
        let budget = PercentageBudget(percent: 0.2, minRetriesPerSecond: 0, window: .seconds(10), clock: clock)
        for _ in 0..<100 { budget.requestStarted(partition: "h") }
        var granted = 0
        while budget.withdraw(partition: "h", reason: .status(503)) != nil { granted += 1 }
        #expect(granted == 20)
        clock.advance(by: .seconds(11))
        #expect(budget.withdraw(partition: "h", reason: .status(503)) == nil, "the requests left the window")
        for _ in 0..<10 { budget.requestStarted(partition: "h") }
        #expect(budget.withdraw(partition: "h", reason: .status(503)) == 0)
    }

    // MARK: 8. Auth refresh stays inside the limits

    final class CountingBudget: RetryBudget {
        let counts = Locked((started: 0, withdrawn: 0))
        func requestStarted(partition: String) { counts.withLock { $0.started += 1 } }
        func withdraw(partition: String, reason: RetryReason) -> Double? {
            counts.withLock { $0.withdrawn += 1 }
            return 0
        }
    }

    func authFactory(_ policy: RetryPolicy, refreshes: Locked<Int>) -> AuthRefreshRetrierFactory {
        BackoffRetrierFactory(policy: policy).refreshingAuth { request in
            refreshes.withLock { $0 += 1 }
            var request = request
            request.setValue("Bearer fresh", forHTTPHeaderField: "Authorization")
            return request
        }
    }

    func authOrigin() -> MockTransport {
        let mock = MockTransport()
        mock.route("GET", "/items") { request in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer fresh" ? .text("ok") : RecallResponse(status: 401)
        }
        return mock
    }

    @Test("maxAttempts 1 means one attempt: the 401 is returned, no refresh; 2 allows the refresh")
    func refreshCountsAttempts() async throws {
        let refreshes = Locked(0)
        let mock = authOrigin()
        let single = Pipeline(transport: mock, retrierFactory: authFactory(policy(maxAttempts: 1), refreshes: refreshes))
        #expect(try await single.send(request()).status == 401)
        #expect(mock.requests.count == 1 && refreshes.withLock { $0 } == 0)
        let two = Pipeline(transport: mock, retrierFactory: authFactory(policy(maxAttempts: 2), refreshes: refreshes))
        #expect(try await two.send(request()).bodyText == "ok")
        #expect(mock.requests.count == 3 && refreshes.withLock { $0 } == 1)
    }

    @Test("the budget sees the request start and the refresh retry")
    func refreshSeenByBudget() async throws {
        let budget = CountingBudget()
        let refreshes = Locked(0)
        let pipeline = Pipeline(transport: authOrigin(), retrierFactory: authFactory(policy(budget: budget), refreshes: refreshes))
        #expect(try await pipeline.send(request()).bodyText == "ok")
        #expect(budget.counts.withLock { $0 } == (started: 1, withdrawn: 1))
        let refusing = RetryQuota(capacity: 0)
        let refused = Pipeline(transport: authOrigin(), retrierFactory: authFactory(policy(budget: refusing), refreshes: refreshes))
        #expect(try await refused.send(request()).status == 401, "a spent budget refuses the refresh retry too")
        #expect(refreshes.withLock { $0 } == 1)
    }

    @Test("the deadline bounds the refresh: past it, the 401 is returned without refreshing")
    func refreshInsideDeadline() async throws {
        let clock = ManualClock()
        let slow = MockTransport()
        slow.route("GET", "/items") { _ in
            clock.advance(by: .seconds(10))  // the attempt takes 10 s of the 5 s deadline (on the manual clock)
            return RecallResponse(status: 401)
        }
        var limited = policy()
        limited.deadline = .seconds(5)
        let refreshes = Locked(0)
        let pipeline = Pipeline(transport: slow, retrierFactory: authFactory(limited, refreshes: refreshes), clock: clock)
        let outcome = await Task { try await pipeline.send(request()) }.result
        // The attempt raced its 5 s timer on the manual clock; either way nothing was refreshed.
        #expect((try? outcome.get().status) == 401 || (try? outcome.get()) == nil)
        #expect(refreshes.withLock { $0 } == 0 && slow.requests.count == 1)
    }

    @Test("a refresh that outlasts the deadline is cut at it: the 401 is the answer, however long the token server waits")
    func refreshCutAtDeadline() async throws {
        let clock = ManualClock()
        var limited = policy()
        limited.deadline = .seconds(5)
        let refreshes = Locked(0)
        // A token server that ignores cancellation and answers only when released (at the end):
        // it cannot answer before the deadline, however slowly a loaded machine runs this test
        // (answering after 2 s of real time, it could, and the request was retried).
        let tokenServer = StubbornTransport()
        defer { tokenServer.release() }
        let factory = BackoffRetrierFactory(policy: limited).refreshingAuth { request in
            refreshes.withLock { $0 += 1 }
            _ = try await tokenServer.send(request)
            var request = request
            request.setValue("Bearer fresh", forHTTPHeaderField: "Authorization")
            return request
        }
        let origin = authOrigin()
        let pipeline = Pipeline(transport: origin, retrierFactory: factory, clock: clock)
        let call = Task { try await pipeline.send(request()) }
        // The refresh is under way, and so is its 5 s timer on the manual clock (the first
        // attempt's timer is gone: that attempt answered before the refresh began).
        await tokenServer.waitUntilStarted()
        await clock.waitForSleepers()
        clock.advance(by: .seconds(5))
        let response = try await call.value
        #expect(response.status == 401, "the deadline passed during the refresh")
        #expect(refreshes.withLock { $0 } == 1 && origin.requests.count == 1, "no attempt after the deadline")
    }

    // MARK: 9. Ergonomics

    @Test("exponentialBackoff names its statuses; retrying(statuses:) adds one to the defaults")
    func namedStatuses() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(500))
        mock.route("GET", "/early", .status(425))
        let only503 = Pipeline(
            transport: mock, retrierFactory: .exponentialBackoff(base: .zero, retryableStatuses: [503], budget: nil),
            clock: ManualClock(autoAdvance: true))
        _ = try await only503.send(request())
        #expect(mock.count(for: "/items") == 1)
        let plus425 = Pipeline(
            transport: mock, retrierFactory: .exponentialBackoff(base: .zero, budget: nil).retrying(statuses: 425),
            clock: ManualClock(autoAdvance: true))
        _ = try await plus425.send(URLRequest(url: URL(string: "https://api.test/early")!))
        _ = try await plus425.send(request())
        #expect(mock.count(for: "/early") == 3 && mock.count(for: "/items") == 4, "425 added, 500 still retried")
        #expect(RetryClassifier.default.retrying(statuses: 425).retryableStatuses == RetryClassifier.defaultStatuses.union([425]))
        #expect(!RetryClassifier.default.notRetrying(statuses: 429).retryableStatuses.contains(429))
    }
}
