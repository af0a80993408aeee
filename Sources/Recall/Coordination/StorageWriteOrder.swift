import Synchronization

/// The order of the writes made to one storage by every ``HTTPCache`` over it: one write of a
/// key at a time, and a count of removals per stripe of keys, so that an answer to a request
/// that began before a key's removal is never stored after it — whichever cache made the
/// request and whichever made the removal.
///
/// A storage that several caches in one process may share keeps one and returns it from
/// ``CacheStorage/writeOrder`` (``MemoryStorage``, ``DiskStorage`` and ``TieredStorage`` do);
/// a cache over a storage that keeps none orders its own writes only. Processes that share a
/// storage (replicas over one database table) need the storage itself to refuse a store made
/// stale by a removal elsewhere.
public final class StorageWriteOrder: Sendable {
    /// One write of a key at a time.
    let keys = KeyedLock()
    /// Removals per stripe of keys.
    let epochs = InvalidationEpochs()
    /// Completed stores and removals: a lookup that reads it before and after knows whether
    /// anything can have been stored meanwhile.
    let writeCount = Atomic<UInt64>(0)

    /// A new order, for a storage to keep for its lifetime.
    public init() {}
}
