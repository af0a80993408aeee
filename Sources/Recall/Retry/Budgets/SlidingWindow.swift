/// What a sliding window adds up: counts that can be added and taken away again.
protocol WindowTally: Sendable, Equatable {
    /// Nothing counted.
    static var zero: Self { get }
    /// Adds `other`'s counts.
    mutating func add(_ other: Self)
    /// Takes `other`'s counts away (they left the window).
    mutating func subtract(_ other: Self)
}

/// Counts over a sliding window, in O(1) per call whatever the traffic (the bucketed windows of
/// Finagle's `WindowedAdder` and resilience4j's aggregations):
/// - ``Kind/time(_:slices:)``: the window is cut into slices of time; each slice keeps its own
///   totals, a running total is kept, and a slice that leaves the window is subtracted whole —
///   so the window spans between `slices − 1` and `slices` slices;
/// - ``Kind/count(_:)``: the last `n` outcomes in a ring, with a running total.
struct SlidingWindow<Tally: WindowTally>: Sendable {
    /// The shape of a window.
    enum Kind: Sendable, Hashable {
        /// The outcomes of the last `duration`, counted in `slices` slices.
        case time(Duration, slices: Int)
        /// The last `n` outcomes.
        case count(Int)
    }

    private let sliceLength: Duration?
    /// Count window: the most outcomes kept. The ring grows to it as outcomes come, so a window
    /// of a million outcomes for a host that sees ten costs ten slots.
    private let capacity: Int
    private var ring: [Tally]
    /// Time window: the number of the newest slice since time zero. Count window: the next slot.
    private var position: Int64 = 0
    private(set) var total = Tally.zero

    /// An empty window of `kind` (at least one slice or slot; a time window of at least 1 ms).
    init(_ kind: Kind) {
        switch kind {
        case .time(let duration, let slices):
            let count = min(max(1, slices), 1_000)
            ring = Array(repeating: .zero, count: count)
            capacity = count
            sliceLength = max(.milliseconds(1), duration) / count
        case .count(let n):
            ring = []
            capacity = min(max(1, n), 1_000_000)
            sliceLength = nil
        }
    }

    /// The total of the window at `now` (a time on the window's clock, never before the last).
    mutating func total(at now: Duration) -> Tally {
        advance(to: now)
        return total
    }

    /// Adds `tally` at `now`.
    mutating func add(_ tally: Tally, at now: Duration) {
        if sliceLength == nil {
            if ring.count < capacity {
                ring.append(tally)
            } else {
                let slot = Int(position)
                total.subtract(ring[slot])
                ring[slot] = tally
            }
            position = (position + 1) % Int64(capacity)
        } else {
            advance(to: now)
            ring[Int(position % Int64(ring.count))].add(tally)
        }
        total.add(tally)
    }

    /// Forgets everything counted (a count window in O(1): its slots are dropped, not cleared).
    mutating func reset() {
        if sliceLength == nil {
            ring.removeAll(keepingCapacity: true)
            position = 0
        } else {
            for index in ring.indices { ring[index] = .zero }
        }
        total = .zero
    }

    /// Drops the slices that left a time window by `now` (at most one pass over the ring).
    private mutating func advance(to now: Duration) {
        guard let sliceLength else { return }
        let ratio = max(0, now / sliceLength)
        let slice = ratio < 9e18 ? Int64(ratio) : Int64.max / 2
        guard slice > position else { return }
        let expired = min(slice - position, Int64(ring.count))
        for step in 1...expired {
            let index = Int((position + step) % Int64(ring.count))
            total.subtract(ring[index])
            ring[index] = .zero
        }
        position = slice
    }
}
