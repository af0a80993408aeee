import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The decisions of RFC 9111 and RFC 5861 as pure functions of (entry, request, now):
/// what may be stored, how old and how fresh an entry is, and whether a request may be
/// answered from it. No I/O, so every rule is tested on values.
package struct CacheRules: Sendable {
    /// The cache settings the rules read (heuristics, limits).
    package var configuration: CacheConfiguration

    /// Creates the rules.
    package init(configuration: CacheConfiguration = CacheConfiguration()) {
        self.configuration = configuration
    }

    /// Whether the cache is shared (``CacheAudience/shared``): the rules RFC 9111 gives shared
    /// caches apply.
    var isShared: Bool { configuration.audience == .shared }

    /// Whether a stored response with `directives` is never served stale without revalidating
    /// it: `must-revalidate`; in a shared cache also `proxy-revalidate` and `s-maxage`, which
    /// carries its meaning (RFC 9111 §5.2.2.2, §5.2.2.8, §5.2.2.10).
    func mustRevalidate(_ directives: CacheDirectives) -> Bool {
        directives.mustRevalidate || (isShared && (directives.proxyRevalidate || directives.contains("s-maxage")))
    }

    /// Whether a response with `directives` to `request` may be kept as far as who it was for
    /// goes: always in a private cache; in a shared one, never `private` (qualified or not), nor
    /// an answer to a request with `Authorization` that `public`, `must-revalidate` or
    /// `s-maxage` does not allow to serve others (RFC 9111 §3, §3.5) — also when a `304` or a
    /// `HEAD` answer brings those directives to a stored response.
    func mayKeep(_ directives: CacheDirectives, for request: URLRequest) -> Bool {
        guard isShared else { return true }
        if directives.isPrivate { return false }
        return request.value(forHTTPHeaderField: "Authorization") == nil || servesOthers(directives)
    }

    /// Whether `directives` let an answer to an authenticated request serve other requests
    /// (RFC 9111 §3.5): `public`, `must-revalidate`, or in a shared cache `s-maxage`.
    func servesOthers(_ directives: CacheDirectives) -> Bool {
        directives.isPublic || directives.mustRevalidate || (isShared && directives.sMaxAge != nil)
    }

    /// Whether a response with `directives` and `Expires` fields `expires` gives itself a
    /// lifetime: `max-age`, `Expires`, or in a shared cache `s-maxage`.
    func hasExplicitLifetime(_ directives: CacheDirectives, expires: [String]) -> Bool {
        directives.maxAge != nil || !expires.isEmpty || (isShared && directives.sMaxAge != nil)
    }

    /// Statuses cacheable by default, without explicit freshness (RFC 9110 §15.1).
    package static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Statuses whose meaning this cache understands (for `must-understand`).
    static let understood: Set<Int> = [200, 203, 204, 206, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501]

    /// The request directives, with `Pragma: no-cache` standing for `no-cache` when there is
    /// no `Cache-Control` (RFC 9111 §5.4).
    package func requestDirectives(_ request: URLRequest) -> CacheDirectives {
        requestDirectives(request, hasFields: RequestFacts.hasFields(request))
    }

    /// ``requestDirectives(_:)`` when whether `request` has any field is known (``RequestFacts``).
    func requestDirectives(_ request: URLRequest, hasFields: Bool) -> CacheDirectives {
        guard hasFields else { return CacheDirectives(nil as String?) }
        guard let value = request.value(forHTTPHeaderField: "Cache-Control") else {
            if let pragma = request.value(forHTTPHeaderField: "Pragma"), pragma.lowercased().contains("no-cache") {
                return CacheDirectives("no-cache")
            }
            return CacheDirectives(nil as String?)
        }
        return CacheDirectives(value)
    }

    // MARK: Storing

    /// Whether `response` to `request` may be stored (RFC 9111 §3).
    package func isStorable(_ response: RecallResponse, for request: URLRequest) -> Bool {
        isStorable(response, facts: CacheEntry.Facts(response.headers), for: request)
    }

    /// ``isStorable(_:for:)`` with the response's header facts already parsed (the cache parses
    /// them once, for the decision and for the entry it stores).
    func isStorable(_ response: RecallResponse, facts: CacheEntry.Facts, for request: URLRequest) -> Bool {
        // A 200 carrying Content-Range is a full response like any other (the field is stored);
        // partial responses (206) and answers to ranges are stored as pieces (see storablePiece).
        guard response.status != 206, request.value(forHTTPHeaderField: "Range") == nil else { return false }
        return mayStore(response, facts: facts, for: request)
    }

    /// Where the bytes of `response`, a `206` to a single-range `GET`, belong in its
    /// representation, when they may be stored as a piece of it (RFC 9111 §3.3): one
    /// `Content-Range` with a known complete length that the body fills exactly, no
    /// `Content-Encoding`, a strong entity tag or explicit freshness (`max-age`, `Expires`: a
    /// piece without a strong validator answers ranges inside it while fresh, and is never
    /// combined with another, §3.4; a positive lifetime: `max-age=0` or a past `Expires` would
    /// store a piece nothing can use), and the rules every stored response follows. `nil` otherwise.
    func storablePiece(_ response: RecallResponse, facts: CacheEntry.Facts, for request: URLRequest, now: Date)
        -> (bounds: ClosedRange<Int>, length: Int)?
    {
        guard response.status == 206, facts.etag.map(Self.isStrong) == true || hasExplicitFreshness(response, facts: facts, now: now),
            response.headers.values(for: "Content-Range").count == 1,
            let range = response.headers["Content-Range"].flatMap(PartialContent.contentRange),
            response.wholeBody.count == range.bounds.count, !response.headers.contains("Content-Encoding"),
            mayStore(response, facts: facts, for: request)
        else { return nil }
        return range
    }

    /// Whether `response` gives itself a positive freshness lifetime (`max-age`, or an `Expires`
    /// after its `Date`): a piece stored without a strong validator must be usable for a while,
    /// as nothing can ever revalidate it.
    /// (`now`: when it was received, standing in for a missing `Date`.)
    private func hasExplicitFreshness(_ response: RecallResponse, facts: CacheEntry.Facts, now: Date) -> Bool {
        guard hasExplicitLifetime(facts.cacheControl, expires: facts.expires) else { return false }
        let entry = CacheEntry(
            status: response.status, headers: response.headers, facts: facts, body: Data(), url: nil,
            requestTime: now, responseTime: now, varyValues: [], partition: "")
        return freshnessLifetime(entry) > 0
    }

    /// Whether an entity tag is strong (not `W/`-prefixed): only a strong tag says two
    /// responses carry the same bytes.
    static func isStrong(_ tag: String) -> Bool {
        !tag.trimmingOWS.hasPrefix("W/")
    }

    /// Whether two entity tags are the same strong tag (RFC 9110 §8.8.3.2: both strong, same
    /// opaque tag; an unquoted tag compares as its quoted form).
    static func strongMatch(_ lhs: String?, _ rhs: String?) -> Bool {
        guard let lhs, let rhs, isStrong(lhs), isStrong(rhs) else { return false }
        return quotedEntityTag(lhs) == quotedEntityTag(rhs)
    }

    /// The rules every stored response follows, whatever its status (RFC 9111 §3).
    private func mayStore(_ response: RecallResponse, facts: CacheEntry.Facts, for request: URLRequest) -> Bool {
        guard RequestMethod(request) == .get else { return false }
        // (A status is three digits, RFC 9110 §15: one that is not could not be read back from a record.)
        guard response.status >= 200, response.status <= 999, response.status != 304 else { return false }
        let directives = facts.cacheControl
        if directives.mustUnderstand {
            guard Self.understood.contains(response.status) else { return false }
        } else if directives.noStore || requestDirectives(request).noStore {
            return false
        }
        if facts.varyNames.contains("*") { return false }
        // (A Content-Length that is not one length this cache takes — `+5`, `5,6`, 19 digits —
        // frames nothing it could check a stored body against: never stored.)
        if facts.contentLength == .invalid { return false }
        let headerBytes = response.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
        guard headerBytes <= configuration.maxHeaderBytes, response.headers.count <= configuration.maxHeaderFields else { return false }
        guard mayKeep(directives, for: request) else { return false }
        return hasExplicitLifetime(directives, expires: facts.expires) || directives.isPublic
            || directives.isPrivate || Self.heuristicallyCacheable.contains(response.status)
    }

    // MARK: Age and freshness

    /// The `Date` of `entry`, or its response time when `Date` is missing or invalid.
    package func dateValue(_ entry: CacheEntry) -> Date {
        entry.facts.date ?? entry.responseTime
    }

    /// The current age of `entry` in seconds (RFC 9111 §4.2.3).
    package func currentAge(_ entry: CacheEntry, now: Date) -> Double {
        let ageValue = entry.facts.age
        let apparentAge = max(0, entry.responseTime.timeIntervalSince(dateValue(entry)))
        let responseDelay = max(0, entry.responseTime.timeIntervalSince(entry.requestTime))
        let correctedAgeValue = Double(ageValue) + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now.timeIntervalSince(entry.responseTime))
        return correctedInitialAge + residentTime
    }

    /// The freshness lifetime of `entry` in seconds (RFC 9111 §4.2.1, §4.2.2): `max-age`,
    /// else `Expires − Date` (an invalid or repeated-and-conflicting `Expires` means 0; its names
    /// may be in any case),
    /// else the lifetime Recall assigned (``CacheEntry/assignedLifetime``), else the heuristic for cacheable statuses with `Last-Modified`, else 0.
    package func freshnessLifetime(_ entry: CacheEntry) -> Double {
        let directives = entry.cacheControl
        if isShared, let sMaxAge = directives.sMaxAge { return Double(sMaxAge) }
        if let maxAge = directives.maxAge { return Double(maxAge) }
        let expires = entry.facts.expires
        if !expires.isEmpty {
            // (Names and `GMT` in any case: `mon, 06 JAN … gmt` is the date it means.)
            guard Set(expires).count == 1, let date = HTTPDate.parse(expires[0], namesInAnyCase: true) else { return 0 }
            return date.timeIntervalSince(dateValue(entry))
        }
        if let assigned = entry.assignedLifetime { return assigned }
        guard Self.heuristicallyCacheable.contains(entry.status) || directives.isPublic,
            let modified = entry.facts.lastModifiedDate
        else { return 0 }
        let interval = dateValue(entry).timeIntervalSince(modified)
        guard interval > 0 else { return 0 }
        return min(interval * configuration.heuristicFraction, configuration.heuristicCap)
    }

    // MARK: Serving

    /// What a request may do with a stored entry.
    package enum Use: Sendable, Equatable {
        /// Serve the entry as fresh.
        case fresh
        /// Serve the entry although stale, for this reason.
        case stale(StaleReason)
        /// Serve the entry stale and refresh it in the background (`stale-while-revalidate`).
        case staleWhileRevalidate
        /// Ask the origin: conditionally when the entry has validators.
        case validate
        /// Ask the origin without a conditional request, ignoring the entry; the answer replaces
        /// it (`URLRequest.cachePolicy = .reloadIgnoringLocalCacheData`).
        case reload
    }

    /// How `request` may use `entry` at `now` (the entry already matched key and `Vary`).
    package func use(of entry: CacheEntry, for request: URLRequest, now: Date) -> Use {
        use(of: entry, cachePolicy: request.cachePolicy, directives: requestDirectives(request), now: now)
    }

    /// ``use(of:for:now:)`` for a request whose cache policy and directives are already read (the
    /// cache reads them once per lookup).
    func use(
        of entry: CacheEntry, cachePolicy: URLRequest.CachePolicy, directives requestDirectives: CacheDirectives,
        now: Date
    ) -> Use {
        let responseDirectives = entry.cacheControl
        let age = currentAge(entry, now: now)
        let lifetime = freshnessLifetime(entry)
        switch cachePolicy {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
            return age < lifetime ? .fresh : .stale(.cachePolicy)
        case .reloadRevalidatingCacheData:
            // A reload: an immutable response is not revalidated while fresh (RFC 8246).
            return responseDirectives.immutable && age < lifetime ? .fresh : .validate
        case .reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData:
            return .reload
        default:
            break
        }
        if requestDirectives.noCache || responseDirectives.noCache || !responseDirectives.noCacheFields.isEmpty {
            return .validate
        }
        var acceptable = age < lifetime
        // max-age=0 asks for validation; otherwise an age above the limit is refused.
        if let maxAge = requestDirectives.maxAge, maxAge == 0 || age > Double(maxAge) { acceptable = false }
        if let minFresh = requestDirectives.minFresh, lifetime - age < Double(minFresh) { acceptable = false }
        if acceptable { return .fresh }
        guard age >= lifetime else { return .validate }  // fresh, but the request wants fresher
        let staleness = age - lifetime
        if mustRevalidate(responseDirectives) { return .validate }
        if case .some(let limit) = requestDirectives.maxStale, limit.map({ staleness <= Double($0) }) ?? true {
            return .stale(.maxStale)
        }
        // The request's own limits are the client's (RFC 9111 §5.2.1): a max-stale it passed (a
        // max-stale it allows returned above), an age over its max-age, any min-fresh (a stale
        // response has none left) — no stale answer beyond them, even in the origin's window.
        let refused =
            requestDirectives.maxStale != nil || requestDirectives.minFresh != nil
            || requestDirectives.maxAge.map { $0 == 0 || age > Double($0) } == true
        if !refused, let window = responseDirectives.staleWhileRevalidate, staleness <= Double(window) {
            return .staleWhileRevalidate
        }
        return .validate
    }

    /// Whether `entry`, stored at `now`, would answer a request without asking the origin: fresh
    /// then, and without `no-cache`. A request waiting for another's miss waits for nothing else.
    func answersWhenStored(_ entry: CacheEntry, now: Date) -> Bool {
        let directives = entry.cacheControl
        guard !directives.noCache, directives.noCacheFields.isEmpty else { return false }
        return currentAge(entry, now: now) < freshnessLifetime(entry)
    }

    /// Whether a stale `entry` may be served because the origin failed (RFC 5861
    /// `stale-if-error`, from the response or the request), at `now`.
    package func allowsStaleIfError(_ entry: CacheEntry, for request: URLRequest, now: Date) -> Bool {
        let responseDirectives = entry.cacheControl
        guard !mustRevalidate(responseDirectives), !responseDirectives.noCache else { return false }
        let staleness = max(0, currentAge(entry, now: now) - freshnessLifetime(entry))
        let window = [responseDirectives.staleIfError, requestDirectives(request).staleIfError].compactMap { $0 }.max()
        guard let window else { return false }
        return staleness <= Double(window)
    }

    /// Whether a stale `entry` may be served to `request` because the origin cannot be reached
    /// at all (RFC 9111 §4.2.4), at `now`: allowed by ``CacheConfiguration/servesStaleWhenDisconnected``,
    /// not forbidden by `must-revalidate` or `no-cache` (response or request), within the
    /// request's `max-stale` and ``CacheConfiguration/maxDisconnectedStaleness``.
    package func allowsStaleWhenDisconnected(_ entry: CacheEntry, for request: URLRequest, now: Date) -> Bool {
        guard configuration.servesStaleWhenDisconnected else { return false }
        let responseDirectives = entry.cacheControl, requestDirectives = requestDirectives(request)
        guard !mustRevalidate(responseDirectives), !responseDirectives.noCache, responseDirectives.noCacheFields.isEmpty,
            !requestDirectives.noCache
        else { return false }
        let staleness = max(0, currentAge(entry, now: now) - freshnessLifetime(entry))
        if case .some(.some(let limit)) = requestDirectives.maxStale, staleness > Double(limit) { return false }
        return staleness <= configuration.maxDisconnectedStaleness
    }

    /// Whether `error` means the origin could not be reached at all (not a slow or failing
    /// origin): connection refused or reset, DNS failure, a circuit breaker refusing.
    package static func isDisconnection(_ error: any Error) -> Bool {
        if error is CircuitOpenError { return true }
        guard let kind = TransportError.classify(error)?.code else { return false }
        return kind == .cannotConnect || kind == .connectionLost || kind == .dnsFailure
    }

    /// Whether a `200` answer to a `HEAD` request describes the same representation as the
    /// stored `GET` response (RFC 9111 §4.3.5, "matching values for any received validator
    /// fields"): each validator the answer carries matches the stored one (`ETag` by weak
    /// comparison, `Last-Modified` exactly; one the stored response lacks does not match), and its
    /// `Content-Length` (if both have one) is the same. An answer without validators matches only
    /// a stored response without them (on its length): that is how such a response is freshened
    /// at all — while an answer that drops the validators its `GET` carried says nothing of them.
    /// A stored response of another status (a 404, where the `HEAD` now says 200) never matches.
    package func headResponse(_ response: RecallResponse, matches entry: CacheEntry) -> Bool {
        guard entry.status == response.status else { return false }
        let etag = response.headers["ETag"], modified = response.headers["Last-Modified"]
        if etag == nil, modified == nil, entry.etag != nil || entry.lastModified != nil { return false }
        if let etag {
            guard let stored = entry.etag, Self.weakTag(etag) == Self.weakTag(stored) else { return false }
        }
        if let modified, entry.lastModified != modified { return false }
        if let length = response.headers["Content-Length"], let stored = entry.headers["Content-Length"] { return length == stored }
        return true
    }

    /// The conditional request that revalidates `entry`: `If-None-Match` for an ETag,
    /// `If-Modified-Since` for a `Last-Modified`; `nil` when the entry has neither.
    package func conditionalRequest(_ request: URLRequest, for entry: CacheEntry) -> URLRequest? {
        guard entry.etag != nil || entry.lastModified != nil else { return nil }
        var conditional = request
        if let etag = entry.etag { conditional.setValue(Self.quotedEntityTag(etag), forHTTPHeaderField: "If-None-Match") }
        if let modified = entry.lastModified { conditional.setValue(modified, forHTTPHeaderField: "If-Modified-Since") }
        return conditional
    }

    /// Whether a 304 answers for `entry` (RFC 9111 §4.3.4): same entity tag (weak comparison)
    /// when the 304 carries one, else same `Last-Modified` when it carries one, else yes.
    package func notModified(_ response: RecallResponse, matches entry: CacheEntry) -> Bool {
        if let etag = response.headers["ETag"] {
            guard let stored = entry.etag else { return false }
            return Self.weakTag(etag) == Self.weakTag(stored)
        }
        if let modified = response.headers["Last-Modified"] {
            return entry.lastModified == modified
        }
        return true
    }

    /// `entry` updated with the header fields of a 304 (RFC 9111 §3.2), of a `200` to `HEAD` or of
    /// a `206` that confirms it: each field in the answer replaces the stored fields of that name,
    /// except `Content-Length` (it frames the stored body), those never stored
    /// (``storedHeaders(_:)``), and `Content-Range` when either is a `206` (there it says where
    /// bytes belong). `Content-Encoding` is updated like any field: the stored body is what the
    /// transport delivered, and a transport that decodes (`URLSessionTransport`) hands decoded
    /// bytes under the origin's label from the first answer on, so the label never described
    /// them; under a transport that delivers the bytes as sent, the origin's newest label is the
    /// one to believe (a 304 that changes it for the same validator is the origin's mistake).
    package func merge(_ entry: CacheEntry, with notModified: RecallResponse, requestTime: Date, responseTime: Date) -> CacheEntry {
        var updated = entry
        let excluded: Set<String> = entry.status == 206 || notModified.status == 206 ? ["content-length", "content-range"] : ["content-length"]
        var replaced = Set<String>()
        for field in storedHeaders(notModified.headers) {
            let name = field.name.lowercased()
            guard !excluded.contains(name) else { continue }
            if replaced.insert(name).inserted { updated.headers.remove(field.name) }
            updated.headers.add(field.name, field.value)
        }
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        return updated
    }

    /// The response served from `entry`: its status, fields with a current `Age`, and body
    /// (none for HEAD).
    package func response(from entry: CacheEntry, for request: URLRequest, now: Date, source: RecallResponse.Source) -> RecallResponse {
        response(from: entry, for: RequestFacts(request), now: now, source: source)
    }

    /// ``response(from:for:now:source:)`` for a request whose ``RequestFacts`` are read.
    func response(from entry: CacheEntry, for request: RequestFacts, now: Date, source: RecallResponse.Source) -> RecallResponse {
        RecallResponse(
            status: entry.status, headers: servedHeaders(entry, now: now),
            body: request.method == .head ? ResponseBody() : entry.responseBody, url: entry.url ?? request.url, source: source)
    }

    /// The fields of `entry` as served at `now`: with a current `Age`.
    private func servedHeaders(_ entry: CacheEntry, now: Date) -> HeaderFields {
        let age = String(Int(currentAge(entry, now: now).rounded(.down)))
        return entry.facts.hasAge ? entry.headers.replacing("Age", with: age) : entry.headers.appending("Age", age)
    }

    /// The `304` a cache answers a caller's conditional request with when `entry` has not
    /// changed (RFC 9111 §4.3.2): the stored fields with a current `Age` — those a `200` would
    /// carry, as RFC 9110 §15.4.5 asks — but the ones that frame a body; no body.
    func notModifiedResponse(from entry: CacheEntry, for request: RequestFacts, now: Date, source: RecallResponse.Source) -> RecallResponse {
        var headers = servedHeaders(entry, now: now)
        for name in ["Content-Length", "Content-Range", "Transfer-Encoding"] { headers.remove(name) }
        return RecallResponse(status: 304, headers: headers, body: ResponseBody(), url: entry.url ?? request.url, source: source)
    }

    /// Whether the caller's conditional `request` finds `entry` unchanged, as RFC 9111 §4.3.2 has a
    /// cache evaluate it: with `If-None-Match`, when `*` or one of its entity tags matches the
    /// entry's by weak comparison (RFC 9110 §13.1.2); else with an `If-Modified-Since` that is a
    /// valid date, when the entry's `Last-Modified` — else its `Date`, else when it was received —
    /// is not later (§13.1.3). `false` without either field.
    func isUnchanged(_ entry: CacheEntry, for request: URLRequest) -> Bool {
        if let tags = request.value(forHTTPHeaderField: "If-None-Match") {
            let listed = Self.entityTags(in: tags)
            if listed.contains("*") { return true }
            guard let stored = entry.etag else { return false }
            return listed.contains { Self.weakTag($0) == Self.weakTag(stored) }
        }
        guard let field = request.value(forHTTPHeaderField: "If-Modified-Since"), let since = HTTPDate.parse(field) else { return false }
        return (entry.facts.lastModifiedDate ?? entry.facts.date ?? entry.responseTime) <= since
    }

    /// The members of an `If-None-Match` value: `*` or entity tags, split at the commas outside
    /// their quotes.
    static func entityTags(in value: String) -> [String] {
        var tags: [String] = [], current = "", quoted = false
        for character in value {
            if character == "\"" { quoted.toggle() }
            if character == ",", !quoted {
                tags.append(current.trimmingOWS)
                current = ""
            } else {
                current.append(character)
            }
        }
        tags.append(current.trimmingOWS)
        return tags.filter { !$0.isEmpty }
    }

    /// `tag` as an entity-tag: an unquoted tag from a sloppy origin (`abc`, `W/abc`) is sent
    /// back quoted (`"abc"`, `W/"abc"`), as `If-None-Match` requires.
    static func quotedEntityTag(_ tag: String) -> String {
        let trimmed = tag.trimmingOWS
        let weak = trimmed.hasPrefix("W/")
        let opaque = weak ? String(trimmed.dropFirst(2)) : trimmed
        guard !(opaque.hasPrefix("\"") && opaque.hasSuffix("\"") && opaque.count >= 2) else { return trimmed }
        return (weak ? "W/" : "") + "\"" + opaque.replacingOccurrences(of: "\"", with: "") + "\""
    }

    /// The answer to a request for `range` of the full `200` response `full` (RFC 9110 §14):
    /// a `206` with `Content-Range` and the selected bytes, or a `416` with `Content-Range:
    /// bytes */length` when the range selects nothing.
    package func partialResponse(_ full: RecallResponse, range: ByteRange) -> RecallResponse {
        partialResponse(full, range: range, length: full.body.expectedLength ?? 0)
    }

    /// ``partialResponse(_:range:)`` for a representation of `length` bytes (`full` may hold
    /// only its header fields when the range selects nothing).
    func partialResponse(_ full: RecallResponse, range: ByteRange, length: Int) -> RecallResponse {
        var headers = full.headers
        // RFC 9110 §14.1.1: a suffix range of an empty representation is satisfiable, yet selects
        // no byte to put in a 206 — the whole (empty) representation answers, as servers do.
        if case .suffix(let count) = range, count > 0, length == 0, full.body.expectedLength == 0 { return full }
        guard let bounds = range.bounds(length: length), full.body.expectedLength == length, let body = full.body.slice(bounds) else {
            headers["Content-Range"] = "bytes */\(length)"
            if headers.contains("Content-Length") { headers["Content-Length"] = "0" }
            return RecallResponse(status: 416, headers: headers, body: Data(), url: full.url, source: full.source)
        }
        headers["Content-Range"] = "bytes \(bounds.lowerBound)-\(bounds.upperBound)/\(length)"
        if headers.contains("Content-Length") { headers["Content-Length"] = String(bounds.count) }
        // (Whole bytes are copied indexed from 0; a body in a store is read from there by seeking.)
        return RecallResponse(status: 206, headers: headers, body: body, url: full.url, source: full.source)
    }

    /// The `206` answering `bounds` from the stored `pieces` of `entry` (which hold every byte
    /// of it), with a current `Age`.
    func response(
        from entry: CacheEntry, pieces: PartialContent, bounds: ClosedRange<Int>, for request: URLRequest,
        now: Date, source: RecallResponse.Source
    ) -> RecallResponse {
        var headers = entry.headers
        headers["Content-Range"] = "bytes \(bounds.lowerBound)-\(bounds.upperBound)/\(pieces.length)"
        headers["Content-Length"] = String(bounds.count)
        headers["Age"] = String(Int(currentAge(entry, now: now).rounded(.down)))
        return RecallResponse(status: 206, headers: headers, body: pieces.bytes(in: bounds) ?? Data(), url: request.url, source: source)
    }

    private static func weakTag(_ tag: String) -> String {
        let quoted = quotedEntityTag(tag)
        return quoted.hasPrefix("W/") ? String(quoted.dropFirst(2)) : quoted
    }
}
