import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a user asks an ``HTTPCache`` besides its hook events: its statistics, its keys, and
/// waits for the work it does after answering.
extension HTTPCache {
    /// What the cache did so far, with the storage's counters.
    public var statistics: CacheStatistics {
        var statistics = counts.statistics
        statistics.waiting = leads.waiting
        statistics.storage = storage.statistics
        return statistics
    }

    /// Waits until every store the cache began after answering before this call (a miss over a
    /// ``MemoryStorage`` is stored just after its caller has the response; a freshened body kept in
    /// the store is rewritten after its 304's answer) has reached the storage, then flushes the
    /// storage (``CacheStorage/flush()``). The cache's own lookups never need it: they wait for a
    /// pending store of their key. Call it before reading the storage or
    /// ``statistics``' `stores` directly, and before a process exits.
    public func flush() async {
        await writer.pending.waitForWritesBegun()
        await storage.flush()
    }

    /// Waits until every background refresh (`stale-while-revalidate`) started so far has finished.
    public func waitForBackgroundRefreshes() async {
        await leads.waitForRefreshes()
    }

    /// The storage key of `request`: the namespace and the canonical URL (see
    /// ``CacheKeyPolicy``), with the values of secret query parameters replaced by keyed
    /// hashes; `nil` when the request cannot be cached.
    ///
    /// Requests that differ in credentials or in the key's header fields share the key: they
    /// are told apart by the partition of each stored response, so one removal of the key (an
    /// invalidation) removes the URL for everyone.
    public func key(for request: URLRequest) -> String? {
        locator.location(of: request)?.key
    }

    /// The per-core copies held, their bytes, the number of tables and of dormant ones (for
    /// tests); nil without copies.
    var copyUsage: (copies: Int, bytes: Int, tables: Int, dormant: Int)? { lookup.memory?.usage }

    /// Where stores made after their answers run (tests suspend it to hold them back).
    var writeBehindQueue: DispatchQueue? { behind?.queue }
}
