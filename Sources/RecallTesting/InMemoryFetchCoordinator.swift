import Recall

/// A ``/Recall/FetchCoordinator`` inside one process: several ``/Recall/HTTPCache``s over one storage stand for
/// the replicas of a fleet, so a test can check cross-process coalescing without processes.
/// Claims lapse after ``leaseTime`` when they are not released (a holder that crashed), like a
/// database's lease rows — measured on the clock it is given: a ``ManualClock`` lets a test say
/// when a claim lapses instead of racing real time.
public final class InMemoryFetchCoordinator: FetchCoordinator {
    private struct State {
        /// When each claim lapses, as time since the coordinator was made.
        var claims: [String: Duration] = [:]
        var granted = 0
        var refused = 0
    }

    private let state = Locked(State())
    /// How long a claim holds when it is not released.
    public let leaseTime: Duration
    /// The time since the coordinator was made, on its clock.
    private let elapsed: @Sendable () -> Duration

    /// Creates a coordinator whose claims lapse after `leaseTime` of real time.
    public convenience init(leaseTime: Duration = .seconds(5)) {
        self.init(leaseTime: leaseTime, clock: ContinuousClock())
    }

    /// Creates a coordinator whose claims lapse after `leaseTime` measured on `clock`.
    public init<C: Clock>(leaseTime: Duration = .seconds(5), clock: C) where C.Duration == Duration {
        self.leaseTime = leaseTime
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
    }

    /// Claims `name` unless a claim on it holds.
    public func claim(_ name: String) async -> Bool {
        let now = elapsed()
        return state.withLock { state in
            if let until = state.claims[name], until > now {
                state.refused += 1
                return false
            }
            state.claims[name] = now + leaseTime
            state.granted += 1
            return true
        }
    }

    /// Waits (checking every millisecond of real time) until `name` is released, its claim
    /// lapses on the coordinator's clock, or the task is cancelled.
    public func wait(for name: String) async {
        while !Task.isCancelled, let until = state.withLock({ $0.claims[name] }), until > elapsed() {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Releases `name`.
    public func release(_ name: String) async {
        _ = state.withLock { $0.claims.removeValue(forKey: name) }
    }

    /// Claims granted and refused so far.
    public var counts: (granted: Int, refused: Int) {
        state.withLock { ($0.granted, $0.refused) }
    }

    /// Claims held (released or not lapsed) right now.
    public var held: Int {
        let now = elapsed()
        return state.withLock { $0.claims.values.filter { $0 > now }.count }
    }
}
