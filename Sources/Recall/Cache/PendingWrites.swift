import Synchronization

/// Counts the cache's stores under way after their answers were returned (write-behind): read
/// with one atomic load on every lookup, and waited for until none is left by
/// ``HTTPCache/flush()``.
final class PendingWrites: Sendable {
    private let count = Atomic<Int>(0)
    /// Tasks waiting until ``count`` is zero.
    private let waiters = Locked<[CheckedContinuation<Void, Never>]>([])

    /// Whether no write is under way (an acquiring load: a write that ended is seen whole).
    var isEmpty: Bool { count.load(ordering: .acquiring) == 0 }

    /// Counts one more write under way.
    func begin() {
        count.add(1, ordering: .relaxed)
    }

    /// Counts a write as landed, waking the waiters when it was the last one.
    func end() {
        guard count.subtract(1, ordering: .releasing).newValue == 0 else { return }
        let waiting = waiters.withLock { waiters in
            defer { waiters.removeAll() }
            return waiters
        }
        waiting.forEach { $0.resume() }
    }

    /// Waits until no write is under way (returns at once when none is).
    func waitUntilEmpty() async {
        guard !isEmpty else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Checked under the lock that `end` takes after its last decrement: either this
            // sees zero, or `end` sees this waiter.
            let now = waiters.withLock { waiters -> Bool in
                if count.load(ordering: .acquiring) == 0 { return true }
                waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
