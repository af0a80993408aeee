
/// A retry budget as a share of recent traffic (Finagle's `RetryBudget`): within a sliding
/// window, retries may add at most `percent` of the requests started, plus a small reserve
/// of `minRetriesPerSecond` so that low-traffic clients can still retry.
public final class PercentageBudget: RetryBudget {
    /// The share of requests that may be retried, such as 0.2 for 20 %.
    public let percent: Double
    /// Retries allowed per second of the window regardless of traffic.
    public let minRetriesPerSecond: Double
    /// How far back requests and retries count.
    public let window: Duration

    private struct Counts {
        var requests: [(at: Duration, count: Int)] = []
        var retries: [Duration] = []
    }

    private let time: TimeSource
    private let partitions = Locked<[String: Counts]>([:])

    /// Creates a budget measuring its window on `clock`.
    public init(percent: Double = 0.2, minRetriesPerSecond: Double = 1, window: Duration = .seconds(10),
                clock: any Clock<Duration> = ContinuousClock()) {
        self.percent = max(0, percent)
        self.minRetriesPerSecond = max(0, minRetriesPerSecond)
        self.window = max(.seconds(1), window)
        self.time = TimeSource(clock)
    }

    /// Counts a request in the window.
    public func requestStarted(partition: String) {
        let now = time.now()
        partitions.withLock { partitions in
            var counts = partitions[partition, default: Counts()]
            prune(&counts, now: now)
            if let last = counts.requests.last, last.at == now {
                counts.requests[counts.requests.count - 1].count += 1
            } else {
                counts.requests.append((now, 1))
            }
            partitions[partition] = counts
        }
    }

    /// Allows a retry while retries in the window stay within the share.
    public func withdraw(partition: String) -> Bool {
        let now = time.now()
        return partitions.withLock { partitions in
            var counts = partitions[partition, default: Counts()]
            prune(&counts, now: now)
            let requests = counts.requests.reduce(0) { $0 + $1.count }
            let allowed = minRetriesPerSecond * window.seconds + percent * Double(requests)
            let granted = Double(counts.retries.count + 1) <= allowed
            if granted { counts.retries.append(now) }
            partitions[partition] = counts
            return granted
        }
    }

    /// Nothing to do: the share follows traffic by itself.
    public func recordSuccess(partition: String) {}

    private func prune(_ counts: inout Counts, now: Duration) {
        let horizon = now - window
        counts.requests.removeAll { $0.at <= horizon }
        counts.retries.removeAll { $0 <= horizon }
    }
}
