/// An asynchronous mutual exclusion per key: the cache's read-modify-write of a record and
/// its removals take turns, so a removal is never undone by a write that read the record
/// before it. Waiters are served in order; uncontended, `lock` and `unlock` are one short lock
/// section each and never suspend.
final class KeyedLock: Sendable {
    /// The keys held, each with the tasks waiting for it.
    private let held = Locked<[String: [CheckedContinuation<Void, Never>]]>([:])

    /// Takes the lock of `key`, waiting while another task holds it. Pair with ``unlock(_:)``.
    func lock(_ key: String) async {
        if !tryLock(key) { await wait(for: key) }
    }

    /// Takes the lock of `key` if nobody holds it, without waiting: `false` when it is held.
    func tryLock(_ key: String) -> Bool {
        held.withLock { held in
            guard held[key] == nil else { return false }
            held[key] = []
            return true
        }
    }

    /// Whether a task holds the lock of `key` right now.
    func isHeld(_ key: String) -> Bool {
        held.withLock { $0[key] != nil }
    }

    /// How many tasks wait for the lock of `key` (for tests).
    func waiters(for key: String) -> Int {
        held.withLock { $0[key]?.count ?? 0 }
    }

    /// Waits until nobody holds the lock of `key` (taking it in turn and handing it on at once).
    func waitUntilFree(_ key: String) async {
        guard isHeld(key) else { return }
        await lock(key)
        unlock(key)
    }

    /// Releases the lock of `key`, handing it to the first waiter if there is one.
    func unlock(_ key: String) {
        let next = held.withLock { held -> CheckedContinuation<Void, Never>? in
            guard var waiters = held[key], !waiters.isEmpty else {
                held[key] = nil
                return nil
            }
            let first = waiters.removeFirst()
            held[key] = waiters
            return first
        }
        next?.resume()
    }

    private func wait(for key: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let takenNow = held.withLock { held -> Bool in
                guard held[key] != nil else {
                    held[key] = []
                    return true
                }
                held[key]!.append(continuation)
                return false
            }
            if takenNow { continuation.resume() }
        }
    }
}
