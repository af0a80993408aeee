import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A private HTTP cache (RFC 9111, with RFC 5861's `stale-while-revalidate` and
/// `stale-if-error`) as a ``ServiceHook``.
///
/// ```swift
/// let cache = HTTPCache(storage: TieredStorage(memory: MemoryStorage(), lower: try DiskStorage(directory: dir)))
/// let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache], retrierFactory: .exponentialBackoff())
/// ```
///
/// - `decide` (or `onSchedule`) answers fresh entries (source `.cache`), serves stale ones where
///   allowed (`.stale`), or adds validators (`If-None-Match`, `If-Modified-Since`) and lets the
///   request go on, with a follow-up (``HookFollowUp``) that carries the request's state to its
///   answer.
/// - The follow-up stores cacheable responses, merges a 304 into the stored entry (`.revalidated`),
///   serves stale on a 5xx when `stale-if-error` allows, and invalidates on unsafe methods.
///   On a failure it serves stale when `stale-if-error` allows (also after the retrier gave up),
///   and answers 504 for a `must-revalidate` entry whose origin cannot be reached.
/// - Concurrent misses on one key share one origin request (coalescing).
///
/// Place it outside the retrier (it is a hook, so it is) and outside hooks that change
/// responses; see docs/caching.md for every rule and option.
public final class HTTPCache: ServiceHook {
    /// Where entries live.
    public let storage: any CacheStorage
    /// The settings.
    public let configuration: CacheConfiguration
    /// Shares misses with the other processes on the same storage, when given.
    public let coordinator: (any FetchCoordinator)?
    /// Every decision, made of the rules.
    let strategy: CacheStrategy
    let now: @Sendable () -> Date
    /// What it counts: hits, misses, stores… (also told to each request as events).
    let counts = CacheCounters()
    /// Finds what the cache knows of a request before deciding: where it is stored, its record.
    let lookup: CacheLookup
    /// Who fetches for whom: coalesced misses, the fleet's claims, background refreshes.
    let leads: CacheLeads
    /// Works out (and remembers) where each request's responses are stored.
    let locator: CacheLocator
    /// Writes records in order per key, and counts removals and writes.
    let writer: CacheWriter
    /// Stores made after their answers, over a ``MemoryStorage``.
    let behind: WriteBehind?

    /// Creates a cache over `storage`; `now` gives the current date (inject it in tests).
    ///
    /// - Parameters:
    ///   - storage: where responses are kept (a ``MemoryStorage`` by default).
    ///   - configuration: the cache's rules and limits.
    ///   - coordinator: for a storage several processes share, lets one of them fetch a
    ///     missing response for all (see ``FetchCoordinator``); used only when
    ///     ``CacheConfiguration/coalescesRequests`` is on.
    ///   - now: the current date.
    public init(
        storage: any CacheStorage = MemoryStorage(), configuration: CacheConfiguration = CacheConfiguration(),
        coordinator: (any FetchCoordinator)? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.storage = storage
        self.configuration = configuration
        self.coordinator = coordinator
        // What the storage offers beyond its protocol (each speed-up in a type of its own): a memory
        // read first, per core (a memory tier); storing after answering (all of it in memory).
        let whole = storage.isWhollyInMemory ? storage.memoryTier : nil
        let writesBehind = configuration.writesBehind && whole != nil
        let leads = CacheLeads(coordinator: coordinator, countsFetchEvents: writesBehind)
        self.leads = leads
        self.now = now
        let partitioner = CachePartitioner(secret: configuration.secret?.bytes ?? storage.secret, configuration: configuration)
        let locator = CacheLocator(configuration: configuration, partitioner: partitioner)
        self.locator = locator
        let strategy = CacheStrategy(
            rules: CacheRules(configuration: configuration), partitioner: partitioner,
            completionLimit: storage.entryLimit)
        self.strategy = strategy
        let writer = CacheWriter(storage: storage, memory: whole, records: strategy.records, counts: counts)
        self.writer = writer
        let behind = writesBehind ? whole.map { WriteBehind(memory: $0, writer: writer, records: strategy.records, leads: leads) } : nil
        self.behind = behind
        self.lookup = CacheLookup(
            strategy: strategy, locator: locator, partitioner: partitioner, storage: storage,
            memory: storage.memoryTier.map {
                MemoryReads(memory: $0, copyBytesPerCore: configuration.copyBytesPerCore, missesAreFinal: whole != nil)
            },
            writer: writer, now: now)
    }

    // MARK: After the network

    // (The cache's own `onSuccess` and `onFailure` are the protocol's, which do nothing: a request
    // it passes on carries its state in the follow-up it decided with, `CacheRequestState`.)

    /// Stores, merges 304s, serves stale on 5xx where allowed, invalidates on unsafe methods: the
    /// answer to a request the cache passed on in `state` (its follow-up); `inner`: the stages
    /// inside the cache, for a 304 that matches nothing stored (without them such a 304 throws
    /// ``CacheError/unmatchedNotModified(_:)``).
    ///
    /// What is stored is decided on the request that actually went out (``RecallContext/lastSentRequest``:
    /// a credential added by a retrier or an inner hook partitions the entry) and under the URL
    /// that answered (a redirected response is stored for its own URL, never for the one that
    /// redirected).
    func finish(
        _ response: RecallResponse, for request: URLRequest, state: CacheRequestState, context: RecallContext, inner: InnerStages?
    ) async throws -> RecallResponse {
        let sent = context.lastSentRequest ?? request
        let lifetime = context[RequestLifetime.self]?.seconds
        if response.body.isStreamed {
            return try await streamed(response, for: request, sent: sent, lifetime: lifetime, state: state, context: context, inner: inner)
        }
        if let behind, let ticket = behind.begin(response, for: request, sent: sent, state: state) {
            // Whatever is decided, the answer is the response itself: decide and store after it.
            let answeredAt = now()
            behind.run { [self] in
                let (after, _, target) = decide(
                    response, for: request, sent: sent, lifetime: lifetime, at: answeredAt, state: state,
                    context: context)
                // (Its lead ends there too.)
                _ = behind.land(after, at: target, state: state, context: state.isRefresh ? nil : context, ticket: ticket)
            }
            return response
        }
        defer { leads.finish(state.lead) }
        let (after, exchange, target) = decide(response, for: request, sent: sent, lifetime: lifetime, at: now(), state: state, context: context)
        return try await act(on: after, response, for: request, sent: sent, exchange: exchange, target: target, state: state, context: context, inner: inner)
    }

    /// What the strategy decides for `response`, answered at `date` for `request` (which went out
    /// as `sent`), counted; with the exchange and where the answer belongs (``CacheLocator/exchange(_:for:sent:lifetime:at:state:)``).
    func decide(
        _ response: RecallResponse, for request: URLRequest, sent: URLRequest, lifetime: Double?, at date: Date,
        state: CacheRequestState, context: RecallContext
    )
        -> (CacheStrategy.After, CacheStrategy.Exchange, CacheLocator.Location?)
    {
        let (exchange, target) = locator.exchange(response, for: request, sent: sent, lifetime: lifetime, at: date, state: state)
        let after = strategy.after(response, mode: state.mode, exchange: exchange)
        counts.count(after, response: response, mode: state.mode, method: state.method, isRefresh: state.isRefresh, context: context)
        return (after, exchange, target)
    }

    /// Carries out what the strategy decided after the network, for `response` to `request`
    /// (sent as `sent`) in `exchange`; `target` is where the answer belongs.
    func act(
        on after: CacheStrategy.After, _ response: RecallResponse, for request: URLRequest, sent: URLRequest,
        exchange: CacheStrategy.Exchange, target: CacheLocator.Location?, state: CacheRequestState,
        context: RecallContext, inner: InnerStages?
    ) async throws -> RecallResponse {
        // Where stores record their events: nowhere for a background refresh (it counts nothing).
        let recording = state.isRefresh ? nil : context
        // Stores `entry` where the answer belongs.
        func storeAnswer(_ entry: CacheEntry) async {
            guard let target else { return }
            await writer.store(entry, at: target, prior: state.prior(for: target.key), since: state.since, context: recording)
        }
        switch after {
        case .pass:
            return response
        case .store(let entry):
            await storeAnswer(entry)
            return response
        case .revalidated(let entry, let answer) where entry.storedBody != nil:
            // Its body stays in the store, and the record's new head means copying it: after the
            // answer, which reads the old record's body (held open, it stays until read).
            let afterAnswering = target.map { writer.storeAfterAnswering(entry, at: $0, since: state.since, context: recording) } ?? false
            if !afterAnswering { await storeAnswer(entry) }
            return answer
        case .storeAndAnswer(let entry, let answer), .revalidated(let entry, let answer):
            await storeAnswer(entry)
            return answer
        case .serveStale(let answer, _):
            return answer
        case .remove:
            await writer.remove(state.key)
            return response
        case .discard(let outdated):
            await writer.discard(outdated, key: state.key)
            return response
        case .discardAndAnswer(let outdated, let answer):
            await writer.discard(outdated, key: state.key)
            return answer
        case .invalidate(let urls, let post):
            for key in locator.keys(of: urls, like: sent) { await writer.remove(key, counting: true) }
            // (The write's own answer: stored after its invalidation, whatever came before.)
            if let post, let location = locator.location(of: CacheStrategy.asGet(sent)) {
                await writer.store(post, at: location, prior: .unread, since: await writer.since(location), context: recording)
            }
            return response
        case .refetch(let unconditional, let removing):
            if removing { await writer.remove(state.key) }
            guard let inner else { throw CacheError.unmatchedNotModified(request.url) }
            let refetching = state.refetching(since: removing ? await writer.since(state.location) : state.since, removed: removing)
            return try await finish(
                try await inner.send(unconditional, context: context), for: unconditional, state: refetching, context: context,
                inner: inner)
        case .freshen:
            if let target {
                await writer.freshen(
                    target, partition: exchange.partition, request: exchange.answered, with: response, state: state,
                    at: exchange.now, context: recording)
            }
            return response
        }
    }

    /// Serves stale when `stale-if-error` or a disconnection allows; answers 504 for
    /// `must-revalidate` entries: the failure of a request the cache passed on in `state` (its
    /// follow-up; `inner` as for ``finish(_:for:state:context:inner:)``).
    func fail(
        _ error: any Error, for request: URLRequest, state: CacheRequestState, context: RecallContext, inner: InnerStages?
    ) async throws -> RecallResponse? {
        if let refused = error as? UnacceptableStatusError {
            // A StatusValidator inside the cache refused an answer: the cache still takes it as
            // an answer (stores it, merges a 304, serves stale for a 5xx) and recovers the
            // request only with a stored response; anything else stays the validator's failure.
            let answer = try await finish(refused.response, for: request, state: state, context: context, inner: inner)
            return answer.source == .network ? nil : answer
        }
        // A cancelled leader hands its miss to one waiting request instead of sending them all
        // to the origin at once.
        let cancelled = Task.isCancelled || error is CancellationError
        defer { cancelled ? leads.abandon(state.lead) : leads.finish(state.lead) }
        let failure = strategy.afterFailure(error, mode: state.mode, request: request, now: now())
        counts.count(failure, mode: state.mode, isRefresh: state.isRefresh, context: context)
        switch failure {
        case .serveStale(let answer, _): return answer
        case .gatewayTimeout(let answer): return state.isRefresh ? nil : answer
        case .fail: return nil
        }
    }
}
