/// Something that happened while a ``Pipeline`` handled a request: what the cache did, each
/// attempt, each retry scheduled, budget exhaustion, deadlines and giving up. Read them from
/// ``RecallContext/events`` in a hook, or pass an observer to the pipeline.
public enum RecallEvent: Sendable, Hashable, CustomStringConvertible {
    /// An attempt is about to be sent (1 for the first).
    case attemptStarted(number: Int)
    /// An attempt was cut by Recall's per-attempt timeout.
    case attemptTimedOut(number: Int, after: Duration)
    /// A retry will be sent after `delay`.
    case retryScheduled(attempt: Int, delay: Duration, reason: RetryReason, usedRetryAfter: Bool)
    /// The retry budget for `host` was spent, so a retryable failure was not retried.
    case retryBudgetExhausted(host: String)
    /// The total deadline left no room for another wait and attempt.
    case deadlineExceeded(elapsed: Duration, deadline: Duration)
    /// The retrier stopped retrying a failed attempt.
    case gaveUp(attempts: Int, reason: GiveUpReason)
    /// A circuit breaker refused the attempt because `host`'s circuit is open.
    case circuitOpen(host: String)
    /// What an ``HTTPCache`` did with the request (a hit, a miss, a revalidation…).
    case cache(CacheEvent)

    /// A short line, such as `retry #2 in 0.4 s (status 503)`.
    public var description: String {
        switch self {
        case .attemptStarted(let number): "attempt #\(number)"
        case .attemptTimedOut(let number, let after): "attempt #\(number) timed out after \(after.formatted)"
        case .retryScheduled(let attempt, let delay, let reason, let hint):
            "retry #\(attempt + 1) in \(delay.formatted) (\(reason)\(hint ? ", Retry-After" : ""))"
        case .retryBudgetExhausted(let host): "retry budget for \(host) exhausted"
        case .deadlineExceeded(let elapsed, let deadline): "deadline \(deadline.formatted) exceeded after \(elapsed.formatted)"
        case .gaveUp(let attempts, let reason): "gave up after \(attempts) attempt\(attempts == 1 ? "" : "s") (\(reason))"
        case .circuitOpen(let host): "circuit for \(host) open"
        case .cache(let event): event.description
        }
    }
}

/// Why an attempt failed in a way a retry might fix.
public enum RetryReason: Sendable, Hashable, CustomStringConvertible {
    /// The origin answered with this status (408, 429, 5xx…).
    case status(Int)
    /// The transport failed with this kind of error.
    case transport(TransportError.Code)
    /// A custom classifier's reason.
    case custom(String)

    /// Such as `status 503` or `transport connectionLost`.
    public var description: String {
        switch self {
        case .status(let status): "status \(status)"
        case .transport(let kind): "transport \(kind.name)"
        case .custom(let text): text
        }
    }
}

/// Why a retrier stopped retrying a failed attempt.
public enum GiveUpReason: String, Sendable, Hashable, CustomStringConvertible {
    /// The failure is not one a retry can fix (a 404, a TLS error…).
    case notRetryable
    /// `maxAttempts` attempts were made.
    case maxAttempts
    /// The request's method is not idempotent and nothing made a retry safe.
    case notIdempotent
    /// The shared retry budget was spent.
    case budgetExhausted
    /// The total deadline would pass before another attempt could finish.
    case deadline
    /// The server's `Retry-After` asked for a longer wait than the policy allows.
    case retryAfterTooLong

    /// The raw value.
    public var description: String { rawValue }
}

extension Duration {
    /// Seconds with up to three decimals, such as `0.25 s`.
    var formatted: String {
        "\((seconds * 1000).rounded() / 1000) s"
    }

    /// The duration in seconds as a `Double`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
