import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What scheduling knows of a request the cache looks up.
struct CacheScheduling: Sendable {
    var facts: RequestFacts
    var route: CacheStrategy.Route
    var location: CacheLocator.Location
    var inScope: Set<String>
    var requestTime: Date
    /// The request's partition ("" for invalidations, which do not read it).
    var partition: String
    /// The removal counts when the request started.
    var since: InvalidationEpochs.Snapshot

    /// The request's state in `cache`, in `mode`, for what goes to the origin (`isRefresh`: as
    /// a background refresh, which is a `GET`; `fetchEvents`: the cache's count of fetch events
    /// as it went out).
    func state(
        in cache: HTTPCache, record: CacheRecord? = nil, mode: CacheStrategy.Mode, lead: CacheRequestState.Lead? = nil,
        isRefresh: Bool = false, fetchEvents: UInt64? = nil
    ) -> CacheRequestState {
        CacheRequestState(
            cache: cache, location: location, method: isRefresh ? .get : facts.method, partition: partition, inScope: inScope,
            requestTime: requestTime, since: since, record: record, mode: mode, lead: lead, isRefresh: isRefresh, fetchEvents: fetchEvents)
    }

    /// The state of the background refresh of the request's key (`stale-while-revalidate`), in
    /// `cache`, which it leads: a `GET`, also for a `HEAD` served stale (its answer has the body).
    func refreshState(in cache: HTTPCache, record: CacheRecord?, mode: CacheStrategy.Mode) -> CacheRequestState {
        state(in: cache, record: record, mode: mode, lead: .refresh(location.key), isRefresh: true)
    }

    /// Where ``HTTPCache``'s scheduling stopped, before a suspension point, with what it found:
    /// held by the ``HookSuspension`` the pipeline awaits (or by `onSchedule`, called directly).
    enum Suspension: Sendable {
        /// A look that must suspend (``CacheLookup/resume(_:)``).
        case lookup(CacheLookup.Waiting)
        /// A request that may store its answer, over a storage that counts removals: read the
        /// storage's mark (``CacheWriter/marking(_:key:)``), then go on with what was decided.
        case mark(CacheScheduling, record: CacheRecord?, before: CacheStrategy.Before)
        /// A miss to share with concurrent misses of its key (coalescing), then decide again.
        case coalesce(CacheScheduling, flightKey: HashedKey, record: CacheRecord?, before: CacheStrategy.Before, writesBefore: UInt64)
    }
}
