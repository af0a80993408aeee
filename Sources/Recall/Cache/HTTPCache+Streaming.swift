import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Responses whose bodies stream: decided on their heads, their bodies kept as they pass.
extension HTTPCache {
    /// `response` with a streamed body, decided on its head: a store keeps a copy of the body as
    /// it streams to the caller (``BodyTee``) and lands once the body has arrived whole — before
    /// the caller sees the body end — then wakes the key's coalesced misses; any other decision is carried out at once, and an answer other
    /// than the response drops its body (the download stops). A piece of a range, which the rules
    /// read, is collected first when its declared length fits the storage's entry limit.
    func streamed(_ response: RecallResponse, for request: URLRequest, sent: URLRequest, lifetime: Double?,
                          state: CacheRequestState, context: RecallContext) async throws -> RecallResponse {
        let limit = storage.entryLimit
        if response.status == 206 || request.value(forHTTPHeaderField: "Range") != nil,
           let length = response.body.expectedLength, length <= limit {
            let whole: RecallResponse
            do {
                whole = try await response.collected(upTo: limit)
            } catch {
                leads.abandon(state.lead) // (one waiting request fetches in its place)
                throw error
            }
            defer { leads.finish(state.lead) }
            let (after, exchange, target) = decide(whole, for: request, sent: sent, lifetime: lifetime, at: now(), state: state, context: context)
            return try await act(on: after, whole, for: request, sent: sent, exchange: exchange, target: target, state: state, context: context)
        }
        let head = RecallResponse(status: response.status, headers: response.headers, url: response.url, source: response.source)
        let (after, exchange, target) = decide(head, for: request, sent: sent, lifetime: lifetime, at: now(), state: state, context: context)
        let entry: CacheEntry
        switch after {
        case .store(let stored), .storeAndAnswer(let stored, _): entry = stored // (the answer: the response as it streams)
        default:
            defer { leads.finish(state.lead) }
            let answer = try await act(on: after, response, for: request, sent: sent, exchange: exchange, target: target, state: state, context: context)
            if answer.body != response.body { response.body.discard() }
            return answer
        }
        // Larger than memory keeps, by its Content-Length, to a storage that stores in pieces: the
        // body goes to it as it passes, and is committed once it has arrived whole. (Its record
        // holds this one variant.)
        if let length = response.body.expectedLength, length > limit, let target,
           let writing = await storage.beginStoring(CacheRecord(key: target.key, variants: [entry]),
                                                    expires: strategy.expiry(of: CacheRecord(key: target.key, variants: [entry]))) {
            var answer = response
            answer.body = BodyTee.body(passing: response.body, into: writing, url: response.url ?? request.url) { [self] kept in
                if case .complete = kept,
                   await writer.commit(writing, at: target, since: state.since, context: state.isRefresh ? nil : context) {
                    locator.remember(target, for: exchange.answered.url)
                    return leads.finish(state.lead)
                }
                if case .complete = kept {} else { notStored(kept.isTooLarge ? .tooLarge : .incomplete, state: state, context: context) }
                kept.isTooLarge ? leads.finish(state.lead) : leads.abandon(state.lead)
            }
            return answer
        }
        if let length = response.body.expectedLength, length > limit {
            // Too large to keep, as its head says: passed on untouched; the waiting misses fetch at once.
            notStored(.tooLarge, state: state, context: context)
            leads.finish(state.lead)
            return response
        }
        var answer = response
        answer.body = BodyTee.body(passing: response.body, keepingUpTo: limit, url: response.url ?? request.url) { [self] kept in
            guard case .complete(let body) = kept else {
                notStored(kept.isTooLarge ? .tooLarge : .incomplete, state: state, context: context)
                // (Too large: the waiting misses fetch at once, as it will not be stored for them either.)
                return kept.isTooLarge ? leads.finish(state.lead) : leads.abandon(state.lead)
            }
            var whole = entry
            whole.body = body
            _ = try? await act(on: .store(whole), head, for: request, sent: sent, exchange: exchange, target: target, state: state, context: context)
            leads.finish(state.lead)
        }
        return answer
    }

    /// Counts a response that was to be stored and was not (a background refresh counts nothing).
    private func notStored(_ reason: NotStoredReason, state: CacheRequestState, context: RecallContext) {
        guard !state.isRefresh else { return }
        counts.count(.notStored(reason), context) { $0.notStored[reason, default: 0] += 1 }
    }
}
