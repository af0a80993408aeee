// The complete storage backend docs/architecture.md shows, compiled and tested here (by
// ExampleBackendTests, and by every RFC 9111 suite through `StorageKind.example`).

// snippet: docs/architecture.md
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Recall
import Synchronization

/// Bytes in memory, each kept until the expiry the cache hints: a whole backend. Past
/// `byteLimit`, the entry that expires soonest goes first.
final class ExpiringByteStore: CacheByteStore {
    private struct Item {
        var data: Data
        var expires: Date?
    }

    private struct State {
        var items: [String: Item] = [:]
        var statistics = StorageStatistics()

        mutating func remove(_ key: String) -> Item? {
            guard let item = items.removeValue(forKey: key) else { return nil }
            statistics.count -= 1
            statistics.bytes -= item.data.count
            return item
        }
    }

    private let state = Mutex(State())
    private let byteLimit: Int
    private let now: @Sendable () -> Date

    init(byteLimit: Int = 32 << 20, now: @escaping @Sendable () -> Date = { Date() }) {
        self.byteLimit = byteLimit
        self.now = now
    }

    // Reading: memory never waits, so the cache answers hits without an async call.
    func bytes(for key: String) async -> StoredBytes? {
        bytesWithoutSuspending(for: key)
    }

    func bytesWithoutSuspending(for key: String) -> StoredBytes? {
        let now = now()
        return state.withLock { state -> StoredBytes? in
            guard let item = state.items[key] else { return nil }
            if let expires = item.expires, expires < now {
                _ = state.remove(key)
                state.statistics.evictions += 1
                return nil
            }
            return StoredBytes(item.data)
        }
    }

    // Writing, with the cache's hint: nothing in `data` can be served after `expires`.
    func write(_ data: Data, for key: String, expires: Date?) async {
        state.withLock { state in
            _ = state.remove(key)
            guard data.count <= byteLimit else {
                state.statistics.rejected += 1
                return
            }
            while state.statistics.bytes + data.count > byteLimit,
                  let victim = state.items.min(by: { ($0.value.expires ?? .distantFuture) < ($1.value.expires ?? .distantFuture) })?.key {
                _ = state.remove(victim)
                state.statistics.evictions += 1
            }
            state.items[key] = Item(data: data, expires: expires)
            state.statistics.count += 1
            state.statistics.bytes += data.count
        }
    }

    func remove(_ key: String) async {
        state.withLock { _ = $0.remove(key) }
    }

    func removeAll() async {
        state.withLock { state in
            for key in Array(state.items.keys) { _ = state.remove(key) }
        }
    }

    // Bytes the cache could not read as a record of `key`: removed only if still the same.
    func removeCorrupt(_ key: String, ifStill data: Data) async {
        state.withLock { state in
            guard state.items[key]?.data == data else { return }
            _ = state.remove(key)
            state.statistics.corruptRemoved += 1
        }
    }

    var statistics: StorageStatistics {
        state.withLock { $0.statistics }
    }
}
// end snippet
