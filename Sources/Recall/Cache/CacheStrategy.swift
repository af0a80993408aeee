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
    /// The longest representation a plain `GET` completes from stored pieces (the storage's
    /// ``CacheStorage/entryLimit``): the cache collects the answer and stores the whole as one
    /// record, so a longer one goes to the origin as it is, its body streaming to the caller.
    let completionLimit: Int

    init(rules: CacheRules, partitioner: CachePartitioner, completionLimit: Int = Int.max) {
        self.rules = rules
        self.partitioner = partitioner
        self.configuration = rules.configuration
        self.completionLimit = completionLimit
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

    /// Request fields that make a request conditional (RFC 9110 §13.1).
    static let conditionalFields = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"]

    /// The route of `request`, whose ``RequestFacts`` are `facts`.
    func route(_ request: URLRequest, _ facts: RequestFacts) -> Route {
        // Most requests carry no field at all: then none of the field lookups below can find one.
        let hasFields = facts.hasFields, method = facts.method
        func has(_ name: String) -> Bool { request.value(forHTTPHeaderField: name) != nil }
        if hasFields, configuration.bypassFields.contains(where: has) { return .bypass }
        if method.invalidatesCaches { return .invalidate }
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
        /// A request for the caller's `range`, sent as it is or for the bytes `stored` lacks, with
        /// `If-Range` naming `stored`'s strong entity tag when there is one: `stored` is a full
        /// response the answer may freshen, or the pieces (a `206` entry) it may complete.
        indirect case ranging(ByteRange, stored: CacheEntry?)
        /// A plain `GET` sent for the bytes the stored pieces `stored` (a `206` entry with a strong
        /// entity tag) lack, with `If-Range` naming the tag: a `206` that makes them whole answers
        /// the caller with the whole representation (RFC 9111 §3.4).
        indirect case completing(stored: CacheEntry)

        /// The stored response the request may fall back on (none for a range: a stale full
        /// response is not cut to size on failure).
        var stored: CacheEntry? {
            switch self {
            case .fetching(let stored), .validating(let stored, _): stored
            case .invalidating, .callerConditional, .refetching, .ranging, .completing: nil
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
        case serve(RecallResponse, stale: StaleReason?)
        /// Answer with the stale `response` now, and send `refresh` in the background in `mode`
        /// (`stale-while-revalidate`).
        case serveAndRefresh(RecallResponse, refresh: URLRequest, mode: Mode)
        /// Send `request` to the origin, in `mode`.
        case send(URLRequest, Mode)
        /// Pass the request on untouched, nothing to remember.
        case bypass
        /// Answer with this 504: `only-if-cached` (or `.returnCacheDataDontLoad`) with nothing
        /// usable stored.
        case gatewayTimeout(RecallResponse)
    }

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
        guard let entry = record.flatMap({ variant(in: $0, for: request, partition: partition, inScope: inScope) }) else {
            if onlyIfCached { return .gatewayTimeout(Self.onlyIfCachedMiss(request)) }
            if let record, let completion = completion(request, facts, directives, record: record, partition: partition, inScope: inScope) {
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
        guard let entry = record.flatMap({ variant(in: $0, for: request, partition: partition, inScope: inScope) }) else { return pass }
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

    /// A plain `GET` of a representation whose pieces only are stored, under a strong entity tag:
    /// sent for the bytes they lack (one span) with `If-Range` naming the tag, so that a `206`
    /// completes them (RFC 9111 §3.4). `nil` — the request goes as it is — without such pieces,
    /// for a `HEAD`, when the caller ignores what is stored (`.reloadIgnoringLocalCacheData`) or
    /// forbids storing (`no-store`), or for a representation longer than ``completionLimit``.
    private func completion(
        _ request: URLRequest, _ facts: RequestFacts, _ directives: CacheDirectives, record: CacheRecord,
        partition: String, inScope: Set<String>
    ) -> Before? {
        guard facts.method == .get, facts.cachePolicy != .reloadIgnoringLocalCacheData,
            facts.cachePolicy != .reloadIgnoringLocalAndRemoteCacheData,
            !directives.noStore,  // (its answer could not be combined)
            let entry = pieces(in: record, for: request, partition: partition, inScope: inScope),
            let tag = entry.etag, CacheRules.isStrong(tag), let held = PartialContent(entry), held.length <= completionLimit,
            let missing = held.missing(in: 0...(held.length - 1))
        else { return nil }
        var outgoing = request
        outgoing.setValue("bytes=\(missing.lowerBound)-\(missing.upperBound)", forHTTPHeaderField: "Range")
        outgoing.setValue(CacheRules.quotedEntityTag(tag), forHTTPHeaderField: "If-Range")
        return .send(outgoing, .completing(stored: entry))
    }

    /// What a request for `range` does with `record` (RFC 9110 §14, RFC 9111 §3.3–3.4):
    /// - a `206` (or `416`) made from a stored full `200` it may use as it is; with
    ///   `stale-while-revalidate`, the full response is refreshed in the background;
    /// - else a `206` (or `416`) made from stored pieces (a partial entry) that hold every byte
    ///   asked for and may be used as they are;
    /// - else 504 for `only-if-cached`;
    /// - else the origin is asked: for the bytes the pieces lack (one span) with `If-Range`
    ///   naming their strong entity tag; for the range with `If-Range` naming a full response
    ///   that needs validation (a `206` then confirms it); or for the range as it is (pieces
    ///   without a strong entity tag are never combined: the answer replaces them).
    func before(
        _ request: URLRequest, _ facts: RequestFacts, range: ByteRange, record: CacheRecord?, partition: String,
        inScope: Set<String>, now: Date
    ) -> Before {
        let whole = before(request, facts, record: record, partition: partition, inScope: inScope, now: now)
        switch whole {
        case .serve(let full, let stale) where full.status == 200:
            return .serve(rules.partialResponse(full, range: range), stale: stale)
        case .serveAndRefresh(let full, var refresh, let mode) where full.status == 200:
            refresh.setValue(nil, forHTTPHeaderField: "Range")
            return .serveAndRefresh(rules.partialResponse(full, range: range), refresh: refresh, mode: mode)
        default:
            break
        }
        let directives = rules.requestDirectives(request, hasFields: facts.hasFields)
        let onlyIfCached = directives.onlyIfCached || facts.cachePolicy == .returnCacheDataDontLoad
        if let record, let entry = pieces(in: record, for: request, partition: partition, inScope: inScope),
            let pieces = PartialContent(entry)
        {
            let use = rules.use(of: entry, cachePolicy: facts.cachePolicy, directives: directives, now: now)
            let bounds = range.bounds(length: pieces.length)
            if case .reload = use { return .send(request, .ranging(range, stored: nil)) }
            let stale: StaleReason?? =
                switch use {
                case .fresh: .some(nil)
                case .stale(let reason): .some(reason)
                default: nil
                }
            if let stale {
                if let bounds, pieces.covers(bounds) {
                    let source: RecallResponse.Source = stale == nil ? .cache : .stale
                    return .serve(rules.response(from: entry, pieces: pieces, bounds: bounds, for: request, now: now, source: source), stale: stale)
                }
                if bounds == nil {
                    let full = RecallResponse(status: 200, headers: entry.headers, body: Data(), url: request.url, source: stale == nil ? .cache : .stale)
                    return .serve(rules.partialResponse(full, range: range, length: pieces.length), stale: stale)
                }
            }
            if onlyIfCached { return .gatewayTimeout(Self.onlyIfCachedMiss(request)) }
            guard let tag = entry.etag, CacheRules.isStrong(tag) else { return .send(request, .ranging(range, stored: entry)) }
            var outgoing = request
            // Only what is missing; everything asked for when the pieces may not be used as they are.
            if let bounds, let wanted = stale == nil ? bounds : pieces.missing(in: bounds) {
                outgoing.setValue("bytes=\(wanted.lowerBound)-\(wanted.upperBound)", forHTTPHeaderField: "Range")
            }
            outgoing.setValue(CacheRules.quotedEntityTag(tag), forHTTPHeaderField: "If-Range")
            return .send(outgoing, .ranging(range, stored: entry))
        }
        switch whole {
        case .gatewayTimeout(let answer):
            return .gatewayTimeout(answer)
        case .send(_, let mode):
            var outgoing = request
            guard let full = mode.stored, full.status == 200, let tag = full.etag, CacheRules.isStrong(tag) else {
                return .send(outgoing, .ranging(range, stored: nil))
            }
            outgoing.setValue(CacheRules.quotedEntityTag(tag), forHTTPHeaderField: "If-Range")
            return .send(outgoing, .ranging(range, stored: full))
        default:
            return onlyIfCached ? .gatewayTimeout(Self.onlyIfCachedMiss(request)) : .send(request, .ranging(range, stored: nil))
        }
    }

    /// The stored response in `record` for `request`: same partition, matching `Vary` fields,
    /// complete (pieces of a representation answer only ranges, see ``pieces(in:for:partition:inScope:)``);
    /// else a variant chosen by language (``languageVariant(in:for:partition:inScope:)``).
    func variant(in record: CacheRecord, for request: URLRequest, partition: String, inScope: Set<String>) -> CacheEntry? {
        record.variants.first { entry in
            entry.status != 206 && entry.partition == partition
                && rules.varyMatches(entry) { varyValues(for: $0, in: request, inScope: inScope) }
        } ?? languageVariant(in: record, for: request, partition: partition, inScope: inScope)
    }

    /// A stored response of `request`'s partition that varies on `Accept-Language`, stored for
    /// another one, whose `Content-Language` the request prefers as much as any
    /// (``CacheRules/prefersLanguage(of:accepted:)``, RFC 9110 §12.5.4), and whose other `Vary`
    /// fields match: the newest such. An extension of RFC 9111 §4.1's matching (which lets a
    /// cache compare selecting fields by meaning), by the request's own preferences:
    /// `Accept-Language: fr;q=0.5, de` is answered by a stored `de` variant fetched for `en, de`.
    private func languageVariant(in record: CacheRecord, for request: URLRequest, partition: String, inScope: Set<String>) -> CacheEntry? {
        guard let accepted = request.value(forHTTPHeaderField: "Accept-Language") else { return nil }
        return record.variants.first { entry in
            let names = entry.facts.varyNames
            guard entry.status != 206, entry.partition == partition, names.contains("accept-language"), !names.contains("*"),
                rules.prefersLanguage(of: entry, accepted: accepted)
            else { return false }
            let others = names.filter { $0 != "accept-language" }
            return varyValues(for: others, in: request, inScope: inScope) == entry.varyValues.filter { $0.name != "accept-language" }
        }
    }

    /// The stored pieces (a partial `206` entry) in `record` for `request`: same partition,
    /// matching `Vary` fields.
    func pieces(in record: CacheRecord, for request: URLRequest, partition: String, inScope: Set<String>) -> CacheEntry? {
        record.variants.first { entry in
            entry.status == 206 && entry.partition == partition
                && rules.varyMatches(entry) { varyValues(for: $0, in: request, inScope: inScope) }
        }
    }

    /// The values of `request`'s fields named by a `Vary`, with credential fields as keyed hashes.
    func varyValues(for names: [String], in request: URLRequest, inScope: Set<String>) -> [HeaderFields.Field] {
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
        var method: RequestMethod
        /// When the request was sent and when the answer came.
        var requestTime: Date
        var now: Date
        /// The freshness lifetime the request asks for answers that give none
        /// (``HTTPCache/RequestLifetime``), in seconds.
        var requestLifetime: Double?
    }

    /// What to do with an answer from the origin.
    enum After: Sendable, Equatable {
        /// Return the answer as it is.
        case pass
        /// Store `entry` (made from the answer) for the URL that answered; return the answer.
        case store(CacheEntry)
        /// Store `entry` for the URL that answered; answer with `response` (the caller's range,
        /// made from what the answer completed).
        case storeAndAnswer(CacheEntry, RecallResponse)
        /// A 304 confirmed a stored response: store `entry` (it merged with the 304) and answer
        /// with `answer`, made from it (`.revalidated`).
        case revalidated(CacheEntry, answer: RecallResponse)
        /// Keep the stored response and answer with `answer`, made from it stale, for `reason`.
        case serveStale(RecallResponse, StaleReason)
        /// The stored responses of the URL are outdated: remove them; return the answer.
        case remove
        /// This one stored response (of one partition and `Vary` values) is outdated: remove it,
        /// keep the URL's others; return the answer.
        case discard(CacheEntry)
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
    func after(_ response: RecallResponse, mode: Mode, exchange x: Exchange) -> After {
        if case .invalidating = mode {
            guard (200..<400).contains(response.status) else { return .pass }
            let stored = x.method == .post && response.source == .network ? postEntry(response, exchange: x) : nil
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
            var merged = rules.merge(confirmed, with: response, requestTime: x.requestTime, responseTime: x.now)
            if merged.partition != x.partition || stored == nil {
                // A credential was added on the way out, or another variant was confirmed for this
                // request: the merged response is stored for this request's partition and Vary values.
                merged.partition = x.partition
                merged.varyValues = varyValues(for: merged.facts.varyNames, in: x.answered, inScope: x.inScope)
            }
            return .revalidated(merged, answer: rules.response(from: merged, for: x.request, now: x.now, source: .revalidated))
        case .ranging(let range, let stored):
            return afterRange(response, range: range, stored: stored, exchange: x)
        case .completing(let pieces) where response.status == 206 || response.status == 416:
            return afterCompletion(response, pieces: pieces, exchange: x)
        case .completing:
            // Any other answer (a 200: the representation changed) answers the plain GET the caller made.
            var plain = x
            plain.sent = Self.asWhole(x.sent)
            plain.answered = Self.asWhole(x.answered)
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
            return .storeAndAnswer(updated, answer)
        }
        let facts = CacheEntry.Facts(response.headers)
        if rules.isStorable(response, facts: facts, for: x.answered), mayShare(facts, x) {
            return .store(entry(from: response, facts: facts, for: x.answered, partition: x.partition, exchange: x))
        }
        // A new representation (or its absence) that cannot be stored: the stored one is
        // outdated. A 5xx says nothing about the resource, so the stored response is kept.
        if stored != nil, !x.redirected, response.status < 500, x.method == .get { return .remove }
        return .pass
    }

    /// Whether a response with `facts` may be stored for the exchange `x` as far as who may see
    /// it goes: always, unless the request may carry credentials the cache does not see
    /// (``HTTPCache/credentialsMayBeAddedBelow``); then only where RFC 9111 §3.5 lets a shared
    /// cache store the answer to an authenticated request (`public`, `must-revalidate`), as the
    /// cache cannot tell its users apart.
    /// A response that varies on a credential field is never shared (the cache would match its
    /// variant on the fields it sees, without the credential), nor one with `s-maxage` or
    /// `proxy-revalidate`, whose shared-cache meaning this private cache does not apply.
    private func mayShare(_ facts: CacheEntry.Facts, _ x: Exchange) -> Bool {
        guard CachePartitioner.hasUnseenCredentials(x.inScope) else { return true }
        let directives = facts.cacheControl
        guard !directives.isPrivate, !directives.contains("s-maxage"), !directives.contains("proxy-revalidate"),
            !facts.varyNames.contains(where: { partitioner.isCredential($0, inScope: x.inScope) })
        else { return false }
        return directives.isPublic || directives.mustRevalidate
    }

    /// What to do with `response`, the answer to a request for the caller's `range` sent in
    /// mode ``Mode/ranging(_:stored:)`` (RFC 9111 §3.3–3.4):
    /// - a `206` with the strong entity tag of a stored full response confirms it (`If-Range`
    ///   matched): the full response is freshened with the answer's fields;
    /// - a `206` that may be stored is combined with the stored pieces of the same entity tag
    ///   and length (or starts new ones), stored — as a full `200` once every byte is held —
    ///   and the caller's range is answered from the result when the origin was asked for less;
    /// - a storable `200` (the representation changed, or the origin ignores ranges) is stored
    ///   and the caller's range answered from it; one that cannot be stored outdates the stored
    ///   response (only that one: the URL's other partitions and variants are kept);
    /// - a `416` outdates the stored pieces (only them); anything else passes.
    private func afterRange(_ response: RecallResponse, range: ByteRange, stored: CacheEntry?, exchange x: Exchange) -> After {
        guard !x.redirected else { return .pass }
        // Whether the origin was asked for the caller's own range (not only the missing bytes).
        let askedAsIs = x.sent.value(forHTTPHeaderField: "Range").flatMap(ByteRange.init(rangeField:)) == range
        // The caller's request as it came (without the If-Range the cache added), to send again
        // when an answer for less than that cannot make it whole.
        var callers = x.request
        callers.setValue(range.fieldValue, forHTTPHeaderField: "Range")
        callers.setValue(nil, forHTTPHeaderField: "If-Range")
        let facts = CacheEntry.Facts(response.headers)
        switch response.status {
        case 200:
            guard rules.isStorable(response, facts: facts, for: Self.asWhole(x.answered)), mayShare(facts, x) else {
                return stored.map { .discard($0) } ?? .pass
            }
            let full = entry(from: response, facts: facts, for: x.answered, partition: x.partition, exchange: x)
            return .storeAndAnswer(full, rules.partialResponse(response, range: range))
        case 206:
            guard let piece = rules.storablePiece(response, facts: facts, for: x.answered, now: x.now), mayShare(facts, x) else {
                // Not storable: the answer serves the caller only if it answers the caller's range.
                return askedAsIs ? .pass : .refetch(callers, removing: false)
            }
            if let stored, stored.status == 200, CacheRules.strongMatch(stored.etag, facts.etag),
                (stored.storedBody?.count ?? stored.body.count) == piece.length
            {
                return .store(rules.merge(stored, with: response, requestTime: x.requestTime, responseTime: x.now))
            }
            guard let (combined, pieces) = combining(response, piece: piece, facts: facts, with: stored, exchange: x) else {
                return askedAsIs ? .pass : .refetch(callers, removing: false)
            }
            if askedAsIs { return .store(combined) }
            guard let bounds = range.bounds(length: piece.length), pieces.covers(bounds) else {
                return .refetch(callers, removing: false)
            }
            // The caller's answer carries the origin's own fields (Set-Cookie and the others
            // never stored), with the range cut from the combined bytes.
            var answering = combined
            answering.headers = response.headers
            return .storeAndAnswer(
                combined,
                rules.response(
                    from: answering, pieces: pieces, bounds: bounds, for: x.request,
                    now: x.now, source: .network))
        case 416 where stored?.status == 206:
            return stored.map { .discard($0) } ?? .pass
        default:
            return .pass
        }
    }

    /// What to do with `response`, a `206` or `416` answering a plain `GET` sent for the bytes the
    /// stored `pieces` lack (mode ``Mode/completing(stored:)``; other answers are those of a plain
    /// fetch): a `206` that may be stored under the pieces' strong entity tag and makes them
    /// whole is stored as the full response, which answers the caller as a `200` with the
    /// origin's fields of this answer. Anything else — a `206` that cannot be combined or leaves
    /// bytes missing, a `416` (the length changed), an answer from another URL — cannot answer a
    /// caller who asked for the whole representation: the request is sent once more as it came,
    /// and that answer stored (it replaces the pieces).
    private func afterCompletion(_ response: RecallResponse, pieces stored: CacheEntry, exchange x: Exchange) -> After {
        let whole = Self.asWhole(x.request)
        let facts = CacheEntry.Facts(response.headers)
        guard !x.redirected, response.status == 206, CacheRules.strongMatch(stored.etag, facts.etag),
            let piece = rules.storablePiece(response, facts: facts, for: x.answered, now: x.now), mayShare(facts, x),
            let (full, pieces) = combining(response, piece: piece, facts: facts, with: stored, exchange: x), pieces.isComplete
        else {
            return .refetch(whole, removing: false)
        }
        var fields = response.headers
        fields.remove("Content-Range")
        fields["Content-Length"] = String(pieces.length)
        return .storeAndAnswer(full, RecallResponse(status: 200, headers: fields, body: full.body, url: x.request.url, source: .network))
    }

    /// The piece of `response` (at `piece`) added to the pieces of `stored` when they share its
    /// strong entity tag and length, or alone: the entry that stores them (a full `200` once every
    /// byte is held), and the pieces. The stored fields are updated with the answer's (RFC 9111
    /// §3.4, §3.2: a field only the older pieces had is kept). `nil` when the piece cannot be added
    /// (``PartialContent/maxPieces``).
    private func combining(
        _ response: RecallResponse, piece: (bounds: ClosedRange<Int>, length: Int), facts: CacheEntry.Facts,
        with stored: CacheEntry?, exchange x: Exchange
    ) -> (entry: CacheEntry, pieces: PartialContent)? {
        var template = entry(from: response, facts: facts, for: x.answered, partition: x.partition, exchange: x)
        let old = stored.flatMap { old -> (entry: CacheEntry, pieces: PartialContent)? in
            guard CacheRules.strongMatch(old.etag, facts.etag), let pieces = PartialContent(old), pieces.length == piece.length else { return nil }
            return (old, pieces)
        }
        var pieces = old?.pieces ?? PartialContent(length: piece.length)
        guard pieces.insert(piece.bounds, bytes: template.body) else { return nil }
        if let old {
            template.headers = rules.merge(old.entry, with: response, requestTime: x.requestTime, responseTime: x.now).headers
        }
        return (pieces.entry(headers: template.headers, like: template), pieces)
    }

    /// `request` without its `Range` and `If-Range` fields: the request a full answer answers.
    static func asWhole(_ request: URLRequest) -> URLRequest {
        var whole = request
        whole.setValue(nil, forHTTPHeaderField: "Range")
        whole.setValue(nil, forHTTPHeaderField: "If-Range")
        return whole
    }

    /// What to do when a request sent in `mode` failed with `error` (after any retries).
    enum Failure: Sendable, Equatable {
        /// Let the error through.
        case fail
        /// Answer with `answer`, made from the stored response, stale, for `reason`.
        case serveStale(RecallResponse, StaleReason)
        /// Answer with this 504: the stored response must be revalidated and the origin cannot
        /// be reached.
        case gatewayTimeout(RecallResponse)
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
        if stored.cacheControl.mustRevalidate {
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

    // MARK: Records

    /// The record of `key` with `entry` stored in it: first, then the responses of `existing` it
    /// keeps (``keeps(_:storing:)``), at most ``CacheConfiguration/maxVariants`` in all.
    func record(storing entry: CacheEntry, key: String, over existing: CacheRecord?) -> CacheRecord {
        let kept = existing?.variants.filter { keeps($0, storing: entry) } ?? []
        return CacheRecord(key: key, variants: Array(([entry] + kept).prefix(rules.configuration.maxVariants)))
    }

    /// Whether storing `entry` over `existing` keeps none of its responses: then the record need
    /// not be read again before the write.
    func keepsNothing(of existing: CacheRecord?, storing entry: CacheEntry) -> Bool {
        existing?.variants.allSatisfy { !keeps($0, storing: entry) } ?? true
    }

    /// Whether `old` stays beside `entry` when `entry` is stored: a response of another partition,
    /// of this partition's other `Vary` variants, or a full response beside a piece without a
    /// strong validator (which says nothing of it: it may still be revalidated).
    private func keeps(_ old: CacheEntry, storing entry: CacheEntry) -> Bool {
        old.partition != entry.partition
            || (!entry.facts.varyNames.isEmpty && old.facts.varyNames == entry.facts.varyNames && old.varyValues != entry.varyValues)
            || (entry.isPieceWithoutStrongValidator && old.status != 206)
    }

    /// The hint a storage gets with `record` (``CacheStorage/store(_:expires:)``): when none of
    /// its responses can be served any more — past its freshness and its stale windows
    /// (`stale-while-revalidate`, `stale-if-error`, the offline allowance); `nil` when one can be
    /// revalidated (it carries `ETag` or `Last-Modified`), and so stays useful with no end. (A
    /// request's `max-stale` or `stale-if-error` may accept a response later still: a storage
    /// that drops the record by then costs that request a miss, never a wrong answer.)
    func expiry(of record: CacheRecord) -> Date? {
        var latest: Date?
        for entry in record.variants {
            if entry.etag != nil || entry.lastModified != nil { return nil }
            let directives = entry.cacheControl
            var grace = Double(max(directives.staleWhileRevalidate ?? 0, directives.staleIfError ?? 0))
            if rules.configuration.servesStaleWhenDisconnected, !directives.mustRevalidate, !directives.noCache {
                grace = max(grace, rules.configuration.maxDisconnectedStaleness)
            }
            let freshFor = max(0, rules.freshnessLifetime(entry) - rules.currentAge(entry, now: entry.responseTime))
            let until = entry.responseTime.addingTimeInterval(freshFor + grace)
            latest = max(latest ?? until, until)
        }
        return latest
    }

    /// The responses of `record` that stay when `outdated` goes: all but those of its partition,
    /// `Vary` values and kind (a piece or a whole response).
    func variants(of record: CacheRecord, without outdated: CacheEntry) -> [CacheEntry] {
        record.variants.filter { entry in
            entry.partition != outdated.partition || entry.varyValues != outdated.varyValues
                || (entry.status == 206) != (outdated.status == 206)
        }
    }

    /// The stored response of `record` that the 304 `response` to the caller's own conditional
    /// `request` freshens, merged with it; `nil` when it matches none or carries no validator.
    func freshened(
        _ record: CacheRecord, with response: RecallResponse, for request: URLRequest, partition: String, inScope: Set<String>,
        requestTime: Date, responseTime: Date
    ) -> CacheEntry? {
        guard let entry = variant(in: record, for: request, partition: partition, inScope: inScope),
            rules.notModified(response, matches: entry),
            response.headers["ETag"] != nil || response.headers["Last-Modified"] != nil
        else { return nil }
        return rules.merge(entry, with: response, requestTime: requestTime, responseTime: responseTime)
    }

    /// Statuses on which `stale-if-error` serves the stored response (RFC 5861 §4).
    static let staleIfErrorStatuses: Set<Int> = [500, 502, 503, 504]

    // MARK: Entries and targets

    /// The entry stored for `response` to `request` (whose header `facts` are parsed).
    private func entry(
        from response: RecallResponse, facts: CacheEntry.Facts, for request: URLRequest, partition: String,
        exchange x: Exchange
    ) -> CacheEntry {
        let headers = rules.storedHeaders(response.headers)
        var entry = CacheEntry(
            status: response.status, headers: headers,
            facts: headers.count == response.headers.count ? facts : CacheEntry.Facts(headers),
            body: response.wholeBody.exactlySized, url: nil, requestTime: x.requestTime, responseTime: x.now,
            varyValues: varyValues(for: facts.varyNames, in: request, inScope: x.inScope), partition: partition)
        entry.assignedLifetime = assignedLifetime(facts, status: response.status, url: request.url, exchange: x)
        return entry
    }

    /// The lifetime a response that gives none gets (see ``LifetimeRule``): the request's own,
    /// else the first matching rule; nil when the response has explicit freshness or a status
    /// that is not cacheable by default.
    private func assignedLifetime(_ facts: CacheEntry.Facts, status: Int, url: URL?, exchange x: Exchange) -> Double? {
        guard facts.cacheControl.maxAge == nil, facts.expires.isEmpty,
            CacheRules.heuristicallyCacheable.contains(status)
        else { return nil }
        return (x.requestLifetime ?? configuration.lifetimes.lifetime(for: url)).map(\.finiteOrZero)
    }

    /// RFC 9110 §9.3.3: a `200`/`203` answer to `POST` with explicit freshness and a
    /// `Content-Location` naming the request's own URI is a representation of that URI; the
    /// entry that answers a later `GET` of it, or `nil`.
    func postEntry(_ response: RecallResponse, exchange x: Exchange) -> CacheEntry? {
        guard [200, 203].contains(response.status), let location = response.headers["Content-Location"],
            let url = x.sent.url, let target = URL(string: location, relativeTo: url)?.absoluteURL,
            let here = configuration.keyPolicy.canonicalURL(text: url.absoluteString),
            configuration.keyPolicy.canonicalURL(text: target.absoluteString) == here
        else { return nil }
        let asGet = Self.asGet(x.sent)
        let facts = CacheEntry.Facts(response.headers)
        guard facts.cacheControl.maxAge != nil || !facts.expires.isEmpty,
            rules.isStorable(response, facts: facts, for: asGet), mayShare(facts, x)
        else { return nil }
        let partition = partitioner.partition(for: asGet, userinfo: CachePartitioner.hasUserinfo(url.absoluteString), inScope: x.inScope)
        return entry(from: response, facts: facts, for: asGet, partition: partition, exchange: x)
    }

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
                target.port == url.port
            else { continue }
            targets.append(target)
        }
        return targets
    }
}
