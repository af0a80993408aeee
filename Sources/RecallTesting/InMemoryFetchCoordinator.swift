import Recall

/// A ``FetchCoordinator`` inside one process: several ``HTTPCache``s over one storage stand for
/// the replicas of a fleet, so a test can check cross-process coalescing without processes.
/// Claims lapse after ``leaseTime`` when they are not released (a holder that crashed), like a
/// database's lease rows.
public final class InMemoryFetchCoordinator: FetchCoordinator {
    private struct State {
        var claims: [String: ContinuousClock.Instant] = [:]
        var granted = 0
        var refused = 0
    }

    private let state = Locked(State())
    /// How long a claim holds when it is not released.
    public let leaseTime: Duration

    /// Creates a coordinator whose claims lapse after `leaseTime`.
    public init(leaseTime: Duration = .seconds(5)) {
        self.leaseTime = leaseTime
    }

    /// Claims `name` unless a claim on it holds.
    public func claim(_ name: String) async -> Bool {
        let now = ContinuousClock.now
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

    /// Waits (checking every millisecond) until `name` is released, its claim lapses, or the
    /// task is cancelled.
    public func wait(for name: String) async {
        while !Task.isCancelled, let until = state.withLock({ $0.claims[name] }), until > ContinuousClock.now {
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
        let now = ContinuousClock.now
        return state.withLock { $0.claims.values.filter { $0 > now }.count }
    }
}
