import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the cache's records hold and how they are made, as pure functions of values (like
/// ``CacheStrategy``, whose decisions it serves, and the ``CacheWriter``, which composes the records
/// it writes with it):
/// - which stored response serves a request — its partition, its `Vary` fields, a language it
///   prefers (``variant(in:for:partition:inScope:)``), or the pieces of a range
///   (``pieces(in:for:partition:inScope:)``);
/// - what an answer stores — the entry made from it, the lifetime it is given, whether the
///   cache may keep it for whoever it serves (``entry(from:facts:for:partition:exchange:)``,
///   ``mayShare(_:_:)``, a `POST`'s answer stored for a later `GET`: ``postEntry(_:exchange:)``);
/// - what a store writes — what it keeps of the record before (other partitions, other `Vary`
///   variants) and the expiry hint a storage gets with it — in one call
///   (``write(storing:key:found:expiring:)``, ``write(storing:key:over:expiring:)``).
struct CacheRecordRules: Sendable {
    /// The RFC 9111 rules the entries are read and made with.
    let rules: CacheRules
    /// Partitions and protects credential values (keyed hashes).
    let partitioner: CachePartitioner
    /// The settings (the rules' own).
    var configuration: CacheConfiguration { rules.configuration }

    init(rules: CacheRules, partitioner: CachePartitioner) {
        self.rules = rules
        self.partitioner = partitioner
    }

    // MARK: The stored response of a request

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

    // MARK: What an answer stores

    /// Whether a response with `facts` may be stored for the exchange `x` as far as who may see
    /// it goes: always, unless the request may carry credentials the cache does not see
    /// (``HTTPCache/credentialsMayBeAddedBelow``); then only where RFC 9111 §3.5 lets a shared
    /// cache store the answer to an authenticated request (`public`, `must-revalidate`), as the
    /// cache cannot tell its users apart.
    /// A response that varies on a credential field is never shared (the cache would match its
    /// variant on the fields it sees, without the credential), nor one with `s-maxage` or
    /// `proxy-revalidate`, whose shared-cache meaning a private cache does not apply (a shared
    /// one does: ``CacheAudience/shared``, where `s-maxage` allows it too).
    func mayShare(_ facts: CacheEntry.Facts, _ x: CacheStrategy.Exchange) -> Bool {
        guard CachePartitioner.hasUnseenCredentials(x.inScope) else { return true }
        let directives = facts.cacheControl
        guard !directives.isPrivate, rules.isShared || !(directives.contains("s-maxage") || directives.proxyRevalidate),
            !facts.varyNames.contains(where: { partitioner.isCredential($0, inScope: x.inScope) })
        else { return false }
        return rules.servesOthers(directives)
    }

    /// `merged` — a stored response updated by an answer that confirmed it (a 304, a `HEAD`'s 200,
    /// a 206 of the same representation) — as it may be stored for the request that actually
    /// went out: under that request's partition and `Vary` values (a credential added on the way
    /// out makes it that partition's, never the stored one's; `revary`: recomputed even within
    /// one partition), or `nil` when it may not be kept: its new directives forbid it, or it
    /// would serve users it may not (``mayShare(_:_:)``).
    func kept(_ merged: CacheEntry, exchange x: CacheStrategy.Exchange, revary: Bool = false) -> CacheEntry? {
        var kept = merged
        if kept.partition != x.partition || revary {
            kept.partition = x.partition
            kept.varyValues = varyValues(for: kept.facts.varyNames, in: x.answered, inScope: x.inScope)
        }
        guard rules.mayKeep(kept.cacheControl, for: x.answered), mayShare(kept.facts, x) else { return nil }
        return kept
    }

    /// The entry stored for `response` to `request` (whose header `facts` are parsed).
    func entry(
        from response: RecallResponse, facts: CacheEntry.Facts, for request: URLRequest, partition: String,
        exchange x: CacheStrategy.Exchange
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
    private func assignedLifetime(_ facts: CacheEntry.Facts, status: Int, url: URL?, exchange x: CacheStrategy.Exchange) -> Double? {
        guard facts.cacheControl.maxAge == nil, facts.expires.isEmpty,
            CacheRules.heuristicallyCacheable.contains(status)
        else { return nil }
        return (x.requestLifetime ?? configuration.lifetimes.lifetime(for: url)).map(\.finiteOrZero)
    }

    /// RFC 9110 §9.3.3: a `200`/`203` answer to `POST` with explicit freshness and a
    /// `Content-Location` naming the request's own URI is a representation of that URI; the
    /// entry that answers a later `GET` of it, or `nil`.
    func postEntry(_ response: RecallResponse, exchange x: CacheStrategy.Exchange) -> CacheEntry? {
        guard [200, 203].contains(response.status), let location = response.headers["Content-Location"],
            let url = x.sent.url, let target = URL(string: location, relativeTo: url)?.absoluteURL,
            let here = configuration.keyPolicy.canonicalURL(text: url.absoluteString),
            configuration.keyPolicy.canonicalURL(text: target.absoluteString) == here
        else { return nil }
        let asGet = CacheStrategy.asGet(x.sent)
        let facts = CacheEntry.Facts(response.headers)
        guard rules.hasExplicitLifetime(facts.cacheControl, expires: facts.expires),
            rules.isStorable(response, facts: facts, for: asGet), mayShare(facts, x)
        else { return nil }
        let partition = partitioner.partition(for: asGet, userinfo: CachePartitioner.hasUserinfo(url.absoluteString), inScope: x.inScope)
        return entry(from: response, facts: facts, for: asGet, partition: partition, exchange: x)
    }

    // MARK: Records

    /// What a store writes: the record, and the expiry hint its storage gets with it
    /// (``expiry(of:)``; `nil` when the storage takes none, or the record has no end).
    struct Write: Sendable {
        var record: CacheRecord
        var expires: Date?
    }

    /// The write that stores `entry` under `key` over `found` — the record as the request's
    /// lookup found it (`nil`: nothing) — when it keeps none of `found`'s responses: then the
    /// writer need not read the record again. `nil` when it keeps some: read the record afresh
    /// and compose with ``write(storing:key:over:expiring:)``. `expiring`: whether the storage
    /// takes the hint (a memory store does not: none is worked out).
    func write(storing entry: CacheEntry, key: String, found: CacheRecord?, expiring: Bool) -> Write? {
        guard found?.variants.allSatisfy({ !keeps($0, storing: entry) }) ?? true else { return nil }
        return write(CacheRecord(key: key, variants: [entry]), expiring: expiring)
    }

    /// The write that stores `entry` under `key` over `existing`, read afresh: `entry` first, then
    /// the responses of `existing` it keeps (``keeps(_:storing:)``), at most
    /// ``CacheConfiguration/maxVariants`` in all.
    func write(storing entry: CacheEntry, key: String, over existing: CacheRecord?, expiring: Bool) -> Write {
        let kept = existing?.variants.filter { keeps($0, storing: entry) } ?? []
        return write(CacheRecord(key: key, variants: Array(([entry] + kept).prefix(rules.configuration.maxVariants))), expiring: expiring)
    }

    /// The write of `record` as it is (what is left of a record after a response was discarded).
    func write(_ record: CacheRecord, expiring: Bool) -> Write {
        Write(record: record, expires: expiring ? expiry(of: record) : nil)
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
            if rules.configuration.servesStaleWhenDisconnected, !rules.mustRevalidate(directives), !directives.noCache {
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
}
