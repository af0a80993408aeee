import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The standard retrier: classify, check idempotency, attempts, deadline and budget, then
/// wait a jittered backoff (at least the `Retry-After` hint) and try again.
///
/// - A `Retry-After` hint is a lower bound: a retry is never sent earlier than the server asked.
///   A hint that does not fit what is left of the deadline, or exceeds
///   ``RetryPolicy/maxRetryAfter``, ends the request at once with a ``RetryError`` that carries
///   the hint and the server's answer.
/// - The budget hears of every request start, every retryable failure, every retry and every
///   success (an answer below 400; a `404` or `401` is neither), see ``RetryBudget``.
///
/// Every decision is recorded as a ``RecallEvent`` on the request's context.
public struct BackoffRetrier: Retrier {
    /// The configuration.
    public let policy: RetryPolicy
    private var previousDelay: Duration
    /// Whether the budget heard of the request's start.
    private var started = false
    /// What the request's latest retry took from the budget.
    private var lastWithdrawal: Double?

    /// Creates a retrier for one request.
    public init(policy: RetryPolicy) {
        self.policy = policy
        self.previousDelay = policy.backoff.base
    }

    /// The per-attempt timeout, shortened to what is left of the deadline.
    public func attemptTimeout(elapsed: Duration) -> Duration? {
        let remaining = policy.deadline.map { max(.zero, $0 - elapsed) }
        switch (policy.attemptTimeout, remaining) {
        case let (timeout?, remaining?): return min(timeout, remaining)
        case let (timeout, remaining): return timeout ?? remaining
        }
    }

    /// What is left of the policy's deadline.
    public func remainingTime(elapsed: Duration) -> Duration? {
        policy.deadline.map { max(.zero, $0 - elapsed) }
    }

    /// Decides whether and when to retry `attempt`.
    public mutating func decide(after attempt: Attempt) async throws -> RetryDecision {
        let context = attempt.context
        let partition = start(attempt)
        if let open = attempt.error as? CircuitOpenError { context.record(.circuitOpen(host: open.partition)) }

        guard let reason = policy.classifier.retryReason(for: attempt) else {
            if let response = attempt.response {
                if (200..<400).contains(response.status) {
                    policy.budget?.attemptSucceeded(partition: partition, lastWithdrawal: lastWithdrawal)
                }
            } else {
                context.record(.gaveUp(attempts: attempt.number, reason: .notRetryable))
            }
            return .stop
        }
        policy.budget?.attemptFailed(partition: partition, reason: reason)
        if !policy.idempotency.allowsRetry(of: attempt.request, after: attempt.error), !pastLimits(attempt) {
            context.record(.gaveUp(attempts: attempt.number, reason: .notIdempotent))
            return .stop
        }
        var delay = policy.jitter.apply(
            to: policy.backoff.delay(forRetry: attempt.number), previous: previousDelay,
            backoff: policy.backoff, random: policy.random)
        var usedHint = false
        if policy.honorsRetryAfter, !pastLimits(attempt), let field = attempt.response?.headers["Retry-After"],
            let hint = RetryAfter.parse(field, now: policy.now())
        {
            if let deadline = policy.deadline, attempt.elapsed + hint >= deadline {
                context.record(.deadlineExceeded(elapsed: attempt.elapsed, deadline: deadline))
                context.record(.gaveUp(attempts: attempt.number, reason: .deadline))
                return .fail(
                    RetryError.retryAfterExceedsDeadline(
                        hint: hint, remaining: max(.zero, deadline - attempt.elapsed),
                        response: attempt.response))
            }
            if hint > policy.maxRetryAfter {
                context.record(.gaveUp(attempts: attempt.number, reason: .retryAfterTooLong))
                return .fail(RetryError.retryAfterTooLong(hint: hint, limit: policy.maxRetryAfter, response: attempt.response))
            }
            if hint >= delay {
                delay = hint
                usedHint = true
            }
        }
        let decision = admit(attempt, reason: reason, delay: delay, partition: partition)
        if case .retry = decision {
            previousDelay = delay
            context.record(.retryScheduled(attempt: attempt.number, delay: delay, reason: reason, usedRetryAfter: usedHint))
        }
        return decision
    }

    /// Admits an attempt a composing retrier asks for (a credential refresh) within the limits:
    /// attempts, deadline and budget — as for any retry, but with no classification or backoff.
    public mutating func admit(extraAttemptAfter attempt: Attempt, reason: RetryReason, delay: Duration) async throws -> RetryDecision {
        let partition = start(attempt)
        return admit(attempt, reason: reason, delay: max(.zero, delay), partition: partition)
    }

    /// The budget partition of `attempt`'s request; tells the budget the request started, once.
    private mutating func start(_ attempt: Attempt) -> String {
        let partition = policy.partitioning.partition(of: attempt.request)
        if !started {
            started = true
            policy.budget?.requestStarted(partition: partition)
        }
        return partition
    }

    /// Whether `attempt` already used up the attempts or the deadline (then those limits, not
    /// idempotency or a hint, say why the request stops).
    private func pastLimits(_ attempt: Attempt) -> Bool {
        attempt.number >= policy.maxAttempts || policy.deadline.map { attempt.elapsed >= $0 } == true
    }

    /// One more attempt after `delay`, unless the deadline, the attempts or the budget refuse.
    private mutating func admit(_ attempt: Attempt, reason: RetryReason, delay: Duration, partition: String) -> RetryDecision {
        let context = attempt.context
        func giveUp(_ why: GiveUpReason) { context.record(.gaveUp(attempts: attempt.number, reason: why)) }
        if let deadline = policy.deadline, attempt.elapsed >= deadline {
            context.record(.deadlineExceeded(elapsed: attempt.elapsed, deadline: deadline))
            giveUp(.deadline)
            // An attempt the deadline cut short has no outcome worth returning.
            return attempt.response == nil ? .fail(RetryError.deadlineExceeded(deadline: deadline, attempts: attempt.number)) : .stop
        }
        if attempt.number >= policy.maxAttempts {
            giveUp(.maxAttempts)
            return .stop
        }
        if let deadline = policy.deadline, attempt.elapsed + delay >= deadline {
            context.record(.deadlineExceeded(elapsed: attempt.elapsed, deadline: deadline))
            giveUp(.deadline)
            return .stop
        }
        if let budget = policy.budget {
            guard let taken = budget.withdraw(partition: partition, reason: reason) else {
                context.record(.retryBudgetExhausted(host: partition))
                giveUp(.budgetExhausted)
                return .stop
            }
            lastWithdrawal = taken
        }
        return .retry(after: delay)
    }
}

/// Makes a ``BackoffRetrier`` per request from one ``RetryPolicy``; the policy's budget is
/// shared by all of them.
public struct BackoffRetrierFactory: RetrierFactory {
    /// The configuration every retrier gets.
    public let policy: RetryPolicy

    /// Creates a factory.
    public init(policy: RetryPolicy = RetryPolicy()) {
        self.policy = policy
    }

    /// A new retrier.
    public func makeRetrier(for request: URLRequest) -> any Retrier {
        BackoffRetrier(policy: policy)
    }

    /// This factory, also retrying `statuses` (on top of the ones it retries already).
    ///
    /// ```swift
    /// .exponentialBackoff(maxAttempts: 4).retrying(statuses: 425)
    /// ```
    public func retrying(statuses: Int...) -> BackoffRetrierFactory {
        var policy = policy
        policy.classifier.retryableStatuses.formUnion(statuses)
        return BackoffRetrierFactory(policy: policy)
    }
}

extension RetrierFactory where Self == BackoffRetrierFactory {
    /// Retries with a ``RetryPolicy``.
    public static func policy(_ policy: RetryPolicy) -> BackoffRetrierFactory {
        BackoffRetrierFactory(policy: policy)
    }

    /// Exponential backoff: `base × multiplier^(n−1)` capped at `cap`, then jittered.
    ///
    /// ```swift
    /// Pipeline(transport: transport, retrierFactory: .exponentialBackoff(maxAttempts: 5, deadline: .seconds(10)))
    /// // the default statuses and 425 Too Early:
    /// .exponentialBackoff(retryableStatuses: RetryClassifier.defaultStatuses.union([425]))
    /// ```
    ///
    /// - Parameters:
    ///   - base: the wait before the first retry, before jitter.
    ///   - multiplier: what each further wait is multiplied by.
    ///   - cap: the longest wait, before jitter.
    ///   - jitter: how each wait is randomized (``Jitter/full`` by default: anywhere from zero to it).
    ///   - maxAttempts: attempts in all, the first included: `1...10` (``RetryPolicy/attemptLimit``);
    ///     a value outside is held to that range and listed in ``RetryPolicy/adjustments``.
    ///   - deadline: the most time all attempts and waits together may take (``RetryPolicy/deadline``);
    ///     none by default.
    ///   - attemptTimeout: the most time one attempt may take (``RetryPolicy/attemptTimeout``); none
    ///     by default.
    ///   - retryableStatuses: the statuses worth another attempt (``RetryClassifier/defaultStatuses``
    ///     by default); transport failures are classified as ``RetryClassifier/default`` does.
    ///   - budget: what retries draw on: ``RetryQuota/shared`` (per process, per host) by default.
    ///   - random: where the jitter comes from (inject a ``SeededRandomSource`` in tests).
    public static func exponentialBackoff(
        base: Duration = .milliseconds(100), multiplier: Double = 2, cap: Duration = .seconds(10),
        jitter: Jitter = .full, maxAttempts: Int = 3, deadline: Duration? = nil, attemptTimeout: Duration? = nil,
        retryableStatuses: Set<Int> = RetryClassifier.defaultStatuses,
        budget: (any RetryBudget)? = RetryQuota.shared, random: any RandomSource = SystemRandomSource()
    ) -> BackoffRetrierFactory {
        var policy = RetryPolicy(
            maxAttempts: maxAttempts, backoff: .exponential(base: base, multiplier: multiplier, cap: cap),
            jitter: jitter)
        policy.deadline = deadline
        policy.attemptTimeout = attemptTimeout
        policy.classifier.retryableStatuses = retryableStatuses
        policy.budget = budget
        policy.random = random
        return BackoffRetrierFactory(policy: policy)
    }

    /// The same delay before every retry (jittered as asked; none by default).
    public static func constantBackoff(
        _ delay: Duration, jitter: Jitter = .none, maxAttempts: Int = 3,
        deadline: Duration? = nil
    ) -> BackoffRetrierFactory {
        var policy = RetryPolicy(maxAttempts: maxAttempts, backoff: .constant(delay), jitter: jitter)
        policy.deadline = deadline
        return BackoffRetrierFactory(policy: policy)
    }

    /// Delays growing by `increment` each retry, capped at `cap`.
    public static func linearBackoff(
        base: Duration, increment: Duration, cap: Duration = .seconds(30),
        jitter: Jitter = .none, maxAttempts: Int = 3,
        deadline: Duration? = nil
    ) -> BackoffRetrierFactory {
        var policy = RetryPolicy(
            maxAttempts: maxAttempts, backoff: .linear(base: base, increment: increment, cap: cap),
            jitter: jitter)
        policy.deadline = deadline
        return BackoffRetrierFactory(policy: policy)
    }
}
