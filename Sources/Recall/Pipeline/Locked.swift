#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a lock: the one way Recall shares mutable state between tasks.
///
/// It is a `pthread_mutex_t`, not `Synchronization.Mutex`, on purpose: on Linux `Mutex` is
/// built on futexes inside the (uninstrumented) standard library, so ThreadSanitizer cannot see
/// it and reports every access it guards as a race; a pthread mutex is intercepted, so
/// `swift test --sanitize=thread` finds real races only. Uncontended, both cost about the same.
package final class Locked<State>: @unchecked Sendable {
    private var state: State
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// Creates the lock around `state`.
    package init(_ state: State) {
        self.state = state
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Runs `body` with exclusive access if the lock is free right now; returns nil without
    /// waiting when another thread holds it (for work that may be skipped under contention).
    package func withLockIfAvailable<Result>(_ body: (inout State) throws -> Result) rethrows -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
