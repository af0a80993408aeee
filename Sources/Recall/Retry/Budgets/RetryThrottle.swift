/// gRPC's **retry throttling** (gRFC A6), per partition (host): a token count starts at
/// `maxTokens`; every attempt that fails in a way a retry could fix takes 1 token (down to 0),
/// every attempt answered successfully gives back `tokenRatio`; a request may retry only while
/// the count is **above half** of `maxTokens`. The reserve below half gives hysteresis: once
/// throttled, a host must see `maxTokens / 2 / tokenRatio` successes' worth of recovery before
/// retries resume. Retries themselves cost nothing beyond the failures that caused them.
///
/// The defaults are gRFC A6's example configuration (`maxTokens: 10`, `tokenRatio: 0.1`): after
/// about 5 failures in a row, a host's requests are sent once and not retried. As in gRPC,
/// `maxTokens` is held to `1...1000` and `tokenRatio` to `0.001...1`, kept to three decimals.
public final class RetryThrottle: RetryBudget {
    /// The most tokens (and the starting count).
    public let maxTokens: Double
    /// Tokens one success gives back.
    public let tokenRatio: Double

    private final class Count: Sendable {
        let tokens: Locked<Double>
        init(_ tokens: Double) { self.tokens = Locked(tokens) }
    }

    private let counts: PartitionTable<Count>

    /// Creates a throttle (values outside gRPC's limits are held to them).
    public init(maxTokens: Double = 10, tokenRatio: Double = 0.1) {
        let maxTokens = maxTokens.isFinite ? min(max(maxTokens, 1), 1_000) : 10
        self.maxTokens = maxTokens
        self.tokenRatio = tokenRatio.isFinite ? (min(max(tokenRatio, 0.001), 1) * 1_000).rounded() / 1_000 : 0.1
        counts = PartitionTable(isIdle: { $0.tokens.withLock { $0 >= maxTokens } }) { _ in Count(maxTokens) }
    }

    /// Takes one token.
    public func attemptFailed(partition: String, reason: RetryReason) {
        counts.value(for: partition).tokens.withLock { $0 = max(0, $0 - 1) }
    }

    /// Allows the retry while the count is above half of `maxTokens` (it costs nothing more).
    public func withdraw(partition: String, reason: RetryReason) -> Double? {
        counts.value(for: partition).tokens.withLock { $0 > maxTokens / 2 } ? 0 : nil
    }

    /// Gives back `tokenRatio`, up to `maxTokens`.
    public func attemptSucceeded(partition: String, lastWithdrawal: Double?) {
        guard let count = counts.existing(partition) else { return }
        count.tokens.withLock { $0 = min(maxTokens, $0 + tokenRatio) }
    }

    /// The token count of `partition`.
    public func tokens(partition: String) -> Double {
        counts.existing(partition)?.tokens.withLock { $0 } ?? maxTokens
    }
}
