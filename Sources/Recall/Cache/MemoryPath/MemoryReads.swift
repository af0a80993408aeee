/// Hits read without suspending from the ``MemoryStorage`` a storage names as its
/// ``CacheStorage/memoryTier`` (itself, or a tier's upper memory), the calling core's copies first
/// (``PerCoreCopies``, ``CacheConfiguration/copyBytesPerCore``). A speed-up that needs the memory's
/// own counts of change (its generations), so it lives here, below the cache's decisions; any
/// other storage is read through ``CacheStorage/recordWithoutSuspending(for:)``.
final class MemoryReads: Sendable {
    typealias Location = CacheLocator.Location
    /// What a look at the calling core's copies found.
    typealias Lookup = PerCoreCopies<Location>.Lookup

    let memory: MemoryStorage
    /// Per-core copies of the records hit most (none when the configuration gives them no bytes).
    private let copies: PerCoreCopies<Location>?
    /// The same, for the hit path to use without retaining it (``copies`` keeps it alive): a
    /// retain writes the object's reference count, which every core shares.
    private let unownedCopies: Unmanaged<PerCoreCopies<Location>>?

    /// Whether a miss in the memory is a miss of the storage (the memory is all of it); else the
    /// storage is asked.
    let missesAreFinal: Bool

    init(memory: MemoryStorage, copyBytesPerCore: Int, missesAreFinal: Bool) {
        self.memory = memory
        self.missesAreFinal = missesAreFinal
        self.copies = PerCoreCopies(bytesPerCore: copyBytesPerCore, generations: memory.generations)
        self.unownedCopies = copies.map { Unmanaged.passUnretained($0) }
    }

    /// Looks for the URL `text` in the calling core's copies, when the URL is short enough to be
    /// remembered: a hit there touches nothing another core touches (not even the URL memo).
    func look(for text: String) -> Lookup? {
        guard let copies = unownedCopies else { return nil }
        guard text.utf8.count <= CanonicalURLMemo<Location>.defaultMaximumURLBytes else { return nil }
        return copies._withUnsafeGuaranteedRef { $0.look(for: text) }
    }

    /// The record at `location`: the copy `copy` found while it is still the storage's record
    /// (asked again once no store of the key is pending: one that landed since the look retired
    /// it), else the storage's record, copied for the calling core when the look admits it.
    func record(at location: Location, copy: Lookup?) -> CacheRecord? {
        // (Plain values into the check: the lookup itself would be retained with its parts.)
        if let copy, let hit = copy.hit, let (stripe, generation) = copy.copied,
            unownedCopies?._withUnsafeGuaranteedRef({ $0.isCurrent(stripe: stripe, generation: generation) }) == true
        {
            if copy.reportsRead { memory.recordRead(location.key) }
            return hit.record
        }
        guard let copy, copy.admits, let copies else { return memory.recordNow(for: location.hashedKey) }
        let generation = memory.generations.current(location.generationStripe)  // before the read
        guard let record = memory.recordNow(for: location.hashedKey) else { return nil }
        copies.offer(record, for: copy.key, stripe: location.generationStripe, generation: generation) {
            guard let record = record.unsharedCopy() else { return nil }
            var copied = location
            copied.key = location.key.unsharedCopy
            copied.remembered = true
            return (copied, record, copy.key.text.unsharedCopy)
        }
        return record
    }

    /// The record of `key` as the storage holds it now (not a copy).
    func current(_ key: String) -> CacheRecord? {
        memory.recordNow(for: key).flatMap { $0.key == key ? $0 : nil }
    }

    /// The per-core copies held, their bytes, the number of tables and of dormant ones (for
    /// tests); nil without copies.
    var usage: (copies: Int, bytes: Int, tables: Int, dormant: Int)? {
        copies.map { copies in
            let usage = copies.usage
            return (usage.copies, usage.bytes, copies.slotCount, usage.dormant)
        }
    }
}
