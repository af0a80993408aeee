import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The standard retrier: classify, check idempotency, attempts, deadline and budget, then
/// wait a jittered backoff (at least the `Retry-After` hint) and try again.
///
/// Every decision is recorded as a ``RecallEvent`` on the request's context.
public struct BackoffRetrier: Retrier {
    /// The configuration.
    public let policy: RetryPolicy
    private var previousDelay: Duration

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

    /// Decides whether and when to retry `attempt`.
    public mutating func decide(after attempt: Attempt) async throws -> RetryDecision {
        let context = attempt.context
        let partition = policy.partitioning.partition(of: attempt.request)
        if attempt.number == 1 { policy.budget?.requestStarted(partition: partition) }
        if let open = attempt.error as? CircuitOpenError { context.record(.circuitOpen(host: open.partition)) }

        guard let reason = policy.classifier.retryReason(for: attempt) else {
            if attempt.response != nil {
                policy.budget?.recordSuccess(partition: partition)
            } else {
                context.record(.gaveUp(attempts: attempt.number, reason: .notRetryable))
            }
            return .stop
        }
        func giveUp(_ why: GiveUpReason) {
            context.record(.gaveUp(attempts: attempt.number, reason: why))
        }
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
        if !policy.idempotency.allowsRetry(of: attempt.request, after: attempt.error) {
            giveUp(.notIdempotent)
            return .stop
        }

        var delay = policy.jitter.apply(to: policy.backoff.delay(forRetry: attempt.number), previous: previousDelay,
                                        backoff: policy.backoff, random: policy.random)
        var usedHint = false
        if policy.honorsRetryAfter, let field = attempt.response?.headers["Retry-After"],
           let hint = RetryAfter.parse(field, now: policy.now()) {
            let bounded = min(hint, policy.maxRetryAfter)
            if let deadline = policy.deadline, attempt.elapsed + bounded >= deadline {
                context.record(.deadlineExceeded(elapsed: attempt.elapsed, deadline: deadline))
                giveUp(.deadline)
                return .fail(RetryError.retryAfterExceedsDeadline(hint: hint, remaining: deadline - attempt.elapsed))
            }
            if bounded >= delay {
                delay = bounded
                usedHint = true
            }
        }
        if let deadline = policy.deadline, attempt.elapsed + delay >= deadline {
            context.record(.deadlineExceeded(elapsed: attempt.elapsed, deadline: deadline))
            giveUp(.deadline)
            return .stop
        }
        if let budget = policy.budget, !budget.withdraw(partition: partition) {
            context.record(.retryBudgetExhausted(host: partition))
            giveUp(.budgetExhausted)
            return .stop
        }
        previousDelay = delay
        context.record(.retryScheduled(attempt: attempt.number, delay: delay, reason: reason, usedRetryAfter: usedHint))
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
    /// ```
    public static func exponentialBackoff(
        base: Duration = .milliseconds(100), multiplier: Double = 2, cap: Duration = .seconds(10),
        jitter: Jitter = .full, maxAttempts: Int = 3, deadline: Duration? = nil, attemptTimeout: Duration? = nil,
        budget: (any RetryBudget)? = TokenBucketBudget(), random: any RandomSource = SystemRandomSource()
    ) -> BackoffRetrierFactory {
        var policy = RetryPolicy(maxAttempts: maxAttempts, backoff: .exponential(base: base, multiplier: multiplier, cap: cap),
                                 jitter: jitter)
        policy.deadline = deadline
        policy.attemptTimeout = attemptTimeout
        policy.budget = budget
        policy.random = random
        return BackoffRetrierFactory(policy: policy)
    }

    /// The same delay before every retry (jittered as asked; none by default).
    public static func constantBackoff(_ delay: Duration, jitter: Jitter = .none, maxAttempts: Int = 3,
                                       deadline: Duration? = nil) -> BackoffRetrierFactory {
        var policy = RetryPolicy(maxAttempts: maxAttempts, backoff: .constant(delay), jitter: jitter)
        policy.deadline = deadline
        return BackoffRetrierFactory(policy: policy)
    }

    /// Delays growing by `increment` each retry, capped at `cap`.
    public static func linearBackoff(base: Duration, increment: Duration, cap: Duration = .seconds(30),
                                     jitter: Jitter = .none, maxAttempts: Int = 3,
                                     deadline: Duration? = nil) -> BackoffRetrierFactory {
        var policy = RetryPolicy(maxAttempts: maxAttempts, backoff: .linear(base: base, increment: increment, cap: cap),
                                 jitter: jitter)
        policy.deadline = deadline
        return BackoffRetrierFactory(policy: policy)
    }
}
