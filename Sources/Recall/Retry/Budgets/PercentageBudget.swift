/// A retry budget as a share of recent traffic (Finagle's `RetryBudget`), per partition
/// (host): within a sliding window, retries may add at most `percent` of the requests started,
/// plus a reserve of `minRetriesPerSecond` × the window so that low-traffic clients can still
/// retry. Finagle's defaults are a 10 s window, 20 % and 10 retries per second; Recall keeps
/// 10 s and 20 % with a reserve of 1 per second.
///
/// Requests and retries are counted in ten slices of the window (Finagle's `WindowedAdder`):
/// each call costs O(1) however many are in the window, and hosts never wait for one another's
/// locks.
public final class PercentageBudget: RetryBudget {
    /// The share of requests that may be retried, such as 0.2 for 20 %.
    public let percent: Double
    /// Retries allowed per second of the window regardless of traffic.
    public let minRetriesPerSecond: Double
    /// How far back requests and retries count.
    public let window: Duration

    struct Counts: WindowTally {
        var requests = 0
        var retries = 0
        static let zero = Counts()
        mutating func add(_ other: Counts) { requests += other.requests; retries += other.retries }
        mutating func subtract(_ other: Counts) { requests -= other.requests; retries -= other.retries }
    }

    private final class Partition: Sendable {
        let counts: Locked<SlidingWindow<Counts>>
        init(window: Duration) { counts = Locked(SlidingWindow(.time(window, slices: 10))) }
    }

    private let time: TimeSource
    private let partitions: PartitionTable<Partition>

    /// Creates a budget measuring its window on `clock`. Negative or non-finite shares count
    /// as zero; the window is at least one second.
    public init(
        percent: Double = 0.2, minRetriesPerSecond: Double = 1, window: Duration = .seconds(10),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.percent = percent.finiteOrZero
        self.minRetriesPerSecond = minRetriesPerSecond.finiteOrZero
        let window = max(.seconds(1), window)
        self.window = window
        let time = TimeSource(clock)
        self.time = time
        partitions = PartitionTable(isIdle: { partition in
            let now = time.now()
            return partition.counts.withLock { $0.total(at: now) == .zero }
        }) { _ in Partition(window: window) }
    }

    /// Counts a request in the window.
    public func requestStarted(partition: String) {
        let now = time.now()
        partitions.value(for: partition).counts.withLock { $0.add(Counts(requests: 1), at: now) }
    }

    /// Allows a retry while retries in the window stay within the share (it costs no tokens).
    public func withdraw(partition: String, reason: RetryReason) -> Double? {
        let now = time.now()
        return partitions.value(for: partition).counts.withLock { counts in
            let total = counts.total(at: now)
            let allowed = minRetriesPerSecond * window.seconds + percent * Double(total.requests)
            guard Double(total.retries + 1) <= allowed else { return nil }
            counts.add(Counts(retries: 1), at: now)
            return 0
        }
    }
}
