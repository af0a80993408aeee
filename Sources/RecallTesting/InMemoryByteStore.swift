import Foundation
import Recall

/// A ``/Recall/CacheByteStore`` over a dictionary: the smallest possible backend, and a test double for
/// code that takes one. It can hold its reads until the test lets them go (``holdReads()``), or
/// slow them, to test what happens while one is under way, and lets a test put any bytes under
/// a key, to test what a storage does with bad ones.
///
/// ```swift
/// store.holdReads()
/// let read = Task { await store.record(for: "k") }   // takes the bytes, then waits
/// await store.waitForHeldReads(1)                     // the read is under way
/// await store.store(newer)                            // lands while it is
/// store.releaseReads()
/// ```
///
/// Everything the cache needs beyond these few lines of "I/O" — encoding records, checking
/// them, comparing keys — comes from ``/Recall/CacheByteStore``.
public final class InMemoryByteStore: CacheByteStore {
    private struct State {
        var bytes: [String: Data] = [:]
        /// The expiry hint of each key's latest write.
        var expiries: [String: Date] = [:]
        /// Who hears of changes made "elsewhere" (``changeElsewhere(_:)``).
        var observers: [@Sendable (String?) async -> Void] = []
        var statistics = StorageStatistics()
        var flushes = 0
        /// Whether reads wait, after taking their bytes, until ``releaseReads()``.
        var holdingReads = false
        var heldReads: [CheckedContinuation<Void, Never>] = []
        /// Tests waiting until this many reads are held.
        var heldReadWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func put(_ data: Data, for key: String) {
            if let old = bytes.updateValue(data, forKey: key) {
                statistics.bytes -= old.count
            } else {
                statistics.count += 1
            }
            statistics.bytes += data.count
            expiries[key] = nil
        }

        mutating func remove(_ key: String) -> Data? {
            expiries[key] = nil
            guard let old = bytes.removeValue(forKey: key) else { return nil }
            statistics.count -= 1
            statistics.bytes -= old.count
            return old
        }

        /// Takes the waiters whose count of held reads is reached.
        mutating func readyWaiters() -> [CheckedContinuation<Void, Never>] {
            let held = heldReads.count
            let ready = heldReadWaiters.filter { $0.count <= held }.map(\.continuation)
            heldReadWaiters.removeAll { $0.count <= held }
            return ready
        }
    }

    private let state = Locked(State())
    private let readDelay: Duration

    /// Creates an empty store whose reads take `readDelay` (none by default).
    public init(readDelay: Duration = .zero) {
        self.readDelay = readDelay
    }

    /// The bytes under `key`, delivered after the read delay, or once released while reads are
    /// held (taken at once: like a slow network read, the answer may be outdated by the time it
    /// arrives).
    public func bytes(for key: String) async -> StoredBytes? {
        let (data, holding) = state.withLock { ($0.bytes[key], $0.holdingReads) }
        if holding {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (go, ready) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    guard state.holdingReads else { return (true, []) }
                    state.heldReads.append(continuation)
                    return (false, state.readyWaiters())
                }
                if go { continuation.resume() }
                for waiter in ready { waiter.resume() }
            }
        }
        if readDelay > .zero { try? await Task.sleep(for: readDelay) }
        return data.map { StoredBytes($0) }
    }

    /// Makes every read from now on wait, once it has taken its bytes, until ``releaseReads()``:
    /// a test then knows a read is under way (``waitForHeldReads(_:)``) for as long as it needs.
    public func holdReads() {
        state.withLock { $0.holdingReads = true }
    }

    /// Lets the held reads deliver what they took, and later reads run at once.
    public func releaseReads() {
        let held = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.holdingReads = false
            defer { state.heldReads = [] }
            return state.heldReads
        }
        for read in held { read.resume() }
    }

    /// Suspends until at least `count` reads are held (see ``holdReads()``). No time limit of
    /// its own: the test's time limit bounds it.
    public func waitForHeldReads(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.heldReads.count >= count { return true }
                state.heldReadWaiters.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Stores `data` under `key`, keeping the expiry hint (``expiry(of:)``).
    public func write(_ data: Data, for key: String, expires: Date?) async {
        state.withLock { state in
            state.put(data, for: key)
            state.expiries[key] = expires
        }
    }

    /// The expiry hint the latest write of `key` came with (`nil`: none, or no write).
    public func expiry(of key: String) -> Date? {
        state.withLock { $0.expiries[key] }
    }

    /// Tells the observers that `key` (`nil`: every key) changed elsewhere, as a store another
    /// process shares would (see ``/Recall/CacheStorage/subscribe(toChangesElsewhere:)``).
    public func changeElsewhere(_ key: String?) async {
        for observer in state.withLock({ $0.observers }) { await observer(key) }
    }

    /// Calls `observer` from ``changeElsewhere(_:)``.
    public func subscribe(toChangesElsewhere observer: @escaping @Sendable (String?) async -> Void) {
        state.withLock { $0.observers.append(observer) }
    }

    /// Puts `data` under `key` without suspending (a test's way to plant bad bytes).
    public func put(_ data: Data, for key: String) {
        state.withLock { $0.put(data, for: key) }
    }

    /// Removes `key` if it still holds `data`, counting it as corrupt.
    public func removeCorrupt(_ key: String, ifStill data: Data) async {
        state.withLock { state in
            guard state.bytes[key] == data, state.remove(key) != nil else { return }
            state.statistics.corruptRemoved += 1
        }
    }

    /// Removes `key`.
    public func remove(_ key: String) async {
        state.withLock { _ = $0.remove(key) }
    }

    /// Removes everything.
    public func removeAll() async {
        state.withLock { state in
            state.bytes = [:]
            state.expiries = [:]
            state.statistics.count = 0
            state.statistics.bytes = 0
        }
    }

    /// Counts the call (there is nothing to wait for).
    public func flush() async {
        state.withLock { $0.flushes += 1 }
    }

    /// How many times ``flush()`` was called.
    public var flushes: Int { state.withLock { $0.flushes } }

    /// The keys held.
    public var keys: Set<String> { state.withLock { Set($0.bytes.keys) } }

    /// Counters and sizes.
    public var statistics: StorageStatistics { state.withLock { $0.statistics } }
}
