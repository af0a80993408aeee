import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Every decision the cache makes about one request, as pure functions of values — the
/// request, what is stored, the answer or the error, the time, the configuration — in the
/// spirit of OkHttp's `CacheStrategy`. ``HTTPCache`` looks up, asks the strategy, acts on
/// the answer (storage, coalescing, counters) and decides nothing itself; the strategy does no
/// I/O and holds no state, so every rule is tested on values (`CacheStrategyTests`,
/// `CacheRangeTests`).
///
/// A request meets the strategy three times:
/// 1. ``route(_:_:)`` — from its method and fields alone: bypass, invalidate, the caller's
///    own conditional request, a byte range, or a lookup;
/// 2. ``before(_:_:record:now:)`` — with what is stored: serve fresh, serve stale (which
///    reason), serve stale and refresh, send (which request, in which ``Mode``), or answer 504;
/// 3. ``after(_:mode:exchange:)`` or ``afterFailure(_:mode:request:now:)`` — with the answer:
///    store, merge a 304, serve the stored response stale, remove, invalidate, refetch, freshen,
///    or pass the answer through.
///
/// Two parts of its own: ``ranges`` (``RangeStrategy``: byte ranges, and pieces combined and
/// completed) and ``records`` (``CacheRecordRules``: which stored response serves a request, the
/// entry an answer stores, what a store keeps of the record before, the storage's expiry hint).
///
/// (An immutable class, not a struct: its parts each hold the rules, and the hook and the
/// look-up held it inline — the look-up's fields a hit reads sat past it, on more cache lines:
/// 2–3 % of a memory hit at p0, measured against the struct in the same runs.)
final class CacheStrategy: Sendable {
    /// The RFC 9111 rules the decisions are made of.
    let rules: CacheRules
    /// Partitions and protects credential values (keyed hashes).
    let partitioner: CachePartitioner
    /// The settings (the rules' own).
    let configuration: CacheConfiguration
    /// What records hold and how they are made.
    let records: CacheRecordRules
    /// The decisions on byte ranges and pieces.
    let ranges: RangeStrategy

    /// A strategy with `rules`; `completionLimit`: the longest representation a plain `GET`
    /// completes from stored pieces (``RangeStrategy/completionLimit``).
    init(rules: CacheRules, partitioner: CachePartitioner, completionLimit: Int = Int.max) {
        self.rules = rules
        self.partitioner = partitioner
        self.configuration = rules.configuration
        records = CacheRecordRules(rules: rules, partitioner: partitioner)
        ranges = RangeStrategy(rules: rules, records: records, completionLimit: completionLimit)
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
        /// The caller's own conditional request with `If-None-Match` or `If-Modified-Since`: answered
        /// from a stored response that may be used as it is (a `304`, or the response), else passed
        /// on; a matching 304 freshens what is stored.
        case callerConditional
        /// One byte range of a `GET`: answered from a stored full response or stored pieces
        /// that hold it, else asked of the origin (only the missing bytes, when pieces are held).
        case range(ByteRange)
        /// A `GET` or `HEAD`: looked up.
        case lookup
    }

    /// Whether `request` carries a field of ``CacheConfiguration/bypassFields``: never served
    /// from the cache nor stored (an unsafe one still invalidates).
    func bypasses(_ request: URLRequest) -> Bool {
        configuration.bypassFields.contains { request.value(forHTTPHeaderField: $0) != nil }
    }

    /// Request fields that make a request conditional (RFC 9110 §13.1).
    static let conditionalFields = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"]

    /// The route of `request`, whose ``RequestFacts`` are `facts`.
    func route(_ request: URLRequest, _ facts: RequestFacts) -> Route {
        // Most requests carry no field at all: then none of the field lookups below can find one.
        let hasFields = facts.hasFields, method = facts.method
        func has(_ name: String) -> Bool { request.value(forHTTPHeaderField: name) != nil }
        // (An unsafe method invalidates whatever it carries, a bypass field too: RFC 9111 §4.4.)
        if method.invalidatesCaches { return .invalidate }
        if hasFields, bypasses(request) { return .bypass }
        guard method == .get || method == .head else { return .bypass }
        guard hasFields else { return .lookup }
        if let field = request.value(forHTTPHeaderField: "Range") {
            // Several ranges, the caller's own If-Range or validators, a HEAD: the origin answers them.
            guard method == .get, let range = ByteRange(rangeField: field), !Self.conditionalFields.contains(where: has) else {
                return .bypass
            }
            return .range(range)
        }
        guard Self.conditionalFields.contains(where: has) else { return .lookup }
        // Conditions only an origin evaluates (If-Match, If-Unmodified-Since, a stray If-Range):
        // passed on untouched.
        return Self.evaluatesConditions(request) ? .callerConditional : .bypass
    }

    // MARK: Before the network

    /// What `request`, looked up as `scheduling` says (a plain or a range lookup), does with
    /// `record` at the request's time, or at `now` when given (after a wait).
    func before(_ request: URLRequest, _ scheduling: CacheScheduling, record: CacheRecord?, now: Date? = nil) -> Before {
        let now = now ?? scheduling.requestTime
        if case .callerConditional = scheduling.route {
            return beforeConditional(
                request, scheduling.facts, record: record, partition: scheduling.partition,
                inScope: scheduling.inScope, now: now)
        }
        if case .range(let range) = scheduling.route {
            return before(
                request, scheduling.facts, range: range, record: record, partition: scheduling.partition,
                inScope: scheduling.inScope, now: now)
        }
        return before(request, scheduling.facts, record: record, partition: scheduling.partition, inScope: scheduling.inScope, now: now)
    }

    /// What `request` does with `record` (the stored responses of its key; `nil`: none) at
    /// `now`, for the request's `partition`.
    func before(
        _ request: URLRequest, _ facts: RequestFacts, record: CacheRecord?, partition: String, inScope: Set<String>,
        now: Date
    ) -> Before {
        let directives = rules.requestDirectives(request, hasFields: facts.hasFields)
        let onlyIfCached = directives.onlyIfCached || facts.cachePolicy == .returnCacheDataDontLoad
        guard let entry = record.flatMap({ records.variant(in: $0, for: request, partition: partition, inScope: inScope) }) else {
            if onlyIfCached { return .gatewayTimeout(Self.onlyIfCachedMiss(request)) }
            if let record, let completion = ranges.completion(request, facts, directives, record: record, partition: partition, inScope: inScope) {
                return completion
            }
            // No stored variant matches the request's Vary fields; the origin may still say one
            // of them is the right one (RFC 9111 §4.3.1): offer their entity tags.
            let alternates = record?.variants.filter { $0.status != 206 && $0.partition == partition && $0.etag != nil } ?? []
            guard facts.method == .get, !alternates.isEmpty else { return .send(request, .fetching(stored: nil)) }
            var conditional = request
            let tags = alternates.compactMap(\.etag).map(CacheRules.quotedEntityTag)
            conditional.setValue(tags.joined(separator: ", "), forHTTPHeaderField: "If-None-Match")
            return .send(conditional, .validating(stored: nil, alternates: alternates))
        }
        switch rules.use(of: entry, cachePolicy: facts.cachePolicy, directives: directives, now: now) {
        case .fresh:
            return .serve(rules.response(from: entry, for: facts, now: now, source: .cache), stale: nil)
        case .stale(let reason):
            return .serve(rules.response(from: entry, for: facts, now: now, source: .stale), stale: reason)
        case .staleWhileRevalidate:
            let stale = rules.response(from: entry, for: facts, now: now, source: .stale)
            // (only-if-cached: served within the window, but never a request to the origin, not even in the background.)
            if onlyIfCached { return .serve(stale, stale: .staleWhileRevalidate) }
            let conditional = rules.conditionalRequest(request, for: entry)
            var refresh = conditional ?? request
            refresh.httpMethod = RequestMethod.get.rawValue
            let mode: Mode = conditional == nil ? .fetching(stored: entry) : .validating(stored: entry, alternates: [])
            return .serveAndRefresh(stale, refresh: refresh, mode: mode)
        case .reload:
            return .send(request, .fetching(stored: nil))
        case .validate:
            if onlyIfCached { return .gatewayTimeout(Self.onlyIfCachedMiss(request)) }
            guard let conditional = rules.conditionalRequest(request, for: entry) else { return .send(request, .fetching(stored: entry)) }
            return .send(conditional, .validating(stored: entry, alternates: []))
        }
    }

    /// What a request for `range` does with `record` at `now` (``RangeStrategy``), given what the
    /// whole representation's request would do.
    func before(
        _ request: URLRequest, _ facts: RequestFacts, range: ByteRange, record: CacheRecord?, partition: String,
        inScope: Set<String>, now: Date
    ) -> Before {
        let whole = before(request, facts, record: record, partition: partition, inScope: inScope, now: now)
        return ranges.before(request, facts, range: range, record: record, partition: partition, inScope: inScope, now: now, whole: whole)
    }

    /// Whether the cache evaluates the conditions of the caller's conditional `request` itself
    /// (RFC 9111 §4.3.2): it carries `If-None-Match` or `If-Modified-Since`, and none of the
    /// conditions only an origin server evaluates (`If-Match`, `If-Unmodified-Since`, `If-Range`).
    static func evaluatesConditions(_ request: URLRequest) -> Bool {
        func has(_ name: String) -> Bool { request.value(forHTTPHeaderField: name) != nil }
        return (has("If-None-Match") || has("If-Modified-Since")) && !has("If-Match") && !has("If-Unmodified-Since") && !has("If-Range")
    }

    /// What the caller's own conditional request does with `record` (RFC 9111 §4.3.2): when a
    /// stored response may answer it as it is (fresh, or stale where the request allows), the
    /// cache evaluates `If-None-Match` (else `If-Modified-Since`) against it — a `304` made from
    /// it when it is a `2xx` and unchanged, the stored response itself otherwise; `only-if-cached`
    /// with nothing usable stored gets a `504`; otherwise the request goes to the origin as it is
    /// (and a `304` freshens what is stored).
    func beforeConditional(
        _ request: URLRequest, _ facts: RequestFacts, record: CacheRecord?, partition: String, inScope: Set<String>,
        now: Date
    ) -> Before {
        let directives = rules.requestDirectives(request, hasFields: facts.hasFields)
        let pass: Before =
            directives.onlyIfCached || facts.cachePolicy == .returnCacheDataDontLoad
            ? .gatewayTimeout(Self.onlyIfCachedMiss(request)) : .send(request, .callerConditional)
        guard let entry = record.flatMap({ records.variant(in: $0, for: request, partition: partition, inScope: inScope) }) else { return pass }
        let stale: StaleReason?
        switch rules.use(of: entry, cachePolicy: facts.cachePolicy, directives: directives, now: now) {
        case .fresh: stale = nil
        case .stale(let reason): stale = reason
        default: return pass
        }
        let source: RecallResponse.Source = stale == nil ? .cache : .stale
        // Conditions apply only where the unconditional answer is a 2xx (RFC 9110 §13.2.1): a
        // stored 404 answers as it is, never a 304 that would keep the caller's old copy alive.
        guard (200..<300).contains(entry.status), rules.isUnchanged(entry, for: request) else {
            return .serve(rules.response(from: entry, for: facts, now: now, source: source), stale: stale)
        }
        return .serve(rules.notModifiedResponse(from: entry, for: facts, now: now, source: source), stale: stale)
    }

    // MARK: After the network

    /// What to do with `response`, the answer to a request sent in `mode`.
    func after(_ response: RecallResponse, mode: Mode, exchange x: Exchange) -> After {
        if case .invalidating = mode {
            guard (200..<400).contains(response.status) else { return .pass }
            let stored =
                x.method == .post && response.source == .network && !bypasses(x.sent) ? records.postEntry(response, exchange: x) : nil
            return .invalidate(invalidatedURLs(by: response, to: x.sent), store: stored)
        }
        // A 304 confirms what this cache validated wherever it comes from: a cache further in
        // (memory over disk) answers this cache's conditional request itself (RFC 9111 §4.3.2).
        guard response.source == .network || (mode.isValidating && response.status == 304) else { return .pass }
        switch mode {
        case .callerConditional:
            return response.status == 304 && !x.redirected ? .freshen : .pass
        case .validating(let stored, let alternates) where response.status == 304:
            // The stored response the 304 confirms: the one validated, or (RFC 9111 §4.3.1) the
            // one of this partition's other variants whose entity tag it names.
            let confirmed =
                stored.flatMap { rules.notModified(response, matches: $0) ? $0 : nil }
                ?? alternates.first { response.headers["ETag"] != nil && rules.notModified(response, matches: $0) }
            guard !x.redirected, let confirmed else {
                // The origin is healthy; only the stored response is not the one it means.
                var unconditional = x.request
                unconditional.setValue(nil, forHTTPHeaderField: "If-None-Match")
                unconditional.setValue(nil, forHTTPHeaderField: "If-Modified-Since")
                return .refetch(unconditional, removing: !x.redirected)
            }
            let merged = rules.merge(confirmed, with: response, requestTime: x.requestTime, responseTime: x.now)
            let answer = rules.response(from: merged, for: x.request, now: x.now, source: .revalidated)
            // Stored for this request's partition and Vary values (a credential added on the way out,
            // or another variant confirmed for this request), unless it may no longer be kept.
            guard let kept = records.kept(merged, exchange: x, revary: stored == nil) else {
                return .discardAndAnswer(confirmed, answer: answer)
            }
            return .revalidated(kept, answer: answer)
        case .ranging(let range, let stored):
            return ranges.afterRange(response, range: range, stored: stored, exchange: x)
        case .completing(let pieces) where response.status == 206 || response.status == 416:
            return ranges.afterCompletion(response, pieces: pieces, exchange: x)
        case .completing:
            // Any other answer (a 200: the representation changed) answers the plain GET the caller made.
            var plain = x
            plain.sent = RangeStrategy.asWhole(x.sent)
            plain.answered = RangeStrategy.asWhole(x.answered)
            return after(response, mode: .fetching(stored: nil), exchange: plain)
        default:
            break
        }
        let stored = mode.stored
        if Self.staleIfErrorStatuses.contains(response.status), let stored,
            rules.allowsStaleIfError(stored, for: x.request, now: x.now)
        {
            return .serveStale(rules.response(from: stored, for: x.request, now: x.now, source: .stale), .staleIfError)
        }
        if x.method == .head {
            // RFC 9111 §4.3.5: a 200 to HEAD updates the stored GET response it describes, or
            // shows that response is outdated.
            guard response.status == 200, let stored, !x.redirected else { return .pass }
            // Another representation: that stored response is outdated (the URL's others stay).
            guard rules.headResponse(response, matches: stored) else { return .discard(stored) }
            // The caller gets the origin's answer with the fields only the stored response has
            // (not its Age: the answer is first-hand).
            let updated = rules.merge(stored, with: response, requestTime: x.requestTime, responseTime: x.now)
            var answer = response
            for field in updated.headers where !response.headers.contains(field.name) && field.name.lowercased() != "age" {
                answer.headers.add(field.name, field.value)
            }
            guard let kept = records.kept(updated, exchange: x) else { return .discardAndAnswer(stored, answer: answer) }
            return .storeAndAnswer(kept, answer)
        }
        let facts = CacheEntry.Facts(response.headers)
        if rules.isStorable(response, facts: facts, for: x.answered), records.mayShare(facts, x) {
            return .store(records.entry(from: response, facts: facts, for: x.answered, partition: x.partition, exchange: x))
        }
        // A new representation (or its absence) that cannot be stored: the stored one is
        // outdated. A 5xx says nothing about the resource, so the stored response is kept.
        if stored != nil, !x.redirected, response.status < 500, x.method == .get { return .remove }
        return .pass
    }

    /// What to do when a request sent in `mode` failed with `error` at `now`: the stored response
    /// served stale where `stale-if-error` or a disconnection (RFC 9111 §4.2.4) allows, a 504
    /// for a `must-revalidate` response, else the error.
    func afterFailure(_ error: any Error, mode: Mode, request: URLRequest, now: Date) -> Failure {
        guard !(error is CancellationError), let stored = mode.stored else { return .fail }
        func stale() -> RecallResponse { rules.response(from: stored, for: request, now: now, source: .stale) }
        if rules.allowsStaleIfError(stored, for: request, now: now) { return .serveStale(stale(), .staleIfError) }
        if CacheRules.isDisconnection(error), rules.allowsStaleWhenDisconnected(stored, for: request, now: now) {
            return .serveStale(stale(), .disconnected)
        }
        if rules.mustRevalidate(stored.cacheControl) {
            return .gatewayTimeout(Self.gatewayTimeout(request, reason: "must-revalidate and the origin could not be reached: \(error)"))
        }
        return .fail
    }

    /// The 504 for `request` with nothing usable stored under `only-if-cached`.
    static func onlyIfCachedMiss(_ request: URLRequest) -> RecallResponse {
        gatewayTimeout(request, reason: "only-if-cached and no usable stored response")
    }

    /// A 504 the cache answers itself, for `reason`; never stored.
    static func gatewayTimeout(_ request: URLRequest, reason: String) -> RecallResponse {
        var response = RecallResponse.text("504 Gateway Timeout: \(reason)", status: 504, url: request.url)
        response.source = .cache
        response.headers["Cache-Control"] = "no-store"
        return response
    }

    /// Statuses on which `stale-if-error` serves the stored response (RFC 5861 §4).
    static let staleIfErrorStatuses: Set<Int> = [500, 502, 503, 504]

    /// `request` as the `GET` of its URI: whose stored responses it reads, invalidates or answers.
    static func asGet(_ request: URLRequest) -> URLRequest {
        var get = request
        get.httpMethod = RequestMethod.get.rawValue
        get.httpBody = nil
        return get
    }

    /// The URIs a successful unsafe `request` invalidates (RFC 9111 §4.4): its target, and the
    /// `Location` and `Content-Location` of `response` when they have the same origin.
    func invalidatedURLs(by response: RecallResponse, to request: URLRequest) -> [URL] {
        guard let url = request.url else { return [] }
        var targets = [url]
        for name in ["Location", "Content-Location"] {
            guard let value = response.headers[name], let target = URL(string: value, relativeTo: url)?.absoluteURL,
                target.scheme?.lowercased() == url.scheme?.lowercased(), target.host?.lowercased() == url.host?.lowercased(),
                Self.port(of: target) == Self.port(of: url)
            else { continue }
            targets.append(target)
        }
        return targets
    }

    /// The port `url` names, or its scheme's default (`https://a:443/` and `https://a/` are one origin).
    private static func port(of url: URL) -> Int? {
        url.port ?? ["http": 80, "https": 443][url.scheme?.lowercased() ?? ""]
    }
}
