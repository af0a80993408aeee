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
    /// The RFC rules, as pure functions.
    public let rules: CacheRules
    private let now: @Sendable () -> Date
    private let counters = Locked(CacheStatistics())
    private let flights = RequestCoalescer()
    private let refreshes = RequestCoalescer()
    private let memo = CanonicalURLMemo<Location>()
    private let partitioner: CachePartitioner
    private let writes = KeyedLock()

    /// Names of request header fields that carry credentials in requests sent from the current
    /// task, in addition to ``CacheConfiguration/credentialFields``: they partition the cache
    /// the same way. The typed layer sets it for the field of an
    /// ``Authorization/header(name:value:)``; set it around your own calls when a custom field
    /// carries a credential:
    ///
    /// ```swift
    /// try await HTTPCache.$credentialFieldsInScope.withValue(["X-Tenant-Token"]) {
    ///     try await pipeline.send(request)
    /// }
    /// ```
    @TaskLocal public static var credentialFieldsInScope: Set<String> = []

    /// Creates a cache over `storage`; `now` gives the current date (inject it in tests).
    public init(storage: any CacheStorage = MemoryStorage(), configuration: CacheConfiguration = CacheConfiguration(),
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.storage = storage
        self.configuration = configuration
        self.rules = CacheRules(configuration: configuration)
        self.now = now
        self.partitioner = CachePartitioner(secret: storage.secret, configuration: configuration)
    }

    /// What the cache did so far, with the storage's counters.
    public var statistics: CacheStatistics {
        var statistics = counters.withLock { $0 }
        statistics.waiting = flights.waiting
        statistics.storage = storage.statistics
        return statistics
    }

    /// Waits until every background refresh (`stale-while-revalidate`) started so far has finished.
    public func waitForBackgroundRefreshes() async {
        await refreshes.waitForAll()
    }

    /// The storage key of `request`: the namespace and the canonical URL (see
    /// ``CacheKeyPolicy``), with the values of secret query parameters replaced by keyed
    /// hashes; `nil` when the request cannot be cached.
    ///
    /// Requests that differ in credentials or in the key's header fields share the key: they
    /// are told apart by the partition of each stored response, so one removal of the key (an
    /// invalidation) removes the URL for everyone.
    public func key(for request: URLRequest) -> String? {
        locate(request)?.key
    }

    /// Where a request's responses are stored, and whether its URL carries user information
    /// (a credential of the partition).
    struct Location: Sendable {
        var key: String
        var userinfo: Bool
    }

    /// The ``Location`` of `request`, remembered per URL text; `nil` when it cannot be cached.
    private func locate(_ request: URLRequest) -> Location? {
        guard let url = request.url,
              let location = memo.value(for: url, size: { $0.key.utf8.count }, make: { text in
                  configuration.keyPolicy.canonicalURL(text: text).map {
                      Location(key: partitioner.redactingSecrets(in: $0), userinfo: CachePartitioner.hasUserinfo(text))
                  }
              }),
              location.key.utf8.count <= configuration.keyPolicy.maximumLength else { return nil }
        guard !configuration.namespace.isEmpty else { return location }
        return Location(key: configuration.namespace + "|" + location.key, userinfo: location.userinfo)
    }

    /// The partition of `request` (see ``CachePartitioner``).
    private func partition(of request: URLRequest, at location: Location, inScope: Set<String>) -> String {
        partitioner.partition(for: request, userinfo: location.userinfo, inScope: inScope)
    }

    /// The names of the credential fields in scope for the current task, lowercased.
    private static var inScope: Set<String> {
        let names = credentialFieldsInScope
        return names.isEmpty ? names : Set(names.map { $0.lowercased() })
    }

    // MARK: Per-request state

    struct State: Sendable {
        var location: Location
        var method: HTTPMethod
        var partition = ""
        var inScope: Set<String> = []
        var requestTime: Date
        var candidate: CacheEntry?
        /// Other stored variants of this partition offered to the origin in `If-None-Match`
        /// when none matched the request's `Vary` fields (RFC 9111 §4.3.1).
        var alternates: [CacheEntry] = []
        /// The record as the lookup found it (`nil`: there was none).
        var record: CacheRecord?
        var validating = false
        var callerConditional = false
        var unsafeMethod = false
        var isRefresh = false
        /// Sent again without validators after a 304 that did not match.
        var refetched = false
        var flightKey: String?

        /// The storage key of the request.
        var key: String { location.key }
    }

    enum StateKey: ContextKey { typealias Value = State }

    private enum Decision {
        case serve(Response)
        case serveAndRefresh(Response, refresh: URLRequest, entry: CacheEntry, validating: Bool)
        case network(URLRequest, candidate: CacheEntry?, record: CacheRecord?, validating: Bool, alternates: [CacheEntry] = [])
        case gatewayTimeout
    }

    private static let conditionalFields = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"]

    // MARK: Hook events

    /// Answers from cache, or passes the request on (with validators when revalidating).
    public func onSchedule(_ request: URLRequest, context: RequestContext) async throws -> HookAction {
        let method = HTTPMethod(request)
        func has(_ name: String) -> Bool { request.value(forHTTPHeaderField: name) != nil }
        guard !configuration.bypassFields.contains(where: has), let location = locate(request) else {
            count { $0.bypassed += 1 }
            return .proceed(request)
        }
        let key = location.key
        let requestTime = now()
        let inScope = Self.inScope
        if method.invalidatesCaches {
            context[StateKey.self] = State(location: location, method: method, requestTime: requestTime, unsafeMethod: true)
            count { $0.bypassed += 1 }
            return .proceed(request)
        }
        guard method == .get || method == .head else {
            count { $0.bypassed += 1 }
            return .proceed(request)
        }
        if let field = request.value(forHTTPHeaderField: "Range") {
            return await answerRange(field, request: request, method: method, location: location, inScope: inScope, at: requestTime)
        }
        if Self.conditionalFields.contains(where: has) {
            // The caller's own conditional request: pass it through, freshen on a matching 304.
            context[StateKey.self] = State(location: location, method: method, partition: partition(of: request, at: location, inScope: inScope),
                                           inScope: inScope, requestTime: requestTime, callerConditional: true)
            count { $0.bypassed += 1 }
            return .proceed(request)
        }

        let partition = self.partition(of: request, at: location, inScope: inScope)
        var decision = await decide(request, key: key, partition: partition, inScope: inScope, now: requestTime)
        var flightKey: String?
        if case .network = decision, configuration.coalescesRequests {
            let coalescingKey = Self.coalescingKey(key, request)
            switch await flights.join(coalescingKey) {
            case .leader:
                flightKey = coalescingKey
                // Another leader may have stored the entry between our lookup and our registration.
                decision = await decide(request, key: key, partition: partition, inScope: inScope, now: requestTime)
            case .follower:
                try Task.checkCancellation()
                count { $0.coalesced += 1 }
                decision = await decide(request, key: key, partition: partition, inScope: inScope, now: now())
            }
        }

        switch decision {
        case .serve(let response):
            finishFlight(flightKey)
            return .respond(response)
        case .serveAndRefresh(let response, let refresh, let entry, let validating):
            finishFlight(flightKey)
            let started = refreshes.tryLead(key)
            guard started else { return .respond(response) } // one refresh at a time per key
            context[StateKey.self] = State(location: location, method: method, partition: partition, inScope: inScope, requestTime: requestTime,
                                           candidate: entry, record: CacheRecord(key: key, variants: [entry]),
                                           validating: validating, isRefresh: true)
            return .respondThenRefresh(response, refresh: refresh)
        case .gatewayTimeout:
            finishFlight(flightKey)
            return .respond(onlyIfCachedMiss(request))
        case .network(let outgoing, let candidate, let record, let validating, let alternates):
            if !validating { count { $0.misses += 1 } }
            context[StateKey.self] = State(location: location, method: method, partition: partition, inScope: inScope, requestTime: requestTime,
                                           candidate: candidate, alternates: alternates, record: record, validating: validating,
                                           flightKey: flightKey)
            return .proceed(outgoing)
        }
    }

    /// A `Range` request: answered from a stored full response that may be used as it is
    /// (fresh, or stale where allowed) with a `206` or `416`; anything else — several ranges,
    /// `If-Range`, nothing usable stored — goes to the origin untouched and is not stored.
    private func answerRange(_ field: String, request: URLRequest, method: HTTPMethod, location: Location, inScope: Set<String>,
                             at requestTime: Date) async -> HookAction {
        guard method == .get, let range = ByteRange(rangeField: field),
              request.value(forHTTPHeaderField: "If-Range") == nil else {
            count { $0.bypassed += 1 }
            return .proceed(request)
        }
        let partition = self.partition(of: request, at: location, inScope: inScope)
        switch await decide(request, key: location.key, partition: partition, inScope: inScope, now: requestTime) {
        case .serve(let full) where full.status == 200:
            return .respond(rules.partialResponse(full, range: range))
        case .gatewayTimeout:
            return .respond(onlyIfCachedMiss(request))
        default:
            count { $0.bypassed += 1 }
            return .proceed(request)
        }
    }

    /// Stores, merges 304s, serves stale on 5xx where allowed, invalidates on unsafe methods.
    ///
    /// What is stored is decided on the request that actually went out (``RequestContext/lastSentRequest``:
    /// a credential added by a retrier or an inner hook partitions the entry) and under the URL
    /// that answered (a redirected response is stored for its own URL, never for the one that
    /// redirected).
    public func onSuccess(_ response: Response, for request: URLRequest, context: RequestContext) async throws -> Response {
        guard let state = context[StateKey.self] else { return response }
        defer { finish(state) }
        let receivedAt = now()
        let sent = context.lastSentRequest ?? request
        if state.unsafeMethod {
            if (200..<400).contains(response.status) {
                await invalidate(after: sent, response: response)
                if state.method == .post, response.source == .network {
                    await storePostResponse(response, for: sent, state: state, at: receivedAt)
                }
            }
            return response
        }
        guard response.source == .network else { return response }
        // Where the response belongs: the URL that answered, the partition of what was sent.
        var answered = sent
        var location = sent.url == request.url ? state.location : locate(sent)
        var redirected = false
        if let url = response.url, url != sent.url {
            answered.url = url
            let answeredLocation = locate(answered)
            redirected = answeredLocation?.key != location?.key
            location = answeredLocation
        }
        let target = location?.key
        let partition = location.map { self.partition(of: answered, at: $0, inScope: state.inScope) } ?? ""
        if state.callerConditional {
            if response.status == 304, !redirected, let target {
                await freshen(key: target, partition: partition, request: answered, with: response, state: state, at: receivedAt)
            }
            return response
        }
        if response.status == 304, state.validating, state.candidate != nil || !state.alternates.isEmpty {
            // The stored response the 304 confirms: the candidate, or (RFC 9111 §4.3.1) the one
            // of this partition's other variants whose entity tag it names.
            let confirmed = state.candidate.flatMap { rules.notModified(response, matches: $0) ? $0 : nil }
                ?? state.alternates.first { response.headers["ETag"] != nil && rules.notModified(response, matches: $0) }
            guard !redirected, let candidate = confirmed else {
                if !redirected { await remove(state.key) }
                // The origin is healthy; only the stored response is not the one it means. Ask
                // once more, unconditionally, and let that answer be stored.
                guard !state.refetched, let again = context.innerStage else { throw CacheError.unmatchedNotModified(request.url) }
                var unconditional = request
                unconditional.setValue(nil, forHTTPHeaderField: "If-None-Match")
                unconditional.setValue(nil, forHTTPHeaderField: "If-Modified-Since")
                var next = state
                (next.candidate, next.alternates, next.record, next.validating, next.refetched) = (nil, [], nil, false, true)
                context[StateKey.self] = next
                if !state.isRefresh { count { $0.refetched += 1; $0.revalidatedChanged += 1 } }
                let fresh = try await again(unconditional)
                return try await onSuccess(fresh, for: unconditional, context: context)
            }
            var merged = rules.merge(candidate, with: response, requestTime: state.requestTime, responseTime: receivedAt)
            if merged.partition != partition || state.candidate == nil {
                // A credential was added on the way out, or another variant was confirmed for this
                // request: the merged response is stored for this request's partition and Vary values.
                merged.partition = partition
                merged.varyValues = varyValues(for: merged.facts.varyNames, in: answered, inScope: state.inScope)
            }
            if let target { await store(merged, key: target, keepsNothing: keepsNothing(merged, key: target, state: state)) }
            if !state.isRefresh { count { $0.revalidated += 1 } }
            return rules.response(from: merged, for: request, now: receivedAt, source: .revalidated)
        }
        if [500, 502, 503, 504].contains(response.status), let candidate = state.candidate,
           rules.allowsStaleIfError(candidate, for: request, now: receivedAt) {
            if !state.isRefresh { count { $0.staleServed[.staleIfError, default: 0] += 1 } }
            return rules.response(from: candidate, for: request, now: receivedAt, source: .stale)
        }
        if state.method == .head {
            // RFC 9111 §4.3.5: a 200 to HEAD updates the stored GET response it describes, or
            // shows that response is outdated.
            if response.status == 200, let candidate = state.candidate, !redirected, let target {
                if rules.headResponse(response, matches: candidate) {
                    let updated = rules.merge(candidate, with: response, requestTime: state.requestTime, responseTime: receivedAt)
                    await store(updated, key: target, keepsNothing: false)
                } else {
                    await remove(target)
                }
            }
            return response
        }
        if state.validating, !state.isRefresh { count { $0.revalidatedChanged += 1 } }
        let facts = CacheEntry.Facts(response.headers)
        if let target = target, rules.isStorable(response, facts: facts, for: answered) {
            let headers = rules.storedHeaders(response.headers)
            let entry = CacheEntry(status: response.status, headers: headers, facts: headers.count == response.headers.count ? facts : CacheEntry.Facts(headers),
                                   body: response.body.exactlySized, url: nil, requestTime: state.requestTime, responseTime: receivedAt,
                                   varyValues: varyValues(for: facts.varyNames, in: answered, inScope: state.inScope), partition: partition)
            await store(entry, key: target, keepsNothing: keepsNothing(entry, key: target, state: state))
        } else if state.candidate != nil, !redirected, response.status < 500, state.method == .get {
            // A new representation (or its absence) that cannot be stored: the stored one is outdated.
            // A 5xx says nothing about the resource, so the stored response is kept.
            await remove(state.key)
        }
        return response
    }

    /// Serves stale when `stale-if-error` allows; answers 504 for `must-revalidate` entries.
    public func onFailure(_ error: any Error, for request: URLRequest, context: RequestContext) async throws -> Response? {
        guard let state = context[StateKey.self] else { return nil }
        defer { finish(state) }
        guard !(error is CancellationError), let candidate = state.candidate, !state.unsafeMethod else {
            if state.validating, !state.isRefresh { count { $0.misses += 1 } }
            return nil
        }
        let failedAt = now()
        if rules.allowsStaleIfError(candidate, for: request, now: failedAt) {
            if !state.isRefresh { count { $0.staleServed[.staleIfError, default: 0] += 1 } }
            return rules.response(from: candidate, for: request, now: failedAt, source: .stale)
        }
        if CacheRules.isDisconnection(error), rules.allowsStaleWhenDisconnected(candidate, for: request, now: failedAt) {
            if !state.isRefresh { count { $0.staleServed[.disconnected, default: 0] += 1 } }
            return rules.response(from: candidate, for: request, now: failedAt, source: .stale)
        }
        if state.validating, !state.isRefresh { count { $0.misses += 1 } }
        if candidate.cacheControl.mustRevalidate, !state.isRefresh {
            return Self.gatewayTimeout(request, reason: "must-revalidate and the origin could not be reached: \(error)")
        }
        return nil
    }

    // MARK: Decisions

    private func decide(_ request: URLRequest, key: String, partition: String, inScope: Set<String>, now: Date) async -> Decision {
        let directives = rules.requestDirectives(request)
        let onlyIfCached = directives.onlyIfCached || request.cachePolicy == .returnCacheDataDontLoad
        // Storages compare keys too; checking here keeps the guarantee for any storage a user plugs in.
        let found = await storage.record(for: key)
        let record = found?.key == key ? found : nil
        guard let entry = record.flatMap({ candidate(in: $0, for: request, partition: partition, inScope: inScope) }) else {
            if onlyIfCached { return .gatewayTimeout }
            // No stored variant matches the request's Vary fields; the origin may still say one
            // of them is the right one (RFC 9111 §4.3.1): offer their entity tags.
            let alternates = record?.variants.filter { $0.partition == partition && $0.etag != nil } ?? []
            guard HTTPMethod(request) == .get, !alternates.isEmpty else {
                return .network(request, candidate: nil, record: record, validating: false)
            }
            var conditional = request
            conditional.setValue(alternates.map { CacheRules.quotedEntityTag($0.etag!) }.joined(separator: ", "), forHTTPHeaderField: "If-None-Match")
            return .network(conditional, candidate: nil, record: record, validating: true, alternates: alternates)
        }
        switch rules.use(of: entry, for: request, directives: directives, now: now) {
        case .fresh:
            count { $0.hits += 1 }
            return .serve(rules.response(from: entry, for: request, now: now, source: .cache))
        case .stale(let reason):
            count { $0.staleServed[reason, default: 0] += 1 }
            return .serve(rules.response(from: entry, for: request, now: now, source: .stale))
        case .staleWhileRevalidate:
            count { $0.staleServed[.staleWhileRevalidate, default: 0] += 1 }
            let stale = rules.response(from: entry, for: request, now: now, source: .stale)
            let conditional = rules.conditionalRequest(request, for: entry)
            var refresh = conditional ?? request
            refresh.httpMethod = "GET"
            return .serveAndRefresh(stale, refresh: refresh, entry: entry, validating: conditional != nil)
        case .reload:
            return .network(request, candidate: nil, record: record, validating: false)
        case .validate:
            if onlyIfCached { return .gatewayTimeout }
            if let conditional = rules.conditionalRequest(request, for: entry) {
                return .network(conditional, candidate: entry, record: record, validating: true)
            }
            return .network(request, candidate: entry, record: record, validating: false)
        }
    }

    /// The stored response in `record` for `request`: same partition, matching `Vary` fields.
    private func candidate(in record: CacheRecord, for request: URLRequest, partition: String, inScope: Set<String>) -> CacheEntry? {
        record.variants.first { entry in
            guard entry.partition == partition else { return false }
            let names = entry.facts.varyNames
            if names.isEmpty { return entry.varyValues.isEmpty }
            guard !names.contains("*") else { return false }
            return varyValues(for: names, in: request, inScope: inScope) == entry.varyValues
        }
    }

    /// The values of `request`'s fields named by a `Vary`, with credential fields as keyed hashes.
    private func varyValues(for names: [String], in request: URLRequest, inScope: Set<String>) -> [HTTPHeaders.Field] {
        names.isEmpty ? [] : partitioner.protect(rules.varyValues(for: names, in: request), inScope: inScope)
    }

    // MARK: Writing

    /// Stores `entry` in the record of `key`, keeping the other partitions' responses and this
    /// partition's other `Vary` variants, read afresh. `keepsNothing`: what this request's
    /// lookup found holds nothing `entry` would not replace, so the read is saved (a response
    /// stored meanwhile by a concurrent request may be replaced: a lost entry, never a wrong one).
    private func store(_ entry: CacheEntry, key: String, keepsNothing: Bool) async {
        await writes.lock(key)
        let existing = keepsNothing ? [] : await storage.record(for: key).map { $0.key == key ? $0.variants : [] } ?? []
        let kept = existing.filter { old in
            old.partition != entry.partition
                || (!entry.facts.varyNames.isEmpty && old.facts.varyNames == entry.facts.varyNames && old.varyValues != entry.varyValues)
        }
        await storage.store(CacheRecord(key: key, variants: Array(([entry] + kept).prefix(configuration.maxVariants))))
        writes.unlock(key)
        count { $0.stores += 1 }
    }

    /// RFC 9110 §9.3.3: a response to POST with explicit freshness and a `Content-Location`
    /// naming the request's own URI is a representation of that URI: stored, it answers a
    /// later GET of it.
    private func storePostResponse(_ response: Response, for request: URLRequest, state: State, at receivedAt: Date) async {
        guard [200, 203].contains(response.status),
              let location = response.headers["Content-Location"], let url = request.url,
              let target = URL(string: location, relativeTo: url)?.absoluteURL else { return }
        var asGet = request
        asGet.httpMethod = HTTPMethod.get.rawValue
        asGet.httpBody = nil
        let facts = CacheEntry.Facts(response.headers)
        guard facts.cacheControl.maxAge != nil || !facts.expires.isEmpty, let here = locate(asGet),
              locate(URLRequest(url: target))?.key == here.key, rules.isStorable(response, facts: facts, for: asGet) else { return }
        let headers = rules.storedHeaders(response.headers)
        let entry = CacheEntry(status: response.status, headers: headers, facts: CacheEntry.Facts(headers), body: response.body.exactlySized,
                               url: nil, requestTime: state.requestTime, responseTime: receivedAt,
                               varyValues: varyValues(for: facts.varyNames, in: asGet, inScope: state.inScope),
                               partition: partition(of: asGet, at: here, inScope: state.inScope))
        await store(entry, key: here.key, keepsNothing: false)
    }

    /// Whether storing `entry` under `key` keeps none of what the lookup found: there was no
    /// record, or only responses of the same partition that an entry without `Vary` replaces.
    private func keepsNothing(_ entry: CacheEntry, key: String, state: State) -> Bool {
        guard key == state.key else { return false }
        guard let record = state.record else { return true }
        return entry.facts.varyNames.isEmpty && record.variants.allSatisfy { $0.partition == entry.partition }
    }

    /// Removes every stored response of `key`, in every partition.
    private func remove(_ key: String) async {
        await writes.lock(key)
        await storage.remove(key)
        writes.unlock(key)
    }

    private func freshen(key: String, partition: String, request: URLRequest, with response: Response, state: State, at date: Date) async {
        guard let record = await storage.record(for: key), record.key == key,
              let entry = candidate(in: record, for: request, partition: partition, inScope: state.inScope),
              rules.notModified(response, matches: entry),
              response.headers["ETag"] != nil || response.headers["Last-Modified"] != nil else { return }
        await store(rules.merge(entry, with: response, requestTime: state.requestTime, responseTime: date), key: key, keepsNothing: false)
    }

    private func invalidate(after request: URLRequest, response: Response) async {
        guard let url = request.url else { return }
        var targets = [url]
        for name in ["Location", "Content-Location"] {
            guard let value = response.headers[name], let target = URL(string: value, relativeTo: url)?.absoluteURL,
                  target.scheme?.lowercased() == url.scheme?.lowercased(), target.host?.lowercased() == url.host?.lowercased(),
                  target.port == url.port else { continue }
            targets.append(target)
        }
        for target in targets {
            var lookup = request
            lookup.url = target
            lookup.httpMethod = HTTPMethod.get.rawValue
            guard let key = key(for: lookup) else { continue }
            // The key holds every partition of the URL: one removal invalidates it for everyone.
            if await storage.record(for: key) != nil { count { $0.invalidations += 1 } }
            await remove(key)
        }
    }

    // MARK: Helpers

    private func finish(_ state: State) {
        finishFlight(state.flightKey)
        if state.isRefresh { refreshes.finish(state.key) }
    }

    private func finishFlight(_ key: String?) {
        guard let key else { return }
        flights.finish(key)
    }

    private func count(_ update: (inout CacheStatistics) -> Void) {
        counters.withLock { update(&$0) }
    }

    /// Requests coalesce only when they also carry the same header fields, so a response that
    /// varies on any of them is never handed to a request it was not made for.
    private static func coalescingKey(_ key: String, _ request: URLRequest) -> String {
        guard let fields = request.allHTTPHeaderFields, !fields.isEmpty else { return key }
        var result = key
        for (name, value) in fields.sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            result += "\n" + name.lowercased() + ": " + value
        }
        return result
    }

    /// The 504 for an `only-if-cached` request with nothing usable stored, counted.
    private func onlyIfCachedMiss(_ request: URLRequest) -> Response {
        count { $0.gatewayTimeouts += 1 }
        return Self.gatewayTimeout(request, reason: "only-if-cached and no usable stored response")
    }

    static func gatewayTimeout(_ request: URLRequest, reason: String) -> Response {
        var response = Response.text("504 Gateway Timeout: \(reason)", status: 504, url: request.url)
        response.source = .cache
        response.headers["Cache-Control"] = "no-store"
        return response
    }
}
