import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the cache remembers about a request between its decision and its answer: the request's
/// follow-up (``HookFollowUp``), which the pipeline hands the outcome.
///
/// An immutable object, not a struct: it travels from the decision with the request to the
/// outcome and on to a write-behind store, and a copy of a reference is one reference count where
/// a copy of the struct was one for each of its parts; handed over as a follow-up, it allocates
/// nothing more.
final class CacheRequestState: ResendingFollowUp {
    /// The cache the request went through, which handles its outcome.
    let cache: HTTPCache
    let location: CacheLocator.Location
    let method: RequestMethod
    let partition: String
    let inScope: Set<String>
    let requestTime: Date
    /// The removal counts when the request started: its answer is stored only while they
    /// hold (``InvalidationEpochs``).
    let since: InvalidationEpochs.Snapshot
    /// The record as the lookup found it (`nil`: there was none, or no lookup).
    let record: CacheRecord?
    /// What the request is to the cache (see ``CacheStrategy/Mode``).
    let mode: CacheStrategy.Mode
    /// What the request leads, to be finished when it ends (once: a refetch drops it).
    let lead: Lead?
    /// A background refresh (`stale-while-revalidate`): it serves nobody, so it counts
    /// nothing and answers no 504 — also when it is refetched.
    let isRefresh: Bool
    /// The cache's count of requests gone to the origin and leads ended when this one went out
    /// (``CacheLeads/fetchBegins()``; a refetch keeps its first request's): moved by its answer,
    /// others came and went meanwhile. `nil`: not counted (a request that does not store behind).
    let fetchEvents: UInt64?

    init(
        cache: HTTPCache, location: CacheLocator.Location, method: RequestMethod, partition: String, inScope: Set<String>, requestTime: Date,
        since: InvalidationEpochs.Snapshot, record: CacheRecord?, mode: CacheStrategy.Mode, lead: Lead?, isRefresh: Bool = false,
        fetchEvents: UInt64? = nil
    ) {
        self.cache = cache
        self.location = location
        self.method = method
        self.partition = partition
        self.inScope = inScope
        self.requestTime = requestTime
        self.since = since
        self.record = record
        self.mode = mode
        self.lead = lead
        self.isRefresh = isRefresh
        self.fetchEvents = fetchEvents
    }

    /// This state for the request sent again after an answer that could not serve it (an
    /// unmatched 304, a range answer short of the caller's range): no lead (it ends once, with
    /// the call that made the refetch). It starts anew at the removal counts `since`; `removed`:
    /// the key's record was removed first (else what the lookup found is still there, and a store
    /// keeps the other partitions' responses).
    func refetching(since: InvalidationEpochs.Snapshot, removed: Bool) -> CacheRequestState {
        CacheRequestState(
            cache: cache, location: location, method: method, partition: partition, inScope: inScope, requestTime: requestTime,
            since: since, record: removed ? nil : record, mode: .refetching, lead: nil, isRefresh: isRefresh, fetchEvents: fetchEvents)
    }

    /// The answer from further in, to the cache (``HTTPCache/finish(_:for:state:context:inner:)``).
    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse
    {
        try await cache.finish(response, for: request, state: self, context: context, inner: inner)
    }

    /// The failure further in, to the cache (``HTTPCache/fail(_:for:state:context:inner:)``).
    func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext, inner: InnerStages?) async throws
        -> RecallResponse?
    {
        try await cache.fail(error, for: request, state: self, context: context, inner: inner)
    }

    /// The storage key of the request.
    var key: String { location.key }

    /// What the writer knows of the record under `key` before a store: what the lookup found,
    /// for the request's own key; nothing for another (a redirect's, a `POST`'s answer stored
    /// for a later `GET`).
    func prior(for key: String) -> CacheWriter.Prior {
        key == self.key ? .found(record) : .unread
    }

    /// What a request leads for others.
    enum Lead: Sendable, Equatable {
        /// The origin request of a miss that concurrent misses wait for (this coalescing key),
        /// and the name of the fetch claimed from the ``FetchCoordinator`` for other processes.
        case flight(HashedKey, claim: String?)
        /// The background refresh of this storage key.
        case refresh(String)
        /// An origin request that nobody waits for (coalescing off; a request the cache does not
        /// coalesce, conditional or ranged; a follower that fetches after all): it leads nothing,
        /// but counts among the fetches under way until it ends
        /// (``CacheLeads/othersFetching(besides:since:)``).
        case alone
    }
}
