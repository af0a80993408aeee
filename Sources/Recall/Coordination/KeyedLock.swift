/// An asynchronous mutual exclusion per key: the cache's read-modify-write of a record and
/// its removals take turns, so a removal is never undone by a write that read the record
/// before it. Waiters are served in order; uncontended, `lock` and `unlock` are one short lock
/// section each and never suspend.
final class KeyedLock: Sendable {
    /// The keys held, each with the tasks waiting for it.
    /// Keyed with the hash worked out once, outside the lock (the cache passes the hash its
    /// ``CacheLocator/Location`` carries; a `String` key is hashed before the lock is taken).
    /// In stripes (``StripedTable``): stores of different keys rarely share a lock. Unsafe
    /// continuations (a pointer each): every store unlocks, and an optional checked continuation
    /// is copied through generic value witnesses; each waiter here is resumed exactly once, by
    /// the ``unlock(_:)`` that hands it the lock (or at once, when the key came free meanwhile).
    private let held = StripedTable<[UnsafeContinuation<Void, Never>]>()

    /// Takes the lock of `key`, waiting while another task holds it. Pair with ``unlock(_:)``.
    func lock(_ key: HashedKey) async {
        if !tryLock(key) { await wait(for: key) }
    }

    /// Takes the lock of `key` if nobody holds it, without waiting: `false` when it is held.
    func tryLock(_ key: HashedKey) -> Bool {
        held.withLock(key) { held in
            // One probe when the key is free (the usual case); put back what was there otherwise.
            if let waiters = held.updateValue([], forKey: key) {
                held[key] = waiters
                return false
            }
            return true
        }
    }

    /// Whether a task holds the lock of `key` right now.
    func isHeld(_ key: HashedKey) -> Bool {
        held.withLock(key) { $0[key] != nil }
    }

    /// How many tasks wait for the lock of `key` (for tests).
    func waiters(for key: HashedKey) -> Int {
        held.withLock(key) { $0[key]?.count ?? 0 }
    }

    /// Waits until nobody holds the lock of `key` (taking it in turn and handing it on at once).
    func waitUntilFree(_ key: HashedKey) async {
        guard isHeld(key) else { return }
        await lock(key)
        unlock(key)
    }

    /// Releases the lock of `key`, handing it to the first waiter if there is one.
    func unlock(_ key: HashedKey) {
        let next = held.withLock(key) { held -> UnsafeContinuation<Void, Never>? in
            // One probe when nobody waits (the usual case): the key leaves the table.
            guard var waiters = held.removeValue(forKey: key), !waiters.isEmpty else { return nil }
            let first = waiters.removeFirst()
            held[key] = waiters
            return first
        }
        next?.resume()
    }

    private func wait(for key: HashedKey) async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let takenNow = held.withLock(key) { held -> Bool in
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

    /// Takes the lock of `key` (hashed now), waiting while another task holds it.
    func lock(_ key: String) async { await lock(HashedKey(key)) }

    /// Releases the lock of `key` (hashed now).
    func unlock(_ key: String) { unlock(HashedKey(key)) }
}
