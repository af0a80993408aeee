#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value many threads read at once and few write: readers share the lock and never wait for
/// each other (no kernel wake-ups between readers, where a mutex would put one to sleep);
/// writers take it alone, and waiting writers go before new readers, so reads cannot starve a
/// store.
///
/// A `pthread_rwlock_t`, for the reason ``Locked`` is a pthread mutex: ThreadSanitizer sees it.
package final class ReadWriteLocked<State>: @unchecked Sendable {
    private var state: State
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    /// Creates the lock around `state`.
    package init(_ state: State) {
        self.state = state
        lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        #if canImport(Glibc)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        // glibc prefers readers by default: a steady stream of hits would hold off every store.
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
        #else
        pthread_rwlock_init(lock, nil) // Darwin's rwlock already lets waiting writers go first; musl's too
        #endif
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Runs `body` with shared, read-only access; other readers may run at the same time.
    package func read<Result>(_ body: (State) throws -> Result) rethrows -> Result {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(state)
    }

    /// Runs `body` with exclusive access.
    package func write<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&state)
    }
}
