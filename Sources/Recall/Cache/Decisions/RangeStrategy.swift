import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The cache's decisions on byte ranges and pieces (RFC 9110 §14, RFC 9111 §3.3–3.4), as pure
/// functions of values, for ``CacheStrategy``: a range answered from a stored full response or
/// from stored pieces, the bytes the pieces lack asked of the origin with `If-Range`, a `206`
/// combined with the pieces it belongs to (a full response once every byte is held), and a plain
/// `GET` completed from pieces held under a strong entity tag.
struct RangeStrategy: Sendable {
    /// The RFC 9111 rules the decisions are made of.
    let rules: CacheRules
    /// Which stored pieces a request reads, and the entries answers store.
    let records: CacheRecordRules
    /// The longest representation a plain `GET` completes from stored pieces (the storage's
    /// ``CacheStorage/entryLimit``): the cache collects the answer and stores the whole as one
    /// record, so a longer one goes to the origin as it is, its body streaming to the caller.
    let completionLimit: Int

    // MARK: Before the network

    /// A plain `GET` of a representation whose pieces only are stored, under a strong entity tag:
    /// sent for the bytes they lack (one span) with `If-Range` naming the tag, so that a `206`
    /// completes them (RFC 9111 §3.4). `nil` — the request goes as it is — without such pieces,
    /// for a `HEAD`, when the caller ignores what is stored (`.reloadIgnoringLocalCacheData`) or
    /// forbids storing (`no-store`), or for a representation longer than ``completionLimit``.
    func completion(
        _ request: URLRequest, _ facts: RequestFacts, _ directives: CacheDirectives, record: CacheRecord,
        partition: String, inScope: Set<String>
    ) -> CacheStrategy.Before? {
        guard facts.method == .get, facts.cachePolicy != .reloadIgnoringLocalCacheData,
            facts.cachePolicy != .reloadIgnoringLocalAndRemoteCacheData,
            !directives.noStore,  // (its answer could not be combined)
            let entry = records.pieces(in: record, for: request, partition: partition, inScope: inScope),
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
    ///
    /// `whole` is what the plain request (without its range) does with `record`
    /// (``CacheStrategy/before(_:_:record:partition:inScope:now:)``).
    func before(
        _ request: URLRequest, _ facts: RequestFacts, range: ByteRange, record: CacheRecord?, partition: String,
        inScope: Set<String>, now: Date, whole: CacheStrategy.Before
    ) -> CacheStrategy.Before {
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
        if let record, let entry = records.pieces(in: record, for: request, partition: partition, inScope: inScope),
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
            if onlyIfCached { return .gatewayTimeout(CacheStrategy.onlyIfCachedMiss(request)) }
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
            return onlyIfCached ? .gatewayTimeout(CacheStrategy.onlyIfCachedMiss(request)) : .send(request, .ranging(range, stored: nil))
        }
    }

    // MARK: After the network

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
    func afterRange(_ response: RecallResponse, range: ByteRange, stored: CacheEntry?, exchange x: CacheStrategy.Exchange) -> CacheStrategy.After {
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
            guard rules.isStorable(response, facts: facts, for: Self.asWhole(x.answered)), records.mayShare(facts, x) else {
                return stored.map { .discard($0) } ?? .pass
            }
            let full = records.entry(from: response, facts: facts, for: x.answered, partition: x.partition, exchange: x)
            return .storeAndAnswer(full, rules.partialResponse(response, range: range))
        case 206:
            guard let piece = rules.storablePiece(response, facts: facts, for: x.answered, now: x.now), records.mayShare(facts, x) else {
                // Not storable: the answer serves the caller only if it answers the caller's range.
                return askedAsIs ? .pass : .refetch(callers, removing: false)
            }
            if let stored, stored.status == 200, CacheRules.strongMatch(stored.etag, facts.etag),
                (stored.storedBody?.count ?? stored.body.count) == piece.length
            {
                let merged = rules.merge(stored, with: response, requestTime: x.requestTime, responseTime: x.now)
                return records.kept(merged, exchange: x).map { .store($0) } ?? .discard(stored)
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
    func afterCompletion(_ response: RecallResponse, pieces stored: CacheEntry, exchange x: CacheStrategy.Exchange) -> CacheStrategy.After {
        let whole = Self.asWhole(x.request)
        let facts = CacheEntry.Facts(response.headers)
        guard !x.redirected, response.status == 206, CacheRules.strongMatch(stored.etag, facts.etag),
            let piece = rules.storablePiece(response, facts: facts, for: x.answered, now: x.now), records.mayShare(facts, x),
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
        with stored: CacheEntry?, exchange x: CacheStrategy.Exchange
    ) -> (entry: CacheEntry, pieces: PartialContent)? {
        var template = records.entry(from: response, facts: facts, for: x.answered, partition: x.partition, exchange: x)
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
}
