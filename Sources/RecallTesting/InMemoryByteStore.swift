import Foundation
import Recall

/// A ``CacheByteStore`` over a dictionary: the smallest possible backend, and a test double for
/// code that takes one. It can slow its reads, to test what happens while one is under way,
/// and lets a test put any bytes under a key, to test what a storage does with bad ones.
///
/// Everything the cache needs beyond these few lines of "I/O" — encoding records, checking
/// them, comparing keys — comes from ``CacheByteStore``.
public final class InMemoryByteStore: CacheByteStore {
    private struct State {
        var bytes: [String: Data] = [:]
        var statistics = StorageStatistics()
        var flushes = 0
    }

    private let state = Locked(State())
    private let readDelay: Duration

    /// Creates an empty store whose reads take `readDelay` (none by default).
    public init(readDelay: Duration = .zero) {
        self.readDelay = readDelay
    }

    /// The bytes under `key`, delivered after the read delay (taken at once: like a slow
    /// network read, the answer may be outdated by the time it arrives).
    public func data(for key: String) async -> Data? {
        let data = state.withLock { $0.bytes[key] }
        if readDelay > .zero { try? await Task.sleep(for: readDelay) }
        return data
    }

    /// Stores `data` under `key`.
    public func store(_ data: Data, for key: String) async {
        put(data, for: key)
    }

    /// Puts `data` under `key` without suspending (a test's way to plant bad bytes).
    public func put(_ data: Data, for key: String) {
        state.withLock { state in
            if let old = state.bytes.updateValue(data, forKey: key) {
                state.statistics.bytes -= old.count
            } else {
                state.statistics.count += 1
            }
            state.statistics.bytes += data.count
        }
    }

    /// Removes `key` if it still holds `data`, counting it as corrupt.
    public func removeCorrupt(_ key: String, ifStill data: Data) async {
        state.withLock { state in
            guard state.bytes[key] == data, let old = state.bytes.removeValue(forKey: key) else { return }
            state.statistics.count -= 1
            state.statistics.bytes -= old.count
            state.statistics.corruptRemoved += 1
        }
    }

    /// Removes `key`.
    public func remove(_ key: String) async {
        state.withLock { state in
            guard let old = state.bytes.removeValue(forKey: key) else { return }
            state.statistics.count -= 1
            state.statistics.bytes -= old.count
        }
    }

    /// Removes everything.
    public func removeAll() async {
        state.withLock { state in
            state.bytes = [:]
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
