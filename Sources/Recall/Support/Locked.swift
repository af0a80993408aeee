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
///
/// On glibc the mutex is the adaptive kind: a thread that finds it taken spins a little before
/// it sleeps. Recall holds its locks for well under a microsecond, so the holder is usually
/// done before a sleep and a wake-up would be over; with sixteen callers on two cores, plain
/// mutexes made three times the context switches (docs/benchmarks.md, "Locks that spin before
/// they sleep").
///
/// The state and the mutex live in one allocation (a `ManagedBuffer`), so a lock made per
/// request — every ``RecallContext`` has one — costs one allocation, not two.
package struct Locked<State>: @unchecked Sendable {
    /// The state as the header and the mutex as the one tail element: a stable address for the
    /// mutex, as pthreads require, without a second allocation.
    private final class Storage: ManagedBuffer<State, pthread_mutex_t> {
        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }
    }

    private let storage: Storage

    /// Creates the lock around `state`.
    package init(_ state: State) {
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in state }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            #if canImport(Glibc)
                // What glibc's `PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP` expands to (Swift does not
                // import the macro): a mutex of the adaptive kind, ready without a call to
                // `pthread_mutex_init` (or an attribute's) on every lock made per request.
                mutex.pointee.__data.__kind = Int32(PTHREAD_MUTEX_ADAPTIVE_NP)
            #else
                pthread_mutex_init(mutex, nil)
            #endif
        }
    }

    /// Runs `body` with exclusive access to the state.
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { state, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state.pointee)
        }
    }

    /// Runs `body` with exclusive access if the lock is free right now; returns nil without
    /// waiting when another thread holds it (for work that may be skipped under contention).
    package func withLockIfAvailable<Result>(_ body: (inout State) throws -> Result) rethrows -> Result? {
        try storage.withUnsafeMutablePointers { state, mutex in
            guard pthread_mutex_trylock(mutex) == 0 else { return nil }
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state.pointee)
        }
    }
}
