import Foundation

/// Where an ``HTTPCache`` keeps its records: in memory, on disk, in a database, or tiers of them.
///
/// Two kinds implement it:
/// - ``MemoryStorage`` keeps decoded records, so a memory hit decodes nothing;
/// - a ``CacheByteStore`` keeps bytes by key (``DiskStorage``, or your own backend in a hundred
///   lines of I/O); the records are encoded and checked for it, once, by the protocol.
///
/// ``TieredStorage`` puts any two in front of each other. The cache picks the stored variant
/// for a request (Vary, partitions) itself; a storage only moves records by key.
///
/// Storage never throws at the cache: a record that cannot be read is a miss, a write that
/// fails is counted in ``statistics``. Implementations must be safe to call concurrently.
public protocol CacheStorage: Sendable {
    /// The record stored under `key`, or `nil`. Implementations compare the stored full key
    /// with `key` and answer `nil` on a mismatch.
    func record(for key: String) async -> CacheRecord?
    /// The record under `key` read as the fleet's coordination says (``RecordLookup``: what a
    /// claim or a wait of a ``FetchCoordinator`` found out). A storage that is not its own
    /// coordinator has no use for it: the default reads as ``record(for:)`` does. A storage that
    /// wraps one that is (metrics, encryption around a `PostgresStorage`) forwards this call,
    /// else the hint is lost (a read the claim made needless, a wait's read cut short).
    func record(for key: String, lookup: RecordLookup) async -> CacheRecord?
    /// The record under `key` when the storage has it at hand without suspending (memory, a
    /// file it holds open), or `nil` — then the cache asks ``record(for:lookup:)``. A storage that can
    /// serve hits this way lets ``HTTPCache`` answer them without an async call. The default is `nil`.
    func recordWithoutSuspending(for key: String) -> CacheRecord?
    /// The ``MemoryStorage`` of this process that this storage reads first, if any: the cache reads
    /// it without suspending and keeps copies of its most-hit records per core
    /// (``CacheConfiguration/copyBytesPerCore``), each checked against that memory's own counts of
    /// change. ``MemoryStorage`` names itself; ``TieredStorage`` passes on its upper tier's. A
    /// storage of your own that keeps a MemoryStorage in front of something else may name it, if
    /// every record in it is one this storage would answer for its key. The default is `nil`.
    var memoryTier: MemoryStorage? { get }
    /// Whether ``memoryTier`` holds everything this storage holds: a miss there is then a miss, and
    /// the cache may store a response after answering it (``CacheConfiguration/writesBehind``).
    /// `true` for ``MemoryStorage`` alone; the default is `false`.
    var isWhollyInMemory: Bool { get }
    /// Stores `record` under its key, replacing what was there. It may complete later, but
    /// a following ``record(for:)`` sees it.
    ///
    /// `expires`: the cache's hint — after it, no response of the record can be served any more
    /// (fresh or stale, under the cache's configuration); `nil` when the record stays useful with
    /// no end (it can be revalidated). A storage with its own expiry (a database row's, a
    /// key-value store's TTL) may drop the record then; none has to.
    func store(_ record: CacheRecord, expires: Date?) async
    /// Begins storing `record` — one variant, whose body is to come — in pieces, for a body too
    /// large to hold in memory: `nil` (the default) when the storage stores records whole only
    /// (the cache then keeps a body up to ``entryLimit`` in memory while it streams).
    func beginStoring(_ record: CacheRecord, expires: Date?) async -> (any RecordWriting)?
    /// Removes the record under `key`.
    func remove(_ key: String) async
    /// Removes every record.
    func removeAll() async
    /// Waits until every write accepted so far is durable where the storage keeps it (a storage
    /// that writes in the background, like ``DiskStorage``, finishes its queue). Call it before a
    /// process exits. The default does nothing.
    func flush() async
    /// Counters and sizes.
    var statistics: StorageStatistics { get }
    /// The largest record it keeps, in bytes: a streamed body longer than this goes to the
    /// caller and is not kept (the cache holds at most this much of it while it streams).
    /// 16 MiB by default.
    var entryLimit: Int { get }
    /// A random secret that lives as long as the stored records: the cache hashes credentials
    /// and secret query values with it (HMAC-SHA256), so what it stores cannot be matched
    /// against guessed values offline. ``DiskStorage`` keeps its secret in its directory
    /// (mode 0600); the default, for storages that do not keep one, is a secret made once per
    /// process (records that depend on it then stop matching after a restart: misses, never
    /// wrong answers).
    var secret: [UInt8] { get }
    /// Calls `observer` with each key (`nil`: every key) changed in this storage other than
    /// through this instance — by another process sharing it (``TieredStorage`` drops its upper
    /// tier's copy then). The default never calls it: the storage changes only through its own calls.
    func subscribe(toChangesElsewhere observer: @escaping @Sendable (String?) async -> Void)
    /// The order of the writes every cache over this storage makes (``StorageWriteOrder``), so
    /// that two caches over it keep "no stale data after a completed write" between them; `nil`
    /// (the default) when each cache orders its own writes only.
    var writeOrder: StorageWriteOrder? { get }
    /// Whether the storage counts removals itself, for processes that share it
    /// (``removalMark(for:)``). `false` by default: within one process, ``writeOrder`` does.
    var countsRemovals: Bool { get }
    /// The storage's removal counts for `key` now (``RemovalMark``), or `nil` when it keeps none.
    /// The cache reads it when a request that may store begins — a miss, a revalidation, a
    /// refresh; never for a fresh hit — and stores that request's answer through
    /// ``store(_:expires:ifNotRemovedSince:)``, whole (not through ``beginStoring(_:expires:)``).
    func removalMark(for key: String) async -> RemovalMark?
    /// Stores `record` as ``store(_:expires:)`` does, unless a key was removed after `mark` was
    /// read — the key's stripe's count when the record's key is of `mark`'s stripe, all removals'
    /// otherwise — checked atomically with the write; whether it stored. The default stores.
    func store(_ record: CacheRecord, expires: Date?, ifNotRemovedSince mark: RemovalMark) async -> Bool
}

extension CacheStorage {
    /// A secret made once per process (see ``CacheStorage/secret``).
    public var secret: [UInt8] { StorageSecret.processWide }

    /// 16 MiB.
    public var entryLimit: Int { 16 << 20 }

    /// Whole records only.
    public func beginStoring(_ record: CacheRecord, expires: Date?) async -> (any RecordWriting)? { nil }

    /// Nothing to wait for: every write is done when ``store(_:expires:)`` returns.
    public func flush() async {}

    /// As ``record(for:)``: `lookup` says nothing to a storage that is not its own coordinator.
    public func record(for key: String, lookup: RecordLookup) async -> CacheRecord? {
        await record(for: key)
    }

    /// Not at hand without suspending: ask ``record(for:)``.
    public func recordWithoutSuspending(for key: String) -> CacheRecord? { nil }

    /// None.
    public var memoryTier: MemoryStorage? { nil }

    /// `false`.
    public var isWhollyInMemory: Bool { false }

    /// Nothing changes it from elsewhere: `observer` is never called.
    public func subscribe(toChangesElsewhere observer: @escaping @Sendable (String?) async -> Void) {}

    /// None: each cache over the storage orders its own writes.
    public var writeOrder: StorageWriteOrder? { nil }

    /// `false`: the storage keeps no removal counts.
    public var countsRemovals: Bool { false }

    /// None kept.
    public func removalMark(for key: String) async -> RemovalMark? { nil }

    /// Stores (a storage that keeps no removal counts has none to check): `true`.
    public func store(_ record: CacheRecord, expires: Date?, ifNotRemovedSince mark: RemovalMark) async -> Bool {
        await store(record, expires: expires)
        return true
    }

    /// Stores `record` with no expiry hint (``store(_:expires:)``).
    public func store(_ record: CacheRecord) async {
        await store(record, expires: nil)
    }
}

/// What a storage holds and what happened to it.
public struct StorageStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Records held.
    public var count = 0
    /// Bytes held.
    public var bytes = 0
    /// Records evicted to stay within the limits.
    public var evictions = 0
    /// Records refused because they exceed the per-entry limit.
    public var rejected = 0
    /// Records found corrupt, removed and treated as misses.
    public var corruptRemoved = 0
    /// Writes that failed (disk full, permissions…).
    public var writeFailures = 0
    /// Bytes of records queued for writing and not yet written (``DiskStorage``).
    public var pendingBytes = 0

    /// Creates zeroed statistics.
    public init() {}

    /// One line with every counter.
    public var description: String {
        "\(count) records, \(bytes) bytes, \(evictions) evicted, \(rejected) rejected, \(corruptRemoved) corrupt removed, \(writeFailures) write failures"
    }
}
