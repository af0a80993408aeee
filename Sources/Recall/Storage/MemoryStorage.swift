
/// An in-memory ``CacheStorage`` bounded by bytes and by record count, evicting with a
/// pluggable policy (S3-FIFO by default: it beats LRU on skewed workloads, see docs/benchmarks.md).
public final class MemoryStorage: CacheStorage {
    /// The most bytes held.
    public let byteLimit: Int
    /// The most records held.
    public let countLimit: Int
    /// The largest single record accepted.
    public let entryLimit: Int

    private struct State {
        var records: [String: (record: CacheRecord, size: Int)] = [:]
        var policy: any EvictionPolicy
        var statistics = StorageStatistics()
    }

    private let state: Locked<State>

    /// A secret made for this storage (its records live no longer than it does).
    public let secret = StorageSecret.make()

    /// Creates a storage. `entryLimit` defaults to a quarter of `byteLimit`.
    public init(byteLimit: Int = 64 << 20, countLimit: Int = 10_000, entryLimit: Int? = nil, eviction: Eviction = .s3fifo) {
        self.byteLimit = max(0, byteLimit)
        self.countLimit = max(0, countLimit)
        self.entryLimit = entryLimit ?? max(0, byteLimit) / 4
        self.state = Locked(State(policy: eviction.make()))
    }

    /// The record under `key`, if held and its full key matches.
    public func record(for key: String) async -> CacheRecord? { recordNow(for: key) }

    /// The same lookup without suspending (memory never blocks), for layered storages and replays.
    public func recordNow(for key: String) -> CacheRecord? {
        state.withLock { state in
            guard let held = state.records[key], held.record.key == key else { return nil }
            state.policy.recordAccess(key)
            return held.record
        }
    }

    /// Stores `record`, evicting as needed; a record over `entryLimit` is refused (and any
    /// older record under its key removed, so a stale copy is not kept).
    public func store(_ record: CacheRecord) async { storeNow(record) }

    /// The same store without suspending; returns the keys evicted to make room.
    @discardableResult
    public func storeNow(_ record: CacheRecord) -> [String] {
        let size = record.byteCount
        return state.withLock { state in
            removeLocked(record.key, from: &state)
            guard size <= entryLimit, size <= byteLimit, countLimit > 0 else {
                state.statistics.rejected += 1
                return []
            }
            state.records[record.key] = (record, size)
            state.statistics.count += 1
            state.statistics.bytes += size
            state.policy.recordInsert(record.key, size: size)
            var evicted: [String] = []
            while state.statistics.bytes > byteLimit || state.statistics.count > countLimit,
                  let victim = state.policy.victim() {
                if removeLocked(victim, from: &state) == nil { state.policy.recordRemoval(victim) }
                state.statistics.evictions += 1
                evicted.append(victim)
            }
            return evicted
        }
    }

    /// Removes the record under `key`.
    public func remove(_ key: String) async { removeNow(key) }

    /// The same removal without suspending.
    public func removeNow(_ key: String) {
        state.withLock { state in _ = removeLocked(key, from: &state) }
    }

    /// Removes every record.
    public func removeAll() async {
        state.withLock { state in
            for key in Array(state.records.keys) { _ = removeLocked(key, from: &state) }
        }
    }

    /// Counters and sizes.
    public var statistics: StorageStatistics { state.withLock { $0.statistics } }

    @discardableResult
    private func removeLocked(_ key: String, from state: inout State) -> CacheRecord? {
        guard let held = state.records.removeValue(forKey: key) else { return nil }
        state.statistics.count -= 1
        state.statistics.bytes -= held.size
        state.policy.recordRemoval(key)
        return held.record
    }
}
