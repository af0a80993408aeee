/// An asynchronous mutual exclusion per key: the cache's read-modify-write of a record and
/// its removals take turns, so a removal is never undone by a write that read the record
/// before it. Waiters are served in order; uncontended, it costs two short lock sections.
final class KeyedLock: Sendable {
    private let waiters = Locked<[String: [CheckedContinuation<Void, Never>]]>([:])

    /// Runs `body` while holding the lock of `key`.
    func withLock<T: Sendable>(_ key: String, _ body: () async -> T) async -> T {
        await acquire(key)
        let result = await body()
        release(key)
        return result
    }

    private func acquire(_ key: String) async {
        let acquired = waiters.withLock { waiters -> Bool in
            guard waiters[key] == nil else { return false }
            waiters[key] = []
            return true
        }
        guard !acquired else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = waiters.withLock { waiters -> Bool in
                guard waiters[key] != nil else {
                    waiters[key] = []
                    return true
                }
                waiters[key]!.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func release(_ key: String) {
        let next = waiters.withLock { waiters -> CheckedContinuation<Void, Never>? in
            guard var queue = waiters[key], !queue.isEmpty else {
                waiters[key] = nil
                return nil
            }
            let first = queue.removeFirst()
            waiters[key] = queue
            return first
        }
        next?.resume()
    }
}
