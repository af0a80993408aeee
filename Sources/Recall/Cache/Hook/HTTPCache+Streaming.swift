import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Responses whose bodies stream: decided on their heads, their bodies kept as they pass.
extension HTTPCache {
    /// `response` with a streamed body, decided on its head. A store keeps the body as it streams
    /// to the caller (``BodyTee``) — in memory up to the storage's entry limit, or, declared
    /// larger (or, of unknown length, growing past it), into a storage that stores in pieces — and
    /// lands once the body has arrived whole, before the caller sees it end; then the key's
    /// coalesced misses wake. A body declared larger, written into a record that can be read back
    /// (a ``DiskStorage``'s), reaches the caller from that record (``BodyTee/followed(passing:into:readingBack:url:ended:)``):
    /// the download and the store go at the disk's pace, not the caller's. Any other decision is
    /// carried out at once, and an answer other than the response drops its body (the download
    /// stops). A piece of a range, which the rules read, is collected first when its declared
    /// length fits the entry limit.
    func streamed(
        _ response: RecallResponse, for request: URLRequest, sent: URLRequest, lifetime: Double?,
        state: CacheRequestState, context: RecallContext, inner: InnerStages?
    ) async throws -> RecallResponse {
        let limit = storage.entryLimit
        let length = response.body.expectedLength
        // (A 206 without Content-Length is as long as its Content-Range says.)
        let pieceLength = length ?? (response.status == 206 ? response.headers["Content-Range"].flatMap(PartialContent.contentRange)?.bounds.count : nil)
        if response.status == 206 || request.value(forHTTPHeaderField: "Range") != nil, let pieceLength, pieceLength <= limit {
            let whole: RecallResponse
            do {
                whole = try await response.collected(upTo: limit)
            } catch {
                leads.abandon(state.lead)  // (one waiting request fetches in its place)
                throw error
            }
            defer { leads.finish(state.lead) }
            let (after, exchange, target) = decide(whole, for: request, sent: sent, lifetime: lifetime, at: now(), state: state, context: context)
            return try await act(on: after, whole, for: request, sent: sent, exchange: exchange, target: target, state: state, context: context, inner: inner)
        }
        let head = RecallResponse(status: response.status, headers: response.headers, url: response.url, source: response.source)
        let (after, exchange, decided) = decide(head, for: request, sent: sent, lifetime: lifetime, at: now(), state: state, context: context)
        // The entry to keep, where its record goes, and the removals count that may still refuse it.
        let entry: CacheEntry, target: CacheLocator.Location?, since: InvalidationEpochs.Snapshot, isPostAnswer: Bool
        switch after {
        case .store(let stored) where state.method != .head, .storeAndAnswer(let stored, _) where state.method != .head:
            (entry, target, since, isPostAnswer) = (stored, decided, state.since, false)  // (the answer: the response as it streams)
        case .invalidate(let urls, .some(let post)):
            // The answer to a POST stored for later GETs (RFC 9110 §9.3.3): the invalidation now,
            // the answer kept as its body streams, like a GET's — stored once it arrived whole,
            // unless another removal of its key came after its own (its epochs read after it).
            _ = try await act(
                on: .invalidate(urls, store: nil), response, for: request, sent: sent, exchange: exchange, target: decided, state: state,
                context: context, inner: inner)
            guard let location = locator.location(of: CacheStrategy.asGet(sent)) else {
                leads.finish(state.lead)
                return response
            }
            (entry, target, since, isPostAnswer) = (post, location, await writer.since(location), true)
        default:
            // (An answer to HEAD has no body: a stored response it updates keeps its own.)
            defer { leads.finish(state.lead) }
            let answer = try await act(
                on: after, response, for: request, sent: sent, exchange: exchange, target: decided, state: state, context: context, inner: inner)
            if answer.body != response.body { response.body.discard() }
            return answer
        }
        // Kept in memory up to the entry limit; a body declared larger — or, of unknown length,
        // growing past it — goes into a record written in pieces when the storage stores in pieces
        // (the record then holds this one variant), committed once the body has arrived whole.
        let record = CacheRecord(key: target?.key ?? "", variants: [entry])
        let expires = strategy.records.expiry(of: record)
        var writing: (any RecordWriting)?
        // (The followers of this miss wait for its store — or, once its caller falls behind reading
        // the body, for one of them to lead in its place: never at one caller's pace.)
        let lead = LeadEnding(state.lead, of: leads)
        // A body of unknown length whose record the waiting misses could not answer from without
        // the origin (`no-cache`, or stale as it lands) may never end (a stream of events), and
        // waiting for it gains them nothing: they go on now, each asking the origin itself. (One of
        // known length they wait for, to revalidate what it stored; a background refresh's lead
        // ends with its store: waiting for refreshes waits for that.)
        if case .flight = state.lead, length == nil, !strategy.rules.answersWhenStored(entry, now: now()) { lead.finish() }
        // (A storage that counts removals checks them in a whole store: no record in pieces.)
        let inPieces = target != nil && since.storage == nil
        if let length, length > limit {
            guard inPieces, let started = await storage.beginStoring(record, expires: expires) else {
                gaveUp(.tooLarge, lead: lead, state: state, context: context)
                return response
            }
            writing = started
        }
        let storage = self.storage
        let spill: (@Sendable () async -> (any RecordWriting)?)? =
            !inPieces
            ? nil
            : { @Sendable in
                await storage.beginStoring(record, expires: expires)
            }
        let ended: @Sendable (BodyTee.Kept) async -> Void = { [self] kept in
            switch kept {
            case .complete(let body):
                var whole = entry
                whole.body = body
                if let target {
                    // (A POST's answer, read nothing for: its record is read afresh.)
                    let prior = isPostAnswer ? .unread : state.prior(for: target.key)
                    await writer.store(whole, at: target, prior: prior, since: since, context: state.isRefresh ? nil : context)
                }
            case .written(let writing):
                guard let target, await writer.commit(writing, at: target, since: since, context: state.isRefresh ? nil : context) else {
                    return lead.abandon()
                }
            case .tooLarge, .incomplete:
                return gaveUp(kept, lead: lead, state: state, context: context)
            }
            lead.finish()
        }
        var answer = response
        let url = response.url ?? request.url
        if let writing, let bytes = (writing as? any RecordReadingBack)?.bodyBytes() {
            // (Read back from the record: the caller's pace holds up neither the download nor the store.)
            answer.body = BodyTee.followed(passing: response.body, into: writing, readingBack: bytes, url: url, ended: ended)
        } else {
            answer.body = BodyTee.body(
                passing: response.body, keepingUpTo: limit, into: writing, spill: spill, url: url, behind: { lead.abandon() }, ended: ended)
        }
        return answer
    }

    /// A body the cache meant to keep and did not (`kept`: too large, or incomplete): counted, and
    /// the waiting misses go on — all at once for one too large (it will not be kept for them
    /// either), one of them for an incomplete one.
    private func gaveUp(_ kept: BodyTee.Kept, lead: LeadEnding, state: CacheRequestState, context: RecallContext) {
        notStored(kept.isTooLarge ? .tooLarge : .incomplete, state: state, context: context)
        kept.isTooLarge ? lead.finish() : lead.abandon()
    }

    /// Counts a response that was to be stored and was not (a background refresh counts nothing).
    private func notStored(_ reason: NotStoredReason, state: CacheRequestState, context: RecallContext) {
        guard !state.isRefresh else { return }
        counts.count(.notStored(reason), context) { $0.notStored[reason, default: 0] += 1 }
    }
}
