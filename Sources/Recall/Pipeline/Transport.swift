import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Anything that can answer a `URLRequest`: URLSession, an in-process `ServiceRouter` (RecallServices),
/// a test double, or another ``Pipeline``.
///
/// A transport reports every HTTP status, including 4xx and 5xx, as a ``RecallResponse``; it throws
/// only when no response was had (see ``TransportError``).
public protocol Transport: Sendable {
    /// Sends one request and returns the origin's answer.
    func send(_ request: URLRequest) async throws -> RecallResponse

    /// Whether ``send(_:)`` returns within milliseconds (with any error) once its task is
    /// cancelled. A ``Pipeline`` runs the attempts of such a transport in the caller's task (and
    /// races a per-attempt timeout as a child task); any other transport's attempts run in a task
    /// of their own, so that time limits and cancellation answer the caller at the limit even if
    /// the transport never listens. `false` by default: claim it only when it is true.
    var respondsToCancellation: Bool { get }

    /// Whether the transport may be used after the call that sent through it returned — by a
    /// background refresh (`stale-while-revalidate`). `true` by default. A transport that is
    /// valid only during one call (a middleware's `next`) says `false`: the pipeline then
    /// refreshes before answering, and answers with the stale response if the refresh fails or
    /// gets a server error (5xx).
    var allowsBackgroundRequests: Bool { get }
}

extension Transport {
    /// Not claimed: the pipeline does not rely on the transport to stop when cancelled.
    public var respondsToCancellation: Bool { false }

    /// Usable at any time.
    public var allowsBackgroundRequests: Bool { true }

    /// Sends `request` and returns its body and a Foundation response, the way
    /// `URLSession.data(for:)` does, so URLSession code switches with one line. The body is
    /// collected whole, of any length, as `URLSession.data(for:)` does: read
    /// ``send(_:)``'s ``RecallResponse/body`` to stream it instead.
    public func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let response = try await send(request)
        return (try await response.body.collect(upTo: Int.max), response.httpURLResponse(fallbackURL: request.url))
    }
}
