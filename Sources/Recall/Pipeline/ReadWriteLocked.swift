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
    /// The state in a box that cannot be copied, in its own allocation: a reader borrows it in
    /// place (see ``lend(_:to:)``).
    private struct Box: ~Copyable { var state: State }
    private let box: UnsafeMutablePointer<Box>
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    /// Creates the lock around `state`.
    package init(_ state: State) {
        box = UnsafeMutablePointer<Box>.allocate(capacity: 1)
        box.initialize(to: Box(state: state))
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
        box.deinitialize(count: 1)
        box.deallocate()
    }

    /// Runs `body` with shared, read-only access; other readers may run at the same time.
    package func read<Result>(_ body: (borrowing State) throws -> Result) rethrows -> Result {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try Self.lend(box.pointee, to: body)
    }

    /// Hands the state to `body` as a borrow, in place. Passing a copyable value read through a
    /// pointer would copy it first: for a dictionary, a retain and a release of its storage on
    /// every read, atomic writes to one cache line that every core's readers share (the cores
    /// then take turns owning that line). A box that cannot be copied is borrowed where it lies,
    /// and so is its state; nothing is written, so readers sharing the lock only read (an
    /// `inout` lend avoids the copy too, but ThreadSanitizer rightly reports concurrent `inout`
    /// accesses as races).
    private static func lend<Result>(_ box: borrowing Box, to body: (borrowing State) throws -> Result) rethrows -> Result {
        try body(box.state)
    }

    /// Runs `body` with exclusive access.
    package func write<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&box.pointee.state)
    }
}
