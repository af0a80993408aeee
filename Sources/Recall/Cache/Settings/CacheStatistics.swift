/// What an ``HTTPCache`` did, counted since it was created.
///
/// Every request the cache considers (GET and HEAD that are not bypassed) ends as exactly one
/// of: a hit, a stale answer, a revalidation (304 merged), a changed revalidation (the origin
/// sent a new response), or a miss. ``hitRatio`` is (hits + stale + revalidated) over all of those.
public struct CacheStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Answered from cache while fresh, without contacting the origin.
    public var hits = 0
    /// Not answerable from cache; fetched from the origin (a single-range request sent to the
    /// origin counts here too, also when only the bytes that stored pieces lack were asked for).
    public var misses = 0
    /// A stored response confirmed by a 304 and served.
    public var revalidated = 0
    /// A conditional request answered with a new full response.
    public var revalidatedChanged = 0
    /// Stale answers, by reason.
    public var staleServed: [StaleReason: Int] = [:]
    /// Revalidations answered with a 304 that did not match the stored response, sent again
    /// without validators (each also counts in ``revalidatedChanged``).
    public var refetched = 0
    /// Responses stored.
    public var stores = 0
    /// Responses that were to be stored and were not, by reason (a streamed body too large for
    /// the storage, or one that did not arrive whole).
    public var notStored: [NotStoredReason: Int] = [:]
    /// Stored responses removed by an unsafe request (POST, PUT, DELETE, PATCH).
    public var invalidations = 0
    /// Requests that waited for an identical request in flight and were answered by what it
    /// stored, instead of contacting the origin (one that must fetch after all is a miss only).
    public var coalesced = 0
    /// Requests waiting right now for an identical request in flight (a gauge, not a count).
    public var waiting = 0
    /// Requests passed through without looking at the cache (unsafe methods, several ranges, bypass).
    public var bypassed = 0
    /// `only-if-cached` requests answered 504 for want of a usable entry.
    public var gatewayTimeouts = 0
    /// The storage's counters (size, evictions, corrupt entries, write failures).
    public var storage = StorageStatistics()

    /// Stale answers of every reason.
    public var stale: Int { staleServed.values.reduce(0, +) }

    /// Requests that looked at the cache.
    public var lookups: Int { hits + misses + revalidated + revalidatedChanged + stale }

    /// The share of lookups answered without transferring a body from the origin.
    public var hitRatio: Double {
        lookups == 0 ? 0 : Double(hits + stale + revalidated) / Double(lookups)
    }

    /// Creates zeroed statistics.
    public init() {}

    /// A compact one-line summary.
    public var description: String {
        let ratio = (hitRatio * 1000).rounded() / 10
        return "hits \(hits), misses \(misses), revalidated \(revalidated) (+\(revalidatedChanged) changed), stale \(stale), "
            + "stores \(stores), invalidations \(invalidations), coalesced \(coalesced); hit ratio \(ratio) %"
    }
}

/// Why a stale response was served.
public enum StaleReason: String, Sendable, Hashable, CaseIterable {
    /// The request's `max-stale` allowed it.
    case maxStale
    /// `stale-while-revalidate`: served while a background refresh runs.
    case staleWhileRevalidate
    /// `stale-if-error`: the origin failed or could not be reached.
    case staleIfError
    /// The request's `cachePolicy` asked for cached data whatever its age.
    case cachePolicy
    /// The origin could not be reached at all (RFC 9111 §4.2.4 "disconnected"): connection
    /// refused or reset, DNS failure, a circuit breaker refusing.
    case disconnected
}
