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
/// `pthread_rwlock_t`s, for the reason ``Locked`` is a pthread mutex: ThreadSanitizer sees them.
///
/// **One lock per core** (up to ``maximumStripes``, each on cache lines of its own): a reader
/// takes the lock of the core it runs on, a writer takes them all, in order. A reader's lock
/// and unlock write the lock's reader count; with one lock, readers on different cores wrote
/// the same cache line and took turns for it (docs/benchmarks.md, "Hits over cores"). Writes, rare
/// here (a store, a new URL), pay one lock per stripe instead.
package final class ReadWriteLocked<State>: @unchecked Sendable {
    /// The state in a box that cannot be copied, in its own allocation: a reader borrows it in
    /// place (see ``lend(_:to:)``).
    private struct Box: ~Copyable { var state: State }
    private let box: UnsafeMutablePointer<Box>
    /// The stripes' locks, one per ``lockStride`` bytes.
    private let locks: UnsafeMutableRawPointer
    private let stripes: Int

    /// The most locks: more cores share them.
    static var maximumStripes: Int { 16 }
    /// Bytes per lock: a `pthread_rwlock_t` (56 bytes on Linux x86-64) alone on two cache
    /// lines (adjacent-line prefetch pairs them).
    private static var lockStride: Int { max(128, (MemoryLayout<pthread_rwlock_t>.stride + 127) & ~127) }

    /// Creates the lock around `state`.
    package init(_ state: State) {
        box = UnsafeMutablePointer<Box>.allocate(capacity: 1)
        box.initialize(to: Box(state: state))
        stripes = CurrentCore.function == nil ? 1 : min(CurrentCore.configured, Self.maximumStripes)
        locks = UnsafeMutableRawPointer.allocate(byteCount: Self.lockStride * stripes, alignment: 128)
        for stripe in 0..<stripes {
            let lock = (locks + stripe * Self.lockStride).bindMemory(to: pthread_rwlock_t.self, capacity: 1)
            lock.initialize(to: pthread_rwlock_t())
            #if canImport(Glibc)
                var attributes = pthread_rwlockattr_t()
                pthread_rwlockattr_init(&attributes)
                // glibc prefers readers by default: a steady stream of hits would hold off every store.
                pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
                pthread_rwlock_init(lock, &attributes)
                pthread_rwlockattr_destroy(&attributes)
            #else
                pthread_rwlock_init(lock, nil)  // Darwin's rwlock already lets waiting writers go first; musl's too
            #endif
        }
    }

    deinit {
        for stripe in 0..<stripes {
            pthread_rwlock_destroy(lock(stripe))
            lock(stripe).deinitialize(count: 1)
        }
        locks.deallocate()
        box.deinitialize(count: 1)
        box.deallocate()
    }

    private func lock(_ stripe: Int) -> UnsafeMutablePointer<pthread_rwlock_t> {
        (locks + stripe * Self.lockStride).assumingMemoryBound(to: pthread_rwlock_t.self)
    }

    /// The stripe of the calling thread's core (any stripe is right; this one is likely the
    /// calling core's alone).
    private var currentStripe: Int {
        guard stripes > 1, let core = CurrentCore.function?() else { return 0 }
        return (Int(core) & Int.max) % stripes  // (-1, an error, is a stripe too)
    }

    /// Runs `body` with shared, read-only access; other readers may run at the same time.
    package func read<Result>(_ body: (borrowing State) throws -> Result) rethrows -> Result {
        let lock = lock(currentStripe)
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
        // Always in the same order, so two writers cannot each hold a stripe the other waits for.
        for stripe in 0..<stripes { pthread_rwlock_wrlock(lock(stripe)) }
        defer { for stripe in (0..<stripes).reversed() { pthread_rwlock_unlock(lock(stripe)) } }
        return try body(&box.pointee.state)
    }
}
