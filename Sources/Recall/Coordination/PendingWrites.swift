import Synchronization

/// The cache's stores under way after their answers were returned (write-behind).
///
/// - Every lookup asks ``mayHold(stripe:)`` of its key's stripe (``stripe(of:)``, worked out
///   once per URL and remembered with its key): one atomic load, so a hit takes no shared lock
///   while stores of other keys are pending (a stripe only says "maybe": the cache then checks
///   the key's write lock).
/// - ``waitForWritesBegun()`` waits for the writes begun before it was called, not for the
///   count to reach zero, so a flush under steady traffic returns.
final class PendingWrites: Sendable {
    private static let stripeCount = 64
    /// Pending writes per stripe of keys.
    private let stripes: InlineArray<64, Atomic<Int>> = InlineArray { _ in Atomic(0) }

    private struct State {
        var nextTicket: UInt64 = 0
        var outstanding: Set<UInt64> = []
        /// Waiting flushes: each waits until no ticket below its bound is outstanding.
        var waiters: [(bound: UInt64, continuation: CheckedContinuation<Void, Never>)] = []

        /// The lowest ticket not yet ended: every ticket below it has ended.
        var lowestOutstanding: UInt64 { outstanding.min() ?? .max }
    }

    private let state = Locked(State())

    /// The stripe of `key`: its length and three of its bytes, mixed (a collision only costs
    /// a needless check of the key's lock).
    static func stripe(of key: String) -> Int {
        let count = key.utf8.count
        let mixed =
            key.utf8.withContiguousStorageIfAvailable { bytes -> Int in
                guard count > 0 else { return 0 }
                return Int(bytes[count - 1]) &+ Int(bytes[count / 2]) &* 31 &+ Int(bytes[count / 3]) &* 961
            } ?? 0
        return (mixed &+ count &* 29_791) & (stripeCount - 1)
    }

    /// Whether a write of a key of `stripe` may be under way (an acquiring load: a write that
    /// ended is seen whole).
    func mayHold(stripe: Int) -> Bool {
        stripes[stripe].load(ordering: .acquiring) > 0
    }

    /// Counts a write of a key of `stripe` as under way; returns its ticket, for ``end(_:stripe:)``.
    func begin(stripe: Int) -> UInt64 {
        stripes[stripe].add(1, ordering: .relaxed)
        return state.withLock { state in
            defer { state.nextTicket += 1 }
            state.outstanding.insert(state.nextTicket)
            return state.nextTicket
        }
    }

    /// Counts the write of `ticket` (of a key of `stripe`) as landed, waking the flushes it was
    /// the last for.
    func end(_ ticket: UInt64, stripe: Int) {
        stripes[stripe].subtract(1, ordering: .releasing)
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.outstanding.remove(ticket)
            guard !state.waiters.isEmpty else { return [] }
            let lowest = state.lowestOutstanding
            let ready = state.waiters.filter { $0.bound <= lowest }
            state.waiters.removeAll { $0.bound <= lowest }
            return ready.map(\.continuation)
        }
        ready.forEach { $0.resume() }
    }

    /// How many calls of ``waitForWritesBegun()`` are waiting now (for tests).
    var waitingFlushes: Int { state.withLock { $0.waiters.count } }

    /// Waits until every write begun before this call has ended (returns at once when none is
    /// under way).
    func waitForWritesBegun() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.lowestOutstanding >= state.nextTicket { return true }
                state.waiters.append((state.nextTicket, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}
