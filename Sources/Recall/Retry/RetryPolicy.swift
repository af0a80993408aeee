import Foundation

/// The configuration of a ``BackoffRetrier``: how many attempts, how long to wait, what is
/// retryable, and the limits (deadline, budget) that keep retries from doing harm.
///
/// The defaults: 3 attempts; exponential backoff from 100 ms doubling up to 10 s with full
/// jitter; `Retry-After` honoured up to 60 s (a longer hint ends the request with
/// ``RetryError/retryAfterTooLong(hint:limit:response:)``); idempotent methods only; the AWS
/// standard retry quota per host, shared by the whole process (``RetryQuota/shared``); no
/// deadline and no per-attempt timeout.
/// See docs/retry.md for why.
public struct RetryPolicy: Sendable {
    /// Attempts in all, counting the first (not retries): `1...10`. A value outside is held to
    /// that range and the change is listed in ``adjustments``.
    public var maxAttempts: Int {
        get { storedMaxAttempts }
        set {
            storedMaxAttempts = min(max(1, newValue), Self.attemptLimit)
            adjustments.removeAll { $0.hasPrefix("maxAttempts") }
            if storedMaxAttempts != newValue {
                adjustments.append("maxAttempts \(newValue) is outside 1...\(Self.attemptLimit): \(storedMaxAttempts) attempts are made")
            }
        }
    }
    private var storedMaxAttempts = 3

    /// The values this policy was given that it could not use as they were, and what it uses
    /// instead (empty when every value was taken as given). Log it when you build a policy from
    /// configuration.
    public private(set) var adjustments: [String] = []

    /// The hard cap on ``maxAttempts``.
    public static let attemptLimit = 10

    /// How delays grow.
    public var backoff: Backoff = .exponential()
    /// How delays are randomized.
    public var jitter: Jitter = .full
    /// What is retryable.
    public var classifier: RetryClassifier = .default
    /// Which methods may be repeated.
    public var idempotency: IdempotencyPolicy = .default
    /// Whether a `Retry-After` field sets a lower bound on the next delay.
    public var honorsRetryAfter = true
    /// The longest `Retry-After` wait honoured: a longer hint ends the request at once with
    /// ``RetryError/retryAfterTooLong(hint:limit:response:)``, which carries the hint (a retry is
    /// never sent earlier than the server asked).
    public var maxRetryAfter: Duration = .seconds(60)
    /// The total time for all attempts and waits, measured from the first attempt; nil for none.
    public var deadline: Duration?
    /// The longest one attempt may take before Recall cuts it; nil for none.
    public var attemptTimeout: Duration?
    /// What retries draw on; nil to retry without limit. By default ``RetryQuota/shared``: one
    /// per process with a bucket per host, so it holds however many factories are made.
    public var budget: (any RetryBudget)? = RetryQuota.shared
    /// How requests share the budget.
    public var partitioning: Partitioning = .perHost
    /// The randomness of jitter.
    public var random: any RandomSource = SystemRandomSource()
    /// The current date, for `Retry-After` dates.
    public var now: @Sendable () -> Date = { Date() }

    /// Creates the default policy; change properties or use the parameters.
    public init(maxAttempts: Int = 3, backoff: Backoff = .exponential(), jitter: Jitter = .full) {
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.jitter = jitter
    }
}
