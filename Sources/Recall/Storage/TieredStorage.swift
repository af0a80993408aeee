/// A fast memory tier over a slower, larger tier (usually ``DiskStorage``): reads try
/// memory first and promote what they find below; writes and removals go to both.
public final class TieredStorage: CacheStorage {
    /// The memory tier.
    public let memory: MemoryStorage
    /// The lower tier.
    public let lower: any CacheStorage

    /// Creates the pair.
    public init(memory: MemoryStorage, lower: any CacheStorage) {
        self.memory = memory
        self.lower = lower
    }

    /// From memory, else from the lower tier (then kept in memory).
    public func record(for key: String) async -> CacheRecord? {
        if let record = memory.recordNow(for: key) { return record }
        guard let record = await lower.record(for: key) else { return nil }
        memory.storeNow(record)
        return record
    }

    /// Stores in both tiers.
    public func store(_ record: CacheRecord) async {
        memory.storeNow(record)
        await lower.store(record)
    }

    /// Removes from both tiers.
    public func remove(_ key: String) async {
        memory.removeNow(key)
        await lower.remove(key)
    }

    /// Empties both tiers.
    public func removeAll() async {
        await memory.removeAll()
        await lower.removeAll()
    }

    /// The lower tier's statistics (it holds everything), with memory evictions added.
    public var statistics: StorageStatistics {
        var statistics = lower.statistics
        statistics.evictions += memory.statistics.evictions
        return statistics
    }
}
