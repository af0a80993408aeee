/// The AWS SDKs' **standard retry quota** ("standard" retry mode), per partition (host): a
/// bucket of `capacity` tokens, full at first; a retry takes `retryCost` tokens (`timeoutCost`
/// after a timeout); when the bucket cannot pay, failures are returned without retrying. An
/// attempt answered successfully gives back what the request's last retry took, or
/// `successRefund` when it did not retry; the bucket never holds more than `capacity`.
///
/// The defaults are AWS's: 500 tokens, 5 per retry, 10 per retry after a timeout, 1 back per
/// success without retry. A total outage of one host therefore costs at most 100 retries (50
/// after timeouts) before retries to it stop; they resume as successes refill the bucket.
/// Other hosts keep their own buckets. Tokens are counted per call in O(1), and hosts never
/// wait for one another's locks.
public final class RetryQuota: RetryBudget {
    /// The most tokens a bucket holds; buckets start full.
    public let capacity: Double
    /// Tokens one retry takes.
    public let retryCost: Double
    /// Tokens one retry after a timeout takes.
    public let timeoutCost: Double
    /// Tokens given back by a success that needed no retry.
    public let successRefund: Double

    private final class Bucket: Sendable {
        let tokens: Locked<Double>
        init(_ tokens: Double) { self.tokens = Locked(tokens) }
    }

    private let buckets: PartitionTable<Bucket>

    /// The quota every ``RetryPolicy`` and `.exponentialBackoff(...)` uses unless given another:
    /// one per process, with a bucket per host. Shared so that the budget holds however a
    /// factory is written — a `retrierFactory` computed anew for every request still draws on
    /// the same buckets — and so that every client of one process talking to a failing host
    /// stops retrying together. Give a policy its own `RetryQuota()` to keep its retries apart.
    public static let shared = RetryQuota()

    /// Creates a quota. Negative or non-finite numbers count as zero (a capacity of zero never
    /// allows a retry; a cost of zero always does).
    public init(capacity: Double = 500, retryCost: Double = 5, timeoutCost: Double = 10, successRefund: Double = 1) {
        let capacity = capacity.finiteOrZero
        self.capacity = capacity
        self.retryCost = retryCost.finiteOrZero
        self.timeoutCost = timeoutCost.finiteOrZero
        self.successRefund = successRefund.finiteOrZero
        buckets = PartitionTable(isIdle: { $0.tokens.withLock { $0 >= capacity } }) { _ in Bucket(capacity) }
    }

    /// Takes `retryCost` (or `timeoutCost` after a timeout) if the bucket holds it.
    public func withdraw(partition: String, reason: RetryReason) -> Double? {
        let cost = reason == .transport(.timedOut) ? timeoutCost : retryCost
        return buckets.value(for: partition).tokens.withLock { tokens in
            guard tokens >= cost else { return nil }
            tokens -= cost
            return cost
        }
    }

    /// Gives back the last retry's tokens, or `successRefund`, up to `capacity`.
    public func attemptSucceeded(partition: String, lastWithdrawal: Double?) {
        let refund = lastWithdrawal ?? successRefund
        guard let bucket = buckets.existing(partition) else { return }  // a full bucket stays full
        bucket.tokens.withLock { $0 = min(capacity, $0 + refund) }
    }

    /// The tokens left in `partition`'s bucket.
    public func tokens(partition: String) -> Double {
        buckets.existing(partition)?.tokens.withLock { $0 } ?? capacity
    }
}

extension Double {
    /// The value when finite and not negative, else zero.
    var finiteOrZero: Double { isFinite ? Swift.max(0, self) : 0 }
}
