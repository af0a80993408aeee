import Foundation

/// A fast tier over a slower, larger one — usually ``MemoryStorage`` over ``DiskStorage``, but
/// any two storages compose: reads try the upper tier first and promote what they find below;
/// writes and removals go to both; ``flush()`` flushes both.
///
/// A promotion never undoes a write or removal: a read that found a record below keeps it out
/// of the upper tier when the key was written or removed while the read was under way, so an
/// invalidated response is never resurrected by a slow read that started before it.
///
/// When the lower tier changes elsewhere (another process sharing it removed or replaced a key,
/// as it tells through ``CacheStorage/subscribe(toChangesElsewhere:)``), the upper tier's copy
/// is dropped, and a read under way does not put the old record back.
public final class TieredStorage: CacheStorage {
    /// The tier read first.
    public let upper: any CacheStorage
    /// The tier below, which holds everything.
    public let lower: any CacheStorage
    /// `upper`'s memory, when that is all `upper` holds (a ``MemoryStorage``): promoted into
    /// without suspending, in one step with the check that the key did not change meanwhile.
    private let memory: MemoryStorage?
    /// Write generations, one per stripe of keys: bumped by every store and removal.
    private let generations = Locked([UInt64](repeating: 0, count: TieredStorage.stripes))
    /// Orders promotions against writes of the same key when the upper tier suspends.
    private let keys = KeyedLock()
    private static let stripes = 64

    /// Creates the pair: `upper` read first, `lower` below it.
    public init(upper: any CacheStorage, lower: any CacheStorage) {
        self.upper = upper
        self.lower = lower
        self.memory = upper.isWhollyInMemory ? upper.memoryTier : nil
        lower.subscribe(toChangesElsewhere: { [weak self] key in await self?.forgetUpper(key) })
    }

    /// The lower tier's write order (a cache over the lower tier alone keeps its stores and
    /// removals in order with a cache over the pair — though the upper tier is not told of what
    /// changes through the lower tier alone), else the upper tier's, else the pair's own.
    public var writeOrder: StorageWriteOrder? { lower.writeOrder ?? upper.writeOrder ?? ownOrder }
    private let ownOrder = StorageWriteOrder()

    /// Creates the usual pair, a memory tier over `lower`.
    public convenience init(memory: MemoryStorage, lower: any CacheStorage) {
        self.init(upper: memory, lower: lower)
    }

    /// What the upper tier has at hand without suspending (a miss there is read through
    /// ``record(for:)``, which may find it below).
    public func recordWithoutSuspending(for key: String) -> CacheRecord? {
        upper.recordWithoutSuspending(for: key)
    }

    /// The upper tier's memory: the cache reads it first, per core, and finds the rest below.
    public var memoryTier: MemoryStorage? { upper.memoryTier }

    /// From the upper tier, else from the lower one (then promoted, unless the key changed meanwhile).
    public func record(for key: String) async -> CacheRecord? {
        await record(for: key, lookup: .usual)
    }

    /// As ``record(for:)``; the lower tier reads as `lookup` says (the fleet's coordination is
    /// the lower tier's, a database's, when there is one).
    public func record(for key: String, lookup: RecordLookup) async -> CacheRecord? {
        if let record = upper.recordWithoutSuspending(for: key) { return record }
        if memory == nil, let record = await upper.record(for: key) { return record }
        let stripe = Self.stripe(of: key)
        let before = generations.withLock { $0[stripe] }
        guard let record = await lower.record(for: key, lookup: lookup) else { return nil }
        // (A body that stays in the lower tier's store is not promoted: the upper tier would hold it open.)
        guard !record.variants.contains(where: { $0.storedBody != nil }) else { return record }
        if let memory {
            let released = generations.withLock { generations in
                // Under the lock: a write or removal either bumped the generation already (no
                // promotion) or runs its memory step after this one (and so wins).
                generations[stripe] == before ? memory.storeNow(record, watched: false) : nil
            }
            withExtendedLifetime(released) {}  // (what the store evicted is freed after the lock)
        } else {
            // The same ordering for an upper tier that suspends: writes of the key change the
            // upper tier under the key's lock, so they come wholly before or after this step.
            // (`removeAll` takes no key lock: a promotion it overtook is taken back.)
            await keys.lock(key)
            if generations.withLock({ $0[stripe] }) == before {
                await upper.store(record)
                if generations.withLock({ $0[stripe] }) != before { await upper.remove(key) }
            }
            keys.unlock(key)
        }
        return record
    }

    /// Stores in both tiers: the lower one first, so a read that finds the old record below can
    /// no longer promote it once the upper step (which bumps the key's generation) has run.
    public func store(_ record: CacheRecord, expires: Date?) async {
        let before = generation(of: record.key)
        await lower.store(record, expires: expires)
        await storeUpper(record, expires: expires, unlessChangedSince: before)
    }

    /// The upper tier's step of a store, once the lower tier has the record — when the key's
    /// generation moved from `before` meanwhile (another process may have removed or replaced it
    /// in the lower tier after this store landed there, its notice dropping the upper copy), the
    /// upper copy is dropped instead: the upper tier never keeps what the lower one may no longer
    /// hold, nor an older record.
    private func storeUpper(_ record: CacheRecord, expires: Date?, unlessChangedSince before: UInt64) async {
        guard !record.variants.contains(where: { $0.storedBody != nil }) else {
            return await changeUpper(record.key) { await self.upper.remove(record.key) }  // (kept below only)
        }
        if let memory {
            // In one step with the check, as a promotion is: a removal elsewhere either came before
            // (nothing is stored) or drops the record after.
            let stripe = Self.stripe(of: record.key)
            let released = generations.withLock { generations in
                if Self.bump(&generations[stripe], wasStill: before) { return memory.storeNow(record, watched: false) }
                memory.removeNow(record.key)
                return nil
            }
            withExtendedLifetime(released) {}  // (what the store evicted is freed after the lock)
        } else {
            await keys.lock(record.key)
            if bump(record.key, wasStill: before) {
                await upper.store(record, expires: expires)
            } else {
                await upper.remove(record.key)
            }
            keys.unlock(record.key)
        }
    }

    /// The generation of `key`'s stripe now.
    private func generation(of key: String) -> UInt64 {
        let stripe = Self.stripe(of: key)
        return generations.withLock { $0[stripe] }
    }

    /// Whether the lower tier counts removals (a table the fleet shares): the upper one is this
    /// process's own.
    public var countsRemovals: Bool { lower.countsRemovals }

    /// The lower tier's removal counts.
    public func removalMark(for key: String) async -> RemovalMark? {
        await lower.removalMark(for: key)
    }

    /// Stores in the lower tier, checking `mark`, then — only if it stored — in the upper one: a
    /// memory tier never keeps what the shared tier refused as stale.
    public func store(_ record: CacheRecord, expires: Date?, ifNotRemovedSince mark: RemovalMark) async -> Bool {
        let before = generation(of: record.key)
        guard await lower.store(record, expires: expires, ifNotRemovedSince: mark) else { return false }
        await storeUpper(record, expires: expires, unlessChangedSince: before)
        return true
    }

    /// Stores in pieces in the lower tier (the upper one holds no record written so): the upper
    /// tier's copy of the key is dropped when the record is committed below.
    public func beginStoring(_ record: CacheRecord, expires: Date?) async -> (any RecordWriting)? {
        guard let writing = await lower.beginStoring(record, expires: expires) else { return nil }
        return TieredRecordWriting(writing) { [self] in await changeUpper(record.key) { await self.upper.remove(record.key) } }
    }

    /// Removes from both tiers, the lower one first (see ``store(_:expires:)``).
    public func remove(_ key: String) async {
        await lower.remove(key)
        await changeUpper(key) { await self.upper.remove(key) }
    }

    /// Bumps `key`'s generation and changes the upper tier: without suspending for a memory tier,
    /// under the key's lock otherwise, so a promotion comes wholly before or after it.
    private func changeUpper(_ key: String, _ change: () async -> Void) async {
        if memory != nil {
            bump(key)
            await change()  // MemoryStorage does not suspend
        } else {
            await keys.lock(key)
            bump(key)
            await change()
            keys.unlock(key)
        }
    }

    /// Empties both tiers. The upper tier is emptied again once the lower one is: a read that
    /// found a record below while the lower tier was being emptied may have promoted it.
    public func removeAll() async {
        bumpAll()
        await upper.removeAll()
        await lower.removeAll()
        bumpAll()
        await upper.removeAll()
    }

    /// Removes `key` (every key, when `nil`) from the upper tier only, because the lower tier
    /// changed without this storage — another process removed or replaced it in a shared lower
    /// tier. A read under way that found the old record below does not promote it afterwards.
    private func forgetUpper(_ key: String?) async {
        if let key {
            await changeUpper(key) { await self.upper.remove(key) }
        } else {
            bumpAll()
            await upper.removeAll()
        }
    }

    private func bumpAll() {
        generations.withLock { generations in
            for index in generations.indices { generations[index] &+= 1 }
        }
    }

    /// Flushes both tiers.
    public func flush() async {
        await upper.flush()
        await lower.flush()
    }

    /// The lower tier's statistics (it holds everything), with the upper tier's evictions added.
    public var statistics: StorageStatistics {
        var statistics = lower.statistics
        statistics.evictions += upper.statistics.evictions
        return statistics
    }

    /// The larger tier's limit: a record too large for the upper tier is kept by the lower.
    public var entryLimit: Int { max(upper.entryLimit, lower.entryLimit) }

    /// The lower tier's secret: it holds the records that outlive the process.
    public var secret: [UInt8] { lower.secret }

    /// Tells `observer` of the lower tier's changes made elsewhere (after this storage's own
    /// upper tier heard of them), so tiers over tiers stay in step.
    public func subscribe(toChangesElsewhere observer: @escaping @Sendable (String?) async -> Void) {
        lower.subscribe(toChangesElsewhere: observer)
    }

    private func bump(_ key: String) {
        let stripe = Self.stripe(of: key)
        generations.withLock { $0[stripe] &+= 1 }
    }

    /// Bumps `key`'s generation; whether it was still `before` until then.
    private func bump(_ key: String, wasStill before: UInt64) -> Bool {
        let stripe = Self.stripe(of: key)
        return generations.withLock { Self.bump(&$0[stripe], wasStill: before) }
    }

    /// Bumps `generation`; whether it was `before` until then.
    private static func bump(_ generation: inout UInt64, wasStill before: UInt64) -> Bool {
        defer { generation &+= 1 }
        return generation == before
    }

    private static func stripe(of key: String) -> Int {
        var hasher = Hasher()
        hasher.combine(key)
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(stripes))
    }
}
