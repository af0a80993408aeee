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
/// - `onSchedule` answers fresh entries (source `.cache`), serves stale ones where allowed
///   (`.stale`), or adds validators (`If-None-Match`, `If-Modified-Since`) and lets the request go on.
/// - `onSuccess` stores cacheable responses, merges a 304 into the stored entry (`.revalidated`),
///   serves stale on a 5xx when `stale-if-error` allows, and invalidates on unsafe methods.
/// - `onFailure` serves stale when `stale-if-error` allows (also after the retrier gave up),
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
    private let now: @Sendable () -> Date
    /// What it counts: hits, misses, stores… (also told to each request as events).
    private let counts = CacheCounters()
    /// Who fetches for whom: coalesced misses, the fleet's claims, background refreshes.
    private let leads: CacheLeads
    /// Works out (and remembers) where each request's responses are stored.
    private let locator: CacheLocator
    /// Where a request's responses are stored.
    typealias Location = CacheLocator.Location
    /// Over a ``MemoryStorage``: its hits read through per-core copies. (Any storage reads hits
    /// without an async call through ``CacheStorage/recordWithoutSuspending(for:)``.)
    private let memory: MemoryReads?
    /// The same, for the hit path to use without retaining it (``memory`` keeps it alive): a
    /// retain writes the object's reference count, which every core shares.
    private let unownedMemory: Unmanaged<MemoryReads>?
    private let partitioner: CachePartitioner
    /// Each request's ``State``, in its context.
    private let states = ContextSlot<State>()
    /// Where ``decideWithoutSuspending(_:context:)`` stopped, for ``onSchedule(_:context:)`` to go on from.
    private let suspended = ContextSlot<Suspension>()
    /// Writes records in order per key, and counts removals and writes.
    private let writer: CacheWriter
    /// Stores made after their answers, over a ``MemoryStorage``.
    private let behind: WriteBehind?
    /// Where stores made after their answers run (tests suspend it to hold them back).
    var writeBehindQueue: DispatchQueue? { behind?.queue }

    /// Creates a cache over `storage`; `now` gives the current date (inject it in tests).
    ///
    /// - Parameter coordinator: for a storage several processes share, lets one of them fetch a
    ///   missing response for all (see ``FetchCoordinator``); used only when
    ///   ``CacheConfiguration/coalescesRequests`` is on.
    public init(storage: any CacheStorage = MemoryStorage(), configuration: CacheConfiguration = CacheConfiguration(),
                coordinator: (any FetchCoordinator)? = nil, now: @escaping @Sendable () -> Date = { Date() }) {
        self.storage = storage
        // The one place the cache asks for a storage's type: over memory it copies hits per core
        // and stores after answering (each a speed-up in a type of its own).
        let memory = storage as? MemoryStorage
        self.memory = memory.map { MemoryReads(memory: $0, copyBytesPerCore: configuration.copyBytesPerCore) }
        self.unownedMemory = self.memory.map { Unmanaged.passUnretained($0) }
        self.configuration = configuration
        self.coordinator = coordinator
        self.leads = CacheLeads(coordinator: coordinator)
        self.now = now
        self.partitioner = CachePartitioner(secret: configuration.secret?.bytes ?? storage.secret, configuration: configuration)
        self.locator = CacheLocator(configuration: configuration, partitioner: partitioner)
        self.strategy = CacheStrategy(rules: CacheRules(configuration: configuration), partitioner: partitioner)
        let writer = CacheWriter(storage: storage, memory: memory, strategy: strategy, counts: counts)
        self.writer = writer
        if configuration.writesBehind, let memory {
            self.behind = WriteBehind(memory: memory, writer: writer, strategy: strategy)
        } else {
            self.behind = nil
        }
    }

    /// What the cache did so far, with the storage's counters.
    public var statistics: CacheStatistics {
        var statistics = counts.statistics
        statistics.waiting = leads.waiting
        statistics.storage = storage.statistics
        return statistics
    }

    /// Waits until every store the cache began after answering before this call (a miss over a
    /// ``MemoryStorage`` is stored just after its caller has the response) has reached the
    /// storage, then flushes the storage (``CacheStorage/flush()``). The cache's own lookups never need it: they wait
    /// for a pending store of their key. Call it before reading the storage or
    /// ``statistics``' `stores` directly, and before a process exits.
    public func flush() async {
        await behind?.waitForWritesBegun()
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
    var copyUsage: (copies: Int, bytes: Int, tables: Int, dormant: Int)? { memory?.usage }

    /// The partition of `request` (see ``CachePartitioner``).
    private func partition(of request: URLRequest, _ facts: RequestFacts, at location: Location, inScope: Set<String>) -> String {
        partitioner.partition(for: request, hasFields: facts.hasFields, userinfo: location.userinfo, inScope: inScope)
    }

    /// What the cache remembers about a request between `onSchedule` and its answer.
    typealias State = CacheRequestState
    /// What a request leads for others.
    typealias Lead = CacheRequestState.Lead

    // MARK: Hook events

    /// Answers a hit from a storage that reads without suspending, or passes on a request it
    /// can decide on at once; `nil` when it has to wait (what it found is left in the request's
    /// context for ``onSchedule(_:context:)`` to go on from).
    public func decideWithoutSuspending(_ request: URLRequest, context: RecallContext) -> HookAction? {
        schedule(request, context: context)
    }

    /// Answers from cache, or passes the request on (with validators when revalidating).
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        // Where decideWithoutSuspending stopped for this request; else schedule now, up to where it stops.
        var next = context.take(suspended).flatMap { $0.isFor(request) ? $0 : nil }
        if next == nil {
            if let action = schedule(request, context: context) { return action }
            next = context.take(suspended)
        }
        while let suspension = next {
            if let action = try await resume(suspension, request, context: context) { return action }
            next = context.take(suspended)
        }
        assertionFailure("a scheduling step decided nothing and left no next step")
        return .proceed(request)
    }

    /// Stops scheduling before a suspension point: leaves `suspension` in the request's context
    /// for ``onSchedule(_:context:)`` and returns `nil` (no decision yet).
    private func suspend(_ suspension: Suspension, _ context: RecallContext) -> HookAction? {
        context[suspended] = suspension
        return nil
    }

    /// What scheduling knows of a request the cache looks up.
    typealias Scheduling = CacheScheduling
    /// Where scheduling stopped, before a suspension point, with what it found.
    typealias Suspension = CacheScheduling.Suspension

    /// `onSchedule` as far as it goes without suspending: all of it for a hit over a
    /// ``MemoryStorage``, which a ``Pipeline`` with this cache first then answers without an async call.
    private func schedule(_ request: URLRequest, context: RecallContext) -> HookAction? {
        let facts = RequestFacts(request)
        let route = strategy.route(request, facts)
        // A plain lookup first tries the calling core's copies: a hit there touches nothing
        // another core touches (not even the URL memo).
        let text = route == .bypass ? nil : facts.url?.absoluteString
        // (Not `text.flatMap(memory.look(for:))`: the method as a value retains its object, a
        // write to a count every core shares.)
        var copy: MemoryReads.Lookup?
        if route == .lookup, let text { copy = unownedMemory?._withUnsafeGuaranteedRef { $0.look(for: text) } }
        guard route != .bypass, let text, let location = copy?.hit?.location ?? locator.location(ofText: text) else {
            counts.bypass(context)
            return .proceed(request)
        }
        let inScope = Self.inScope
        // Every route that reads a record or stores a state reads the partition, but invalidation.
        let partition = route == .invalidate ? "" : partition(of: request, facts, at: location, inScope: inScope)
        let scheduling = Scheduling(facts: facts, route: route, location: location, inScope: inScope, requestTime: now(),
                                    partition: partition, since: writer.epochs.snapshot(stripe: location.epochStripe))
        // A store made after its answer lands before anything else reads or writes its key.
        if behind?.mayHold(stripe: location.stripe) == true { return suspend(.pendingWrite(scheduling), context) }
        return schedule(scheduling, copy: copy, request, context: context)
    }

    /// The rest of ``schedule(_:context:)``, once no store of the key is pending. `copy` is what
    /// the calling core's copies hold for the URL (none after a wait: the storage changed).
    private func schedule(_ scheduling: Scheduling, copy: MemoryReads.Lookup?, _ request: URLRequest,
                          context: RecallContext) -> HookAction? {
        let location = scheduling.location
        switch scheduling.route {
        case .bypass: // (sorted out before)
            counts.bypass(context)
            return .proceed(request)
        case .invalidate:
            context[states] = scheduling.state(mode: .invalidating)
            counts.bypass(context)
            return .proceed(request)
        case .callerConditional:
            context[states] = scheduling.state(mode: .callerConditional)
            counts.bypass(context)
            return .proceed(request)
        case .range(let range):
            return suspend(.range(scheduling, range), context)
        case .lookup:
            // The hit path builds no per-request state: only what goes to the origin needs one.
            let writesBefore = writer.writes
            let record: CacheRecord?
            if let memory = unownedMemory {
                // A memory storage answers without suspending, a copy of its record first (checked
                // again now that no store of the key is pending and the write count is read).
                record = memory._withUnsafeGuaranteedRef { $0.record(at: location, copy: copy) }
            } else if let found = storage.recordWithoutSuspending(for: location.key), found.key == location.key {
                // So does any storage for what it has at hand (a file held open, a memory tier).
                record = found
            } else {
                return suspend(.lookup(scheduling, writesBefore: writesBefore), context)
            }
            return decide(scheduling, record: record, writesBefore: writesBefore, request, context: context)
        }
    }

    /// What a plain lookup that found `record` does: a miss to coalesce suspends.
    private func decide(_ scheduling: Scheduling, record: CacheRecord?, writesBefore: UInt64, _ request: URLRequest,
                        context: RecallContext) -> HookAction? {
        if record != nil { locator.remember(scheduling.location, for: scheduling.facts.url) }
        let before = self.before(request, scheduling, record: record)
        if case .send = before, configuration.coalescesRequests {
            let key = scheduling.location.key
            // A request that starts after an invalidation of its key never waits for a fetch
            // that began before it: the epoch is part of what requests coalesce on.
            let flightKey = RequestCoalescer.key(key, request, hasFields: scheduling.facts.hasFields, epoch: scheduling.since.epoch)
            // Over a memory storage, with no other process to ask, a miss nobody leads yet is
            // led without suspending; the others wait for their leader.
            guard let memory, let lead = leads.leadWithoutSuspending(flightKey) else {
                return suspend(.coalesce(scheduling, flightKey: flightKey, record: record, before: before, writesBefore: writesBefore), context)
            }
            var (record, before) = (record, before)
            // Another leader may have stored the entry between our lookup and our lead.
            if writer.writes != writesBefore {
                record = memory.current(key)
                before = self.before(request, scheduling, record: record)
            }
            return act(on: before, request: request, key: key, lead: lead, context: context) {
                scheduling.state(record: record, mode: $0, lead: lead)
            }
        }
        return act(on: before, request: request, key: scheduling.location.key, lead: nil, context: context) {
            scheduling.state(record: record, mode: $0)
        }
    }

    /// What the strategy decides before the network for `request`, as `scheduling` knows it,
    /// with `record` found (at the request's time unless `now` says otherwise).
    private func before(_ request: URLRequest, _ scheduling: Scheduling, record: CacheRecord?, now: Date? = nil) -> CacheStrategy.Before {
        strategy.before(request, scheduling.facts, record: record, partition: scheduling.partition, inScope: scheduling.inScope,
                        now: now ?? scheduling.requestTime)
    }

    /// Goes on from where ``schedule(_:context:)`` stopped.
    /// `nil` when it stops again (``suspend(_:_:)``).
    private func resume(_ suspension: Suspension, _ request: URLRequest, context: RecallContext) async throws -> HookAction? {
        switch suspension {
        case .pendingWrite(var scheduling):
            await writer.keys.waitUntilFree(scheduling.location.key)
            scheduling.requestTime = now()
            return schedule(scheduling, copy: nil, request, context: context)
        case .range(let scheduling, let range):
            let record = await writer.lookup(scheduling.location.key)
            if record != nil { locator.remember(scheduling.location, for: scheduling.facts.url) }
            let before = strategy.before(request, scheduling.facts, range: range, record: record, partition: scheduling.partition,
                                         inScope: scheduling.inScope, now: scheduling.requestTime)
            return act(on: before, request: request, key: scheduling.location.key, lead: nil, context: context) {
                scheduling.state(record: record, mode: $0)
            }
        case .lookup(let scheduling, let writesBefore):
            let record = await writer.lookup(scheduling.location.key)
            return decide(scheduling, record: record, writesBefore: writesBefore, request, context: context)
        case .coalesce(let scheduling, let flightKey, let record, let before, let writesBefore):
            return try await coalesce(scheduling, flightKey: flightKey, record: record, before: before, writesBefore: writesBefore,
                                      request, context: context)
        }
    }

    /// A miss with coalescing on: shared with the concurrent misses of its key (``CacheLeads``),
    /// then decided on what the leader (of this process or another) left.
    private func coalesce(_ scheduling: Scheduling, flightKey: String, record found: CacheRecord?, before decided: CacheStrategy.Before,
                          writesBefore: UInt64, _ request: URLRequest, context: RecallContext) async throws -> HookAction {
        let key = scheduling.location.key
        var record = found
        let (before, lead) = try await leads.share(
            flightKey, decided: decided, changed: { writer.writes != writesBefore },
            // (Named without the epoch, which is this process's own.)
            fetchName: { partitioner.fetchName(RequestCoalescer.key(key, request, hasFields: scheduling.facts.hasFields)) },
            coalesced: { counts.count(.coalesced, context) { $0.coalesced += 1 } },
            look: { later in
                record = await writer.lookup(key)
                return self.before(request, scheduling, record: record, now: later ? now() : nil)
            })
        return act(on: before, request: request, key: key, lead: lead, context: context) {
            scheduling.state(record: record, mode: $0, lead: lead)
        }
    }

    /// Carries out what the strategy decided before the network, and counts it. `state` makes
    /// the request's state, in a mode, for what goes to the origin.
    private func act(on before: consuming CacheStrategy.Before, request: URLRequest, key: String, lead: Lead?, context: RecallContext,
                     state: (CacheStrategy.Mode) -> State) -> HookAction {
        switch consume before { // (moved, not copied: a response copy retains each of its parts)
        case .serve(let response, let stale):
            finish(lead, key: key)
            if let stale {
                counts.count(.stale(stale), context) { $0.staleServed[stale, default: 0] += 1 }
            } else {
                counts.hit(context)
            }
            return .respond(response)
        case .serveAndRefresh(let response, let refresh, let mode):
            finish(lead, key: key)
            counts.count(.stale(.staleWhileRevalidate), context) { $0.staleServed[.staleWhileRevalidate, default: 0] += 1 }
            guard leads.leadRefresh(key) else { return .respond(response) } // one refresh at a time per key
            context[states] = state(mode).asRefresh()
            return .respondThenRefresh(response, refresh: refresh)
        case .send(let outgoing, let mode):
            switch mode {
            case .fetching, .ranging: counts.miss(context)
            default: break
            }
            context[states] = state(mode)
            return .proceed(outgoing)
        case .bypass:
            finish(lead, key: key)
            counts.bypass(context)
            return .proceed(request)
        case .gatewayTimeout(let answer):
            finish(lead, key: key)
            counts.count(.gatewayTimeout, context) { $0.gatewayTimeouts += 1 }
            return .respond(answer)
        }
    }

    /// Stores, merges 304s, serves stale on 5xx where allowed, invalidates on unsafe methods.
    ///
    /// What is stored is decided on the request that actually went out (``RecallContext/lastSentRequest``:
    /// a credential added by a retrier or an inner hook partitions the entry) and under the URL
    /// that answered (a redirected response is stored for its own URL, never for the one that
    /// redirected).
    public func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        // (Taken, not read: a context that passes this cache again, as a refetch does, starts afresh.)
        guard let state = context.take(states) else { return response }
        let sent = context.lastSentRequest ?? request
        let lifetime = context[RequestLifetime.self]?.seconds
        if let ticket = writesBehind(response, for: request, sent: sent, state: state) {
            // Whatever is decided, the answer is the response itself: decide and store after it.
            let answeredAt = now()
            behind?.run { [self] in
                storeBehind(response, for: request, sent: sent, lifetime: lifetime, at: answeredAt, state: state, context: context,
                            ticket: ticket)
            }
            return response
        }
        defer { finish(state) }
        return try await settle(response, for: request, sent: sent, lifetime: lifetime, at: now(), state: state, context: context)
    }

    /// Whether the answer to a request in `state` is `response` whatever the cache decides, so
    /// that the decision and the store can wait until the caller has it (``WriteBehind``): a
    /// `GET` with no usable stored response (mode `.fetching(stored: nil)`), answered by the
    /// network for the URL looked up. Yes is the write's ticket, begun.
    private func writesBehind(_ response: RecallResponse, for request: URLRequest, sent: URLRequest, state: State) -> UInt64? {
        guard let behind, response.source == .network, state.method == .get, case .fetching(stored: nil) = state.mode else { return nil }
        let sentURL = sent.url // (each read of a request's URL goes through Foundation's object)
        guard sentURL == request.url, response.url == nil || response.url == sentURL else { return nil }
        return behind.begin(state)
    }

    /// The write-behind of ``writesBehind(_:for:sent:state:)``: decides as `onSuccess` would,
    /// lands the store (under the key looked up, whose write lock is held), then ends the lead.
    private func storeBehind(_ response: RecallResponse, for request: URLRequest, sent: URLRequest, lifetime: Double?, at date: Date,
                             state: State, context: RecallContext, ticket: UInt64) {
        let (exchange, target) = exchange(response, for: request, sent: sent, lifetime: lifetime, at: date, state: state)
        let after = strategy.after(response, mode: state.mode, exchange: exchange)
        counts.count(after, response: response, mode: state.mode, method: state.method, isRefresh: state.isRefresh, context: context)
        var entry: CacheEntry?
        if case .store(let stored) = after, target?.key == state.key { entry = stored }
        if behind?.land(entry, state: state, context: state.isRefresh ? nil : context, ticket: ticket) == true, let target {
            locator.remember(target, for: exchange.answered.url)
        }
        finish(state)
    }

    /// The exchange `response` ends, for `request` sent as `sent` and answered at `date`, and
    /// where the answer belongs: the URL that answered (``Location``; `nil` when it cannot be
    /// cached or the answer is not the network's), in the partition of what was sent.
    private func exchange(_ response: RecallResponse, for request: URLRequest, sent: URLRequest, lifetime: Double?, at date: Date,
                          state: State) -> (CacheStrategy.Exchange, Location?) {
        var exchange = CacheStrategy.Exchange(request: request, sent: sent, answered: sent, inScope: state.inScope,
                                              method: state.method, requestTime: state.requestTime, now: date,
                                              requestLifetime: lifetime)
        guard state.mode != .invalidating, response.source == .network else { return (exchange, nil) }
        var target = sent.url == request.url ? state.location : locator.location(of: sent)
        if let url = response.url, url != sent.url {
            exchange.answered.url = url
            target = locator.location(of: exchange.answered)
        }
        // Answered for another URL than the one looked up (a redirect, or an inner hook that
        // rewrote the URL): what was stored for the lookup is neither merged nor removed.
        exchange.redirected = target?.key != state.key
        exchange.partition = target.map { partitioner.partition(for: exchange.answered, userinfo: $0.userinfo, inScope: state.inScope) } ?? ""
        return (exchange, target)
    }

    /// What `onSuccess` does with `response` (see there), answered at `date` for `request`,
    /// which went out as `sent`.
    private func settle(_ response: RecallResponse, for request: URLRequest, sent: URLRequest, lifetime: Double?, at date: Date, state: State,
                        context: RecallContext) async throws -> RecallResponse {
        // Where stores record their events: nowhere for a background refresh (it counts nothing).
        let recording = state.isRefresh ? nil : context
        let (exchange, target) = exchange(response, for: request, sent: sent, lifetime: lifetime, at: date, state: state)
        // Stores `entry` where the answer belongs, and remembers that URL's location.
        func storeAnswer(_ entry: CacheEntry) async {
            guard let target else { return }
            locator.remember(target, for: exchange.answered.url)
            await writer.store(entry, at: target, keepsNothing: state.keepsNothing(storing: entry, key: target.key), since: state.since,
                        context: recording)
        }
        let after = strategy.after(response, mode: state.mode, exchange: exchange)
        counts.count(after, response: response, mode: state.mode, method: state.method, isRefresh: state.isRefresh, context: context)
        switch after {
        case .pass:
            return response
        case .store(let entry):
            await storeAnswer(entry)
            return response
        case .storeAndAnswer(let entry, let answer):
            await storeAnswer(entry)
            return answer
        case .revalidated(let entry, let answer):
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
        case .invalidate(let urls, let post):
            await invalidate(urls, after: sent)
            // (The write's own answer: stored after its invalidation, whatever came before.)
            if let post, let location = locator.location(of: CacheStrategy.asGet(sent)) {
                await writer.store(post, at: location, keepsNothing: false, since: nil, context: recording)
            }
            return response
        case .refetch(let unconditional, let removing):
            if removing { await writer.remove(state.key) }
            guard let again = context.innerStage else { throw CacheError.unmatchedNotModified(request.url) }
            context[states] = state.refetching(since: removing ? writer.epochs.snapshot(stripe: state.location.epochStripe) : state.since)
            let fresh: RecallResponse
            do {
                fresh = try await again(unconditional)
            } catch {
                context[states] = nil
                throw error
            }
            return try await onSuccess(fresh, for: unconditional, context: context)
        case .freshen:
            if let target {
                await writer.freshen(target, partition: exchange.partition, request: exchange.answered, with: response, state: state,
                              at: exchange.now, context: recording)
            }
            return response
        }
    }

    /// Serves stale when `stale-if-error` or a disconnection allows; answers 504 for `must-revalidate` entries.
    public func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse? {
        guard let state = context[states] else { return nil }
        if let refused = error as? UnacceptableStatusError {
            // A StatusValidator inside the cache refused an answer: the cache still takes it as
            // an answer (stores it, merges a 304, serves stale for a 5xx) and recovers the
            // request only with a stored response; anything else stays the validator's failure.
            let answer = try await onSuccess(refused.response, for: request, context: context)
            return answer.source == .network ? nil : answer
        }
        context[states] = nil
        // A cancelled leader hands its miss to one waiting request instead of sending them all
        // to the origin at once.
        let cancelled = Task.isCancelled || error is CancellationError
        defer { cancelled ? leads.abandon(state.lead, key: state.key) : finish(state) }
        let failure = strategy.afterFailure(error, mode: state.mode, request: request, now: now())
        switch failure {
        case .serveStale(let answer, let reason):
            if !state.isRefresh { counts.count(.stale(reason), context) { $0.staleServed[reason, default: 0] += 1 } }
            return answer
        case .gatewayTimeout(let answer):
            if state.mode.isValidating, !state.isRefresh { counts.miss(context) }
            return state.isRefresh ? nil : answer
        case .fail:
            if state.mode.isValidating, !state.isRefresh { counts.miss(context) }
            return nil
        }
    }

    /// Removes the stored responses of `urls` (the targets of a successful unsafe `request`),
    /// in every partition, counting those that held something.
    private func invalidate(_ urls: [URL], after request: URLRequest) async {
        for url in urls {
            var lookup = CacheStrategy.asGet(request)
            lookup.url = url
            guard let key = key(for: lookup) else { continue }
            await writer.remove(key, counting: true)
        }
    }

    // MARK: Helpers

    /// Ends what `state` leads (``CacheLeads/finish(_:key:)``).
    private func finish(_ state: State) {
        leads.finish(state.lead, key: state.key)
    }

    /// Ends `lead`, taken for the request of storage key `key`.
    private func finish(_ lead: Lead?, key: String) {
        leads.finish(lead, key: key)
    }
}
