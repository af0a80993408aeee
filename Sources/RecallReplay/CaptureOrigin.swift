import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The origin of a replay: answers each request with the response the capture recorded for the
/// entry being replayed, and with a `304` when the cache's validators match it.
///
/// A capture's `304` (the capturing client revalidated) carries no body; the origin answers a
/// request without validators with the last full response seen for that URL, updated with the
/// 304's fields.
///
/// Bodies are carried as their sizes, never made: a response has an empty body and its size in
/// the ``sizeField`` field, which the cache stores and serves with the rest of the fields. So a
/// capture's claimed sizes cost no memory, whatever they are.
final class CaptureOrigin: Transport, Sendable {
    /// The field that carries a response body's size in place of the body.
    static let sizeField = "X-Recall-Replay-Body-Size"

    /// The body size `response` carries (none for an answer to HEAD).
    static func bodySize(of response: RecallResponse, method: String) -> Int {
        method == "HEAD" ? 0 : response.headers[sizeField].flatMap { Int($0) } ?? response.body.expectedLength ?? 0
    }

    private struct Representation {
        var headers: HeaderFields
        var size: Int
    }

    private struct State {
        var entry: HAREntry?
        var known: [String: Representation] = [:]
        var requests = 0
        var bodyBytes = 0
    }

    private let state = Locked(State())

    /// The URLs whose last full response must be remembered: those with an entry that needs it
    /// (a `304`, or a response of unknown size). Others are not kept, so the origin's memory
    /// grows with those URLs only.
    private let remembered: Set<String>

    /// An origin for `entries` (the capture being replayed).
    init(for entries: [HAREntry]) {
        remembered = Set(entries.lazy.filter { $0.status == 304 || $0.bodySize == nil }.map(\.url))
    }

    /// Requests are answered from the entry of the moment, so no background refresh may run
    /// after the request that started it.
    var allowsBackgroundRequests: Bool { false }
    var respondsToCancellation: Bool { true }

    /// Fields that describe the transfer, not the representation: they would contradict the
    /// synthesized body.
    private static let transferFields = ["Content-Length", "Transfer-Encoding", "Content-Encoding", "Connection", "Keep-Alive", sizeField]

    /// Makes `entry` the one requests are answered from.
    func answer(with entry: HAREntry) {
        state.withLock { $0.entry = entry }
    }

    /// Requests received and body bytes sent so far.
    var counts: (requests: Int, bodyBytes: Int) {
        state.withLock { ($0.requests, $0.bodyBytes) }
    }

    func send(_ request: URLRequest) async throws -> RecallResponse {
        try state.withLock { state in
            guard let entry = state.entry else { throw URLError(.resourceUnavailable) }
            state.requests += 1
            var headers = HeaderFields(entry.responseHeaders.map { ($0.name, $0.value) })
            for name in Self.transferFields { headers.remove(name) }
            let url = entry.url
            var representation: Representation
            if entry.status == 304, let known = state.known[url] {
                representation = known
                for field in headers { representation.headers.replace(field.name, with: field.value) }
            } else {
                representation = Representation(headers: headers, size: entry.bodySize ?? state.known[url]?.size ?? 0)
            }
            if remembered.contains(url), entry.status != 304 || state.known[url] != nil { state.known[url] = representation }
            let status = entry.status == 304 ? 200 : entry.status
            var fields = representation.headers
            fields.replace(Self.sizeField, with: String(representation.size))
            if status == 200, Self.matches(request, representation.headers) {
                return RecallResponse(status: 304, headers: fields, url: request.url)
            }
            if request.httpMethod != "HEAD" { state.bodyBytes += representation.size }
            return RecallResponse(status: status, headers: fields, url: request.url)
        }
    }

    /// Whether the request's validators match the representation (entity tags compared weakly;
    /// dates compared as the cache sends them back, verbatim).
    private static func matches(_ request: URLRequest, _ headers: HeaderFields) -> Bool {
        if let tags = request.value(forHTTPHeaderField: "If-None-Match") {
            guard let etag = headers["ETag"] else { return false }
            let current = weak(etag)
            return tags.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "*" || weak(String($0)) == current }
        }
        if let since = request.value(forHTTPHeaderField: "If-Modified-Since"), let modified = headers["Last-Modified"] {
            return since.trimmingCharacters(in: .whitespaces) == modified.trimmingCharacters(in: .whitespaces)
        }
        return false
    }

    private static func weak(_ tag: String) -> String {
        let trimmed = tag.trimmingCharacters(in: .whitespaces)
        return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
    }
}
