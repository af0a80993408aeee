import Foundation

/// An in-memory ``CacheStorage`` bounded by bytes and by record count, evicting with a
/// pluggable policy (S3-FIFO by default: it beats LRU on skewed workloads, see docs/benchmarks.md).
public final class MemoryStorage: CacheStorage {
    /// The most bytes held.
    public let byteLimit: Int
    /// The most records held.
    public let countLimit: Int
    /// The largest single record accepted.
    public let entryLimit: Int

    /// What the records are: read by every hit at once, written by stores and removals. Keyed
    /// with the hash worked out once (`HashedKey`): a store evicting from thousands of records
    /// rehashes no other record's key.
    private typealias Table = [HashedKey: (record: CacheRecord, size: Int)]

    /// The eviction policy and the counters. Writers hold this lock, then the table's write
    /// lock; a hit takes only the table's read lock, then tells the policy of the read if this
    /// lock is free (under contention a read goes unrecorded, as Caffeine's lossy read buffers
    /// do: the policy sees slightly fewer reads, and hits never wait for each other).
    private struct Books {
        var policy: any EvictionPolicy
        var statistics = StorageStatistics()
        /// Keys a cache will store later (write-behind), each with how many stores are coming
        /// and whether an explicit removal (``removeNow(_:)``, ``removeAll()``; not an
        /// eviction) has been made since.
        var watched: [String: (stores: Int, removed: Bool)] = [:]
    }

    private let table = ReadWriteLocked(Table())
    private let books: Locked<Books>

    /// Counts the changes to the records by stripe of keys (a store, a removal, `removeAll()`,
    /// an eviction), each bumped after its change: a copy of a record made after loading its
    /// stripe's count is the storage's record for as long as the count is the same. ``HTTPCache``'s
    /// per-core copies rely on it (``PerCoreCopies``).
    let generations = RecordGenerations()

    /// A secret made for this storage (its records live no longer than it does).
    public let secret = StorageSecret.make()
    /// The order of the writes of every cache over this storage.
    public let writeOrder: StorageWriteOrder? = StorageWriteOrder()

    /// Creates a storage. `entryLimit` defaults to a quarter of `byteLimit`.
    public init(byteLimit: Int = 64 << 20, countLimit: Int = 10_000, entryLimit: Int? = nil, eviction: Eviction = .s3fifo) {
        self.byteLimit = max(0, byteLimit)
        self.countLimit = max(0, countLimit)
        self.entryLimit = entryLimit ?? max(0, byteLimit) / 4
        var policy = eviction.make()
        policy.setCapacity(byteLimit: self.byteLimit, countLimit: self.countLimit)
        self.books = Locked(Books(policy: policy))
    }

    /// The record under `key`, if held and its full key matches.
    public func record(for key: String) async -> CacheRecord? { recordNow(for: key) }

    /// The same lookup: memory never suspends.
    public func recordWithoutSuspending(for key: String) -> CacheRecord? { recordNow(for: key) }

    /// Itself.
    public var memoryTier: MemoryStorage? { self }

    /// `true`: all it holds is in memory.
    public var isWhollyInMemory: Bool { true }

    /// The same lookup without suspending (memory never blocks), for layered storages and replays.
    package func recordNow(for key: String) -> CacheRecord? {
        recordNow(for: HashedKey(key))
    }

    /// The same lookup for a key whose hash is known (a cache's ``CacheLocator/Location``).
    func recordNow(for key: HashedKey) -> CacheRecord? {
        guard let record = table.read({ $0[key]?.record }), record.key == key.text else { return nil }
        recordRead(key.text)
        return record
    }

    /// Tells the eviction policy of a read of `key`, if its books are free this instant (under
    /// contention a read goes unrecorded, as Caffeine's lossy read buffers do). For reads served
    /// from a copy of the record (``PerCoreCopies``), which report some of their reads.
    func recordRead(_ key: String) {
        _ = books.withLockIfAvailable { $0.policy.recordAccess(key) }
    }

    /// Stores `record`, evicting as needed; a record over `entryLimit` is refused (and any
    /// older record under its key removed, so a stale copy is not kept). `expires` is not used:
    /// the eviction policy decides what stays.
    public func store(_ record: CacheRecord, expires: Date?) async {
        let released = storeNow(record, watched: false)
        withExtendedLifetime(released) {}  // (freed here, after the locks)
    }

    /// The same store without suspending; returns the keys evicted to make room.
    @discardableResult
    package func storeNow(_ record: CacheRecord) -> [String] {
        storeNow(record, watched: false)?.keys ?? []
    }

    /// Starts watching `key` for explicit removals: a cache that answers first and stores
    /// after (write-behind) calls it before answering, then ``storeNow(_:watched:)`` with
    /// `watched: true`, or ``unwatch(_:)`` if it stores nothing. A removal made meanwhile
    /// around the cache (another cache on this storage invalidating the URL, `removeAll()` at
    /// logout) then drops the store instead of being undone by it.
    func watch(_ key: String) {
        books.withLock { books in books.watched[key, default: (0, false)].stores += 1 }
    }

    /// Ends a watch of `key` that stores nothing.
    func unwatch(_ key: String) {
        books.withLock { books in _ = Self.unwatch(key, in: &books) }
    }

    /// Ends a watch of `key`; whether the key was removed while watched.
    private static func unwatch(_ key: String, in books: inout Books) -> Bool {
        guard let watch = books.watched[key] else { return false }
        if watch.stores <= 1 { books.watched[key] = nil } else { books.watched[key]?.stores -= 1 }
        return watch.removed
    }

    /// What a store let go of, handed back so that it is freed after the storage's locks are
    /// released: freeing a record frees its body and head, work no other store or hit should
    /// wait for.
    struct Released {
        /// The record the store replaced.
        var replaced: CacheRecord?
        /// The first record evicted (a full storage evicts one per store: no array for it).
        var firstEvicted: CacheRecord?
        /// The records evicted after the first.
        var moreEvicted: [CacheRecord] = []

        /// How many records were evicted.
        var evictions: Int { firstEvicted == nil ? 0 : 1 + moreEvicted.count }
        /// The keys of the records evicted.
        var keys: [String] { (firstEvicted.map { [$0] } ?? []).map(\.key) + moreEvicted.map(\.key) }

        mutating func evicted(_ record: CacheRecord) {
            if firstEvicted == nil { firstEvicted = record } else { moreEvicted.append(record) }
        }
    }

    /// Stores `record`, evicting as needed; `watched`: ends the watch of its key
    /// (``watch(_:)``) and stores nothing (`nil`) when the key was removed meanwhile. Returns
    /// the records it evicted and the one it replaced, for the caller to let go of after the
    /// locks.
    func storeNow(_ record: CacheRecord, watched: Bool) -> Released? {
        let size = record.byteCount
        let key = HashedKey(record.key)
        return books.withLock { books -> Released? in
            if watched, Self.unwatch(record.key, in: &books) { return nil }
            return table.write { table in
                var released = Released(replaced: removeLocked(key, from: &table, books: &books))
                guard size <= entryLimit, size <= byteLimit, countLimit > 0 else {
                    books.statistics.rejected += 1
                    return released
                }
                table[key] = (record, size)
                generations.bump(hash: key.hash)
                books.statistics.count += 1
                books.statistics.bytes += size
                books.policy.recordInsert(record.key, size: size)
                var strays = 0
                while books.statistics.bytes > byteLimit || books.statistics.count > countLimit,
                    let victim = books.policy.victim()
                {
                    guard let evicted = removeLocked(HashedKey(victim), from: &table, books: &books) else {
                        // A key the policy tracks and the table does not hold: forget it. A policy
                        // that keeps naming such keys cannot make room; stop rather than spin.
                        books.policy.recordRemoval(victim)
                        strays += 1
                        if strays > table.count + 16 { break }
                        continue
                    }
                    books.statistics.evictions += 1
                    released.evicted(evicted)
                }
                return released
            }
        }
    }

    /// Removes the record under `key`.
    public func remove(_ key: String) async { removeNow(key) }

    /// The same removal without suspending.
    package func removeNow(_ key: String) {
        let hashed = HashedKey(key)
        let removed = books.withLock { books in
            books.watched[key]?.removed = true
            return table.write { table in removeLocked(hashed, from: &table, books: &books) }
        }
        withExtendedLifetime(removed) {}  // (freed here, after the locks)
    }

    /// Removes every record.
    public func removeAll() async {
        let removed = books.withLock { books in
            for key in books.watched.keys { books.watched[key]?.removed = true }
            return table.write { table in
                Array(table.keys).compactMap { key in removeLocked(key, from: &table, books: &books) }
            }
        }
        withExtendedLifetime(removed) {}  // (freed here, after the locks)
    }

    /// Counters and sizes.
    public var statistics: StorageStatistics { books.withLock { $0.statistics } }

    @discardableResult
    private func removeLocked(_ key: HashedKey, from table: inout Table, books: inout Books) -> CacheRecord? {
        guard let held = table.removeValue(forKey: key) else { return nil }
        generations.bump(hash: key.hash)
        books.statistics.count -= 1
        books.statistics.bytes -= held.size
        books.policy.recordRemoval(key.text)
        return held.record
    }
}
