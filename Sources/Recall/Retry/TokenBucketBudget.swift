
/// A retry budget as a token bucket per partition (the AWS SDKs' "standard" retry quota):
/// each retry takes `retryCost` tokens, each success gives back `successRefund`, up to
/// `capacity`. When a partition's bucket cannot pay for a retry, failures are returned
/// without retrying until successes refill it.
///
/// With the defaults (100 tokens, 5 per retry, 1 back per success), a total outage costs at
/// most 20 retries per host before retries stop.
public final class TokenBucketBudget: RetryBudget {
    /// The most tokens a bucket holds; buckets start full.
    public let capacity: Double
    /// Tokens one retry takes.
    public let retryCost: Double
    /// Tokens one success gives back.
    public let successRefund: Double

    private let buckets = Locked<[String: Double]>([:])

    /// Creates a budget.
    public init(capacity: Double = 100, retryCost: Double = 5, successRefund: Double = 1) {
        self.capacity = max(0, capacity)
        self.retryCost = max(0, retryCost)
        self.successRefund = max(0, successRefund)
    }

    /// Nothing to do: a token bucket charges retries, not requests.
    public func requestStarted(partition: String) {}

    /// Takes `retryCost` tokens if the bucket holds them.
    public func withdraw(partition: String) -> Bool {
        buckets.withLock { buckets in
            let tokens = buckets[partition] ?? capacity
            guard tokens >= retryCost else { return false }
            buckets[partition] = tokens - retryCost
            return true
        }
    }

    /// Gives back `successRefund` tokens, up to `capacity`.
    public func recordSuccess(partition: String) {
        buckets.withLock { buckets in
            if let tokens = buckets[partition] { buckets[partition] = min(capacity, tokens + successRefund) }
        }
    }

    /// The tokens left in `partition`'s bucket.
    public func tokens(partition: String) -> Double {
        buckets.withLock { $0[partition] ?? capacity }
    }
}
