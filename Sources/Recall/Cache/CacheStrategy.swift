import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every decision the cache makes about one request, as pure functions of values — the
/// request, what is stored, the answer or the error, the time, the configuration — in the
/// spirit of OkHttp's `CacheStrategy`. ``HTTPCache`` looks up, asks the strategy, acts on
/// the answer (storage, coalescing, counters) and decides nothing itself; the strategy does no
/// I/O and takes no locks, so every rule is tested on values (`CacheStrategyTests`).
///
/// A request meets the strategy three times:
/// 1. ``route(_:method:)`` — from its method and fields alone: bypass, invalidate, the caller's
///    own conditional request, a byte range, or a lookup;
/// 2. ``before(_:record:partition:inScope:now:)`` — with what is stored: serve fresh, serve
///    stale (which reason), serve stale and refresh, send (which request, in which ``Mode``),
///    or answer 504;
/// 3. ``after(_:mode:exchange:)`` or ``afterFailure(_:mode:request:now:)`` — with the answer:
///    store, merge a 304, serve the stored response stale, remove, invalidate, refetch, freshen,
///    or pass the answer through.
struct CacheStrategy: Sendable {
    /// The RFC 9111 rules the decisions are made of.
    let rules: CacheRules
    /// Partitions and protects credential values (keyed hashes).
    let partitioner: CachePartitioner
    /// The settings (the rules' own).
    let configuration: CacheConfiguration

    init(rules: CacheRules, partitioner: CachePartitioner) {
        self.rules = rules
        self.partitioner = partitioner
        self.configuration = rules.configuration
    }

    // MARK: Route

    /// The path a request takes through the cache, from its method and fields alone.
    enum Route: Equatable, Sendable {
        /// Not the cache's business (a bypass field, a method the cache neither serves nor is
        /// invalidated by, a range it cannot answer): passed on untouched.
        case bypass
        /// A method not known to be safe (RFC 9110 §9.2.1): passed on; a non-error answer
        /// invalidates the URI and its same-origin `Location` and `Content-Location`.
        case invalidate
        /// The caller's own conditional request: passed on; a matching 304 freshens what is stored.
        case callerConditional
        /// One byte range of a `GET`: answered from a stored full response, else passed on.
        case range(ByteRange)
        /// A `GET` or `HEAD`: looked up.
        case lookup
    }

    /// Request fields that make a request conditional (RFC 9110 §13.1).
    static let conditionalFields = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"]

    /// The route of `request`, whose method is `method`.
    func route(_ request: URLRequest, method: HTTPMethod) -> Route {
        func has(_ name: String) -> Bool { request.value(forHTTPHeaderField: name) != nil }
        if configuration.bypassFields.contains(where: has) { return .bypass }
        if method.invalidatesCaches { return .invalidate }
        guard method == .get || method == .head else { return .bypass }
        if let field = request.value(forHTTPHeaderField: "Range") {
            // Several ranges, If-Range, a HEAD: the origin answers them.
            guard method == .get, let range = ByteRange(rangeField: field), !has("If-Range") else { return .bypass }
            return .range(range)
        }
        return Self.conditionalFields.contains(where: has) ? .callerConditional : .lookup
    }

    // MARK: Mode

    /// What a request sent to the origin is to the cache: decided before it goes, read when the
    /// answer (or the error) comes back.
    /// (Its cases with payloads are `indirect`: a decision carrying a mode stays small to copy.)
    enum Mode: Sendable, Equatable {
        /// A method not known to be safe; see ``Route/invalidate``.
        case invalidating
        /// The caller's own conditional request; see ``Route/callerConditional``.
        case callerConditional
        /// An unconditional request whose answer is stored when it may be. `stored`: the
        /// response the lookup found and could not use as it is — served when the origin fails
        /// where the rules allow, removed when the new answer cannot be stored.
        indirect case fetching(stored: CacheEntry?)
        /// A conditional request for `stored` (`nil` when only other variants were offered) and
        /// for `alternates`: this partition's other variants whose entity tags went in
        /// `If-None-Match` because none matched the request's `Vary` fields (RFC 9111 §4.3.1).
        indirect case validating(stored: CacheEntry?, alternates: [CacheEntry])
        /// Sent again without validators after a 304 that matched nothing stored (at most once).
        case refetching

        /// The stored response the request may fall back on.
        var stored: CacheEntry? {
            switch self {
            case .fetching(let stored), .validating(let stored, _): stored
            case .invalidating, .callerConditional, .refetching: nil
            }
        }

        /// Whether the request validates stored responses.
        var isValidating: Bool {
            if case .validating = self { return true }
            return false
        }
    }

    // MARK: Before the network

    /// What to do with a looked-up request before the network.
    enum Before: Sendable, Equatable {
        /// Answer with `response`, made from a stored response: fresh when `stale` is `nil`,
        /// else stale for that reason.
        case serve(Response, stale: StaleReason?)
        /// Answer with the stale `response` now, and send `refresh` in the background in `mode`
        /// (`stale-while-revalidate`).
        case serveAndRefresh(Response, refresh: URLRequest, mode: Mode)
        /// Send `request` to the origin, in `mode`.
        case send(URLRequest, Mode)
        /// Pass the request on untouched, nothing to remember.
        case bypass
        /// Answer 504: `only-if-cached` (or `.returnCacheDataDontLoad`) with nothing usable stored.
        case gatewayTimeout
    }

    /// What `request` does with `record` (the stored responses of its key; `nil`: none) at
    /// `now`, for the request's `partition`.
    func before(_ request: URLRequest, record: CacheRecord?, partition: String, inScope: Set<String>, now: Date) -> Before {
        let directives = rules.requestDirectives(request)
        let onlyIfCached = directives.onlyIfCached || request.cachePolicy == .returnCacheDataDontLoad
        guard let entry = record.flatMap({ variant(in: $0, for: request, partition: partition, inScope: inScope) }) else {
            if onlyIfCached { return .gatewayTimeout }
            // No stored variant matches the request's Vary fields; the origin may still say one
            // of them is the right one (RFC 9111 §4.3.1): offer their entity tags.
            let alternates = record?.variants.filter { $0.partition == partition && $0.etag != nil } ?? []
            guard HTTPMethod(request) == .get, !alternates.isEmpty else { return .send(request, .fetching(stored: nil)) }
            var conditional = request
            let tags = alternates.compactMap(\.etag).map(CacheRules.quotedEntityTag)
            conditional.setValue(tags.joined(separator: ", "), forHTTPHeaderField: "If-None-Match")
            return .send(conditional, .validating(stored: nil, alternates: alternates))
        }
        switch rules.use(of: entry, for: request, directives: directives, now: now) {
        case .fresh:
            return .serve(rules.response(from: entry, for: request, now: now, source: .cache), stale: nil)
        case .stale(let reason):
            return .serve(rules.response(from: entry, for: request, now: now, source: .stale), stale: reason)
        case .staleWhileRevalidate:
            let stale = rules.response(from: entry, for: request, now: now, source: .stale)
            let conditional = rules.conditionalRequest(request, for: entry)
            var refresh = conditional ?? request
            refresh.httpMethod = HTTPMethod.get.rawValue
            let mode: Mode = conditional == nil ? .fetching(stored: entry) : .validating(stored: entry, alternates: [])
            return .serveAndRefresh(stale, refresh: refresh, mode: mode)
        case .reload:
            return .send(request, .fetching(stored: nil))
        case .validate:
            if onlyIfCached { return .gatewayTimeout }
            guard let conditional = rules.conditionalRequest(request, for: entry) else { return .send(request, .fetching(stored: entry)) }
            return .send(conditional, .validating(stored: entry, alternates: []))
        }
    }

    /// What a request for `range` does with `record`: a `206` (or `416`) made from a stored
    /// full response it may use as it is; 504 when `only-if-cached` finds nothing it may use
    /// (a response within its stale-while-revalidate window goes to the origin); else the
    /// origin answers the range itself (nothing stored).
    func before(_ request: URLRequest, range: ByteRange, record: CacheRecord?, partition: String, inScope: Set<String>,
                now: Date) -> Before {
        switch before(request, record: record, partition: partition, inScope: inScope, now: now) {
        case .serve(let full, let stale) where full.status == 200:
            return .serve(rules.partialResponse(full, range: range), stale: stale)
        case .gatewayTimeout:
            return .gatewayTimeout
        default:
            return .bypass
        }
    }

    /// The stored response in `record` for `request`: same partition, matching `Vary` fields.
    func variant(in record: CacheRecord, for request: URLRequest, partition: String, inScope: Set<String>) -> CacheEntry? {
        record.variants.first { entry in
            entry.partition == partition && rules.varyMatches(entry) { varyValues(for: $0, in: request, inScope: inScope) }
        }
    }

    /// The values of `request`'s fields named by a `Vary`, with credential fields as keyed hashes.
    func varyValues(for names: [String], in request: URLRequest, inScope: Set<String>) -> [HTTPHeaders.Field] {
        names.isEmpty ? [] : partitioner.protect(rules.varyValues(for: names, in: request), inScope: inScope)
    }

    // MARK: After the network

    /// One answer from the origin, with what the cache knows about the request it answers.
    struct Exchange: Sendable {
        /// The request as the caller made it (the response served from cache is made for it).
        var request: URLRequest
        /// The request that went out (with what a retrier or an inner hook added).
        var sent: URLRequest
        /// `sent` with the URL that answered (after redirects).
        var answered: URLRequest
        /// Whether the answer is for another storage key than the one looked up (a redirect, or
        /// an inner hook that rewrote the URL): then nothing stored for the lookup is merged or removed.
        var redirected = false
        /// The partition of `answered`.
        var partition = ""
        /// Credential fields in scope for the request (see ``HTTPCache/credentialFieldsInScope``).
        var inScope: Set<String> = []
        /// The method of the caller's request.
        var method: HTTPMethod
        /// When the request was sent and when the answer came.
        var requestTime: Date
        var now: Date
    }

    /// What to do with an answer from the origin.
    enum After: Sendable, Equatable {
        /// Return the answer as it is.
        case pass
        /// Store `entry` (made from the answer) for the URL that answered; return the answer.
        case store(CacheEntry)
        /// A 304 confirmed a stored response: store `entry` (it merged with the 304) and answer
        /// with it (`.revalidated`).
        case revalidated(CacheEntry)
        /// Keep the stored response and answer with it stale, for `reason`.
        case serveStale(CacheEntry, StaleReason)
        /// The stored responses of the URL are outdated: remove them; return the answer.
        case remove
        /// An unsafe method succeeded: remove the stored responses of `urls`; `store`, when not
        /// `nil`, is the answer to a `POST` stored for a later `GET` (RFC 9110 §9.3.3).
        case invalidate([URL], store: CacheEntry?)
        /// A 304 that matched nothing stored: remove the URL's stored responses when
        /// `removing`, and send `request` again without validators; its answer is stored.
        case refetch(URLRequest, removing: Bool)
        /// The caller's conditional request got a 304: freshen the stored response it matches.
        case freshen
    }

    /// What to do with `response`, the answer to a request sent in `mode`.
    func after(_ response: Response, mode: Mode, exchange x: Exchange) -> After {
        if case .invalidating = mode {
            guard (200..<400).contains(response.status) else { return .pass }
            let stored = x.method == .post && response.source == .network ? postEntry(response, exchange: x) : nil
            return .invalidate(invalidatedURLs(by: response, to: x.sent), store: stored)
        }
        guard response.source == .network else { return .pass }
        switch mode {
        case .callerConditional:
            return response.status == 304 && !x.redirected ? .freshen : .pass
        case .validating(let stored, let alternates) where response.status == 304:
            // The stored response the 304 confirms: the one validated, or (RFC 9111 §4.3.1) the
            // one of this partition's other variants whose entity tag it names.
            let confirmed = stored.flatMap { rules.notModified(response, matches: $0) ? $0 : nil }
                ?? alternates.first { response.headers["ETag"] != nil && rules.notModified(response, matches: $0) }
            guard !x.redirected, let confirmed else {
                // The origin is healthy; only the stored response is not the one it means.
                var unconditional = x.request
                unconditional.setValue(nil, forHTTPHeaderField: "If-None-Match")
                unconditional.setValue(nil, forHTTPHeaderField: "If-Modified-Since")
                return .refetch(unconditional, removing: !x.redirected)
            }
            var merged = rules.merge(confirmed, with: response, requestTime: x.requestTime, responseTime: x.now)
            if merged.partition != x.partition || stored == nil {
                // A credential was added on the way out, or another variant was confirmed for this
                // request: the merged response is stored for this request's partition and Vary values.
                merged.partition = x.partition
                merged.varyValues = varyValues(for: merged.facts.varyNames, in: x.answered, inScope: x.inScope)
            }
            return .revalidated(merged)
        default:
            break
        }
        let stored = mode.stored
        if Self.staleIfErrorStatuses.contains(response.status), let stored,
           rules.allowsStaleIfError(stored, for: x.request, now: x.now) {
            return .serveStale(stored, .staleIfError)
        }
        if x.method == .head {
            // RFC 9111 §4.3.5: a 200 to HEAD updates the stored GET response it describes, or
            // shows that response is outdated.
            guard response.status == 200, let stored, !x.redirected else { return .pass }
            guard rules.headResponse(response, matches: stored) else { return .remove }
            return .store(rules.merge(stored, with: response, requestTime: x.requestTime, responseTime: x.now))
        }
        let facts = CacheEntry.Facts(response.headers)
        if rules.isStorable(response, facts: facts, for: x.answered) {
            return .store(entry(from: response, facts: facts, for: x.answered, partition: x.partition, exchange: x))
        }
        // A new representation (or its absence) that cannot be stored: the stored one is
        // outdated. A 5xx says nothing about the resource, so the stored response is kept.
        if stored != nil, !x.redirected, response.status < 500, x.method == .get { return .remove }
        return .pass
    }

    /// What to do when a request sent in `mode` failed with `error` (after any retries).
    enum Failure: Sendable, Equatable {
        /// Let the error through.
        case fail
        /// Answer with the stored response, stale, for `reason`.
        case serveStale(CacheEntry, StaleReason)
        /// Answer 504: the stored response must be revalidated and the origin cannot be reached.
        case gatewayTimeout(reason: String)
    }

    /// What to do when a request sent in `mode` failed with `error` at `now`: the stored response
    /// served stale where `stale-if-error` or a disconnection (RFC 9111 §4.2.4) allows, a 504
    /// for a `must-revalidate` response, else the error.
    func afterFailure(_ error: any Error, mode: Mode, request: URLRequest, now: Date) -> Failure {
        guard !(error is CancellationError), let stored = mode.stored else { return .fail }
        if rules.allowsStaleIfError(stored, for: request, now: now) { return .serveStale(stored, .staleIfError) }
        if CacheRules.isDisconnection(error), rules.allowsStaleWhenDisconnected(stored, for: request, now: now) {
            return .serveStale(stored, .disconnected)
        }
        if stored.cacheControl.mustRevalidate {
            return .gatewayTimeout(reason: "must-revalidate and the origin could not be reached: \(error)")
        }
        return .fail
    }

    /// Statuses on which `stale-if-error` serves the stored response (RFC 5861 §4).
    static let staleIfErrorStatuses: Set<Int> = [500, 502, 503, 504]

    // MARK: Entries and targets

    /// The entry stored for `response` to `request` (whose header `facts` are parsed).
    private func entry(from response: Response, facts: CacheEntry.Facts, for request: URLRequest, partition: String,
                       exchange x: Exchange) -> CacheEntry {
        let headers = rules.storedHeaders(response.headers)
        return CacheEntry(status: response.status, headers: headers,
                          facts: headers.count == response.headers.count ? facts : CacheEntry.Facts(headers),
                          body: response.body.exactlySized, url: nil, requestTime: x.requestTime, responseTime: x.now,
                          varyValues: varyValues(for: facts.varyNames, in: request, inScope: x.inScope), partition: partition)
    }

    /// RFC 9110 §9.3.3: a `200`/`203` answer to `POST` with explicit freshness and a
    /// `Content-Location` naming the request's own URI is a representation of that URI; the
    /// entry that answers a later `GET` of it, or `nil`.
    func postEntry(_ response: Response, exchange x: Exchange) -> CacheEntry? {
        guard [200, 203].contains(response.status), let location = response.headers["Content-Location"],
              let url = x.sent.url, let target = URL(string: location, relativeTo: url)?.absoluteURL,
              let here = configuration.keyPolicy.canonicalURL(text: url.absoluteString),
              configuration.keyPolicy.canonicalURL(text: target.absoluteString) == here else { return nil }
        let asGet = Self.asGet(x.sent)
        let facts = CacheEntry.Facts(response.headers)
        guard facts.cacheControl.maxAge != nil || !facts.expires.isEmpty,
              rules.isStorable(response, facts: facts, for: asGet) else { return nil }
        let partition = partitioner.partition(for: asGet, userinfo: CachePartitioner.hasUserinfo(url.absoluteString), inScope: x.inScope)
        return entry(from: response, facts: facts, for: asGet, partition: partition, exchange: x)
    }

    /// `request` as the `GET` of its URI: whose stored responses it reads, invalidates or answers.
    static func asGet(_ request: URLRequest) -> URLRequest {
        var get = request
        get.httpMethod = HTTPMethod.get.rawValue
        get.httpBody = nil
        return get
    }

    /// The URIs a successful unsafe `request` invalidates (RFC 9111 §4.4): its target, and the
    /// `Location` and `Content-Location` of `response` when they have the same origin.
    func invalidatedURLs(by response: Response, to request: URLRequest) -> [URL] {
        guard let url = request.url else { return [] }
        var targets = [url]
        for name in ["Location", "Content-Location"] {
            guard let value = response.headers[name], let target = URL(string: value, relativeTo: url)?.absoluteURL,
                  target.scheme?.lowercased() == url.scheme?.lowercased(), target.host?.lowercased() == url.host?.lowercased(),
                  target.port == url.port else { continue }
            targets.append(target)
        }
        return targets
    }
}
