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
    /// Its own allocation, read in place (see ``lend(_:to:)``).
    private let state: UnsafeMutablePointer<State>
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    /// Creates the lock around `state`.
    package init(_ state: State) {
        self.state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        self.state.initialize(to: state)
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
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Runs `body` with shared, read-only access; other readers may run at the same time.
    package func read<Result>(_ body: (borrowing State) throws -> Result) rethrows -> Result {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try Self.lend(&state.pointee, to: body)
    }

    /// Hands `state` to `body` as a borrow, in place. Passing `state.pointee` directly would copy
    /// it first: for a dictionary, a retain and a release of its storage on every read, an
    /// atomic write to one cache line that every core's readers share (the cores then take turns
    /// owning that line). Going through an `inout` parameter lends the memory itself; nothing is
    /// written, so readers sharing the lock still only read.
    private static func lend<Result>(_ state: inout State, to body: (borrowing State) throws -> Result) rethrows -> Result {
        try body(state)
    }

    /// Runs `body` with exclusive access.
    package func write<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&state.pointee)
    }
}
