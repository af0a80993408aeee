/// A fast memory tier over a slower, larger tier (usually ``DiskStorage``): reads try
/// memory first and promote what they find below; writes and removals go to both.
///
/// A promotion never undoes a write or removal: a read that found a record below keeps it out
/// of memory when the key was written or removed while the read was under way, so an
/// invalidated response is never resurrected by a slow read that started before it.
public final class TieredStorage: CacheStorage {
    /// The memory tier.
    public let memory: MemoryStorage
    /// The lower tier.
    public let lower: any CacheStorage
    /// Write generations, one per stripe of keys: bumped by every store and removal.
    private let generations = Locked([UInt64](repeating: 0, count: TieredStorage.stripes))
    private static let stripes = 64

    /// Creates the pair.
    public init(memory: MemoryStorage, lower: any CacheStorage) {
        self.memory = memory
        self.lower = lower
    }

    /// From memory, else from the lower tier (then kept in memory, unless the key changed meanwhile).
    public func record(for key: String) async -> CacheRecord? {
        if let record = memory.recordNow(for: key) { return record }
        let stripe = Self.stripe(of: key)
        let before = generations.withLock { $0[stripe] }
        guard let record = await lower.record(for: key) else { return nil }
        generations.withLock { generations in
            // Under the lock: a write or removal either bumped the generation already (no
            // promotion) or runs its memory step after this one (and so wins).
            if generations[stripe] == before { memory.storeNow(record) }
        }
        return record
    }

    /// Stores in both tiers.
    public func store(_ record: CacheRecord) async {
        bump(record.key)
        memory.storeNow(record)
        await lower.store(record)
    }

    /// Removes from both tiers.
    public func remove(_ key: String) async {
        bump(key)
        memory.removeNow(key)
        await lower.remove(key)
    }

    /// Empties both tiers.
    public func removeAll() async {
        generations.withLock { generations in
            for index in generations.indices { generations[index] &+= 1 }
        }
        await memory.removeAll()
        await lower.removeAll()
    }

    /// The lower tier's statistics (it holds everything), with memory evictions added.
    public var statistics: StorageStatistics {
        var statistics = lower.statistics
        statistics.evictions += memory.statistics.evictions
        return statistics
    }

    /// The lower tier's secret: it holds the records that outlive the process.
    public var secret: [UInt8] { lower.secret }

    private func bump(_ key: String) {
        let stripe = Self.stripe(of: key)
        generations.withLock { $0[stripe] &+= 1 }
    }

    private static func stripe(of key: String) -> Int {
        var hasher = Hasher()
        hasher.combine(key)
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(stripes))
    }
}
