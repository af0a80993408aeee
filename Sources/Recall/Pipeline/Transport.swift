import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Anything that can answer a `URLRequest`: URLSession, an in-process ``ServiceRouter``,
/// a test double, or another ``Pipeline``.
///
/// A transport reports every HTTP status, including 4xx and 5xx, as a ``Response``; it throws
/// only when no response was had (see ``TransportError``).
public protocol Transport: Sendable {
    /// Sends one request and returns the origin's answer.
    func send(_ request: URLRequest) async throws -> Response
}

extension Transport {
    /// Sends `request` and returns its body and a Foundation response, the way
    /// `URLSession.data(for:)` does, so URLSession code switches with one line.
    public func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let response = try await send(request)
        return (response.body, response.httpURLResponse(fallbackURL: request.url))
    }
}
