/// What an ``HTTPCache`` did with a request, recorded in its ``RecallContext`` as
/// ``RecallEvent/cache(_:)`` next to the retry events, so one observer sees the whole story of
/// a request. The events match ``CacheStatistics`` one for one (a background refresh records
/// none, as it counts none), plus ``stored``, ``invalidated`` and ``evicted(count:)``.
public enum CacheEvent: Sendable, Hashable, CustomStringConvertible {
    /// Answered from a fresh stored response, without the origin.
    case hit
    /// Nothing usable was stored: the request went to the origin.
    case miss
    /// The stored response was validated and confirmed (a `304`).
    case revalidated
    /// The stored response was validated and the origin sent a new one.
    case changed
    /// A stored response was served stale, for `reason`.
    case stale(StaleReason)
    /// The request waited for an identical request already on its way to the origin.
    case coalesced
    /// The request was not the cache's to answer (a method, a field or a policy it leaves alone).
    case bypassed
    /// `only-if-cached` with nothing usable stored: answered `504`.
    case gatewayTimeout
    /// A response was stored (or a stored one updated).
    case stored
    /// A response that was to be stored was not: its streamed body was too large or did not
    /// arrive whole.
    case notStored(NotStoredReason)
    /// Stored responses were removed: invalidated by an unsafe method, or outdated.
    case invalidated
    /// The storage evicted `count` records to stay within its limits. A ``MemoryStorage`` tells
    /// what each store evicted, so the event goes to the request whose store made room. Other
    /// storages are looked at after each store (what they evicted since the last look), so for
    /// one that evicts in the background (``DiskStorage``) it may go to a later request; over
    /// time the counts add up to ``StorageStatistics/evictions`` (a memory storage's evictions
    /// made by stores around this cache are not reported here).
    case evicted(count: Int)

    /// The metric label of the event: `hit`, `miss`, `revalidated`, `changed`, `stale`,
    /// `coalesced`, `bypassed`, `gatewayTimeout`, `stored`, `notStored`, `invalidated`, `evicted`.
    public var name: String {
        switch self {
        case .hit: "hit"
        case .miss: "miss"
        case .revalidated: "revalidated"
        case .changed: "changed"
        case .stale: "stale"
        case .coalesced: "coalesced"
        case .bypassed: "bypassed"
        case .gatewayTimeout: "gatewayTimeout"
        case .stored: "stored"
        case .notStored: "notStored"
        case .invalidated: "invalidated"
        case .evicted: "evicted"
        }
    }

    /// Such as `cache hit` or `cache stale (staleIfError)`.
    public var description: String {
        if case .stale(let reason) = self { return "cache stale (\(reason))" }
        if case .evicted(let count) = self { return "cache evicted \(count)" }
        if case .notStored(let reason) = self { return "cache notStored (\(reason))" }
        return "cache \(name)"
    }
}
