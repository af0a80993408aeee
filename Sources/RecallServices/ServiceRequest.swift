import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request as an in-process service sees it: the identifier it was addressed to and the
/// rest of the path, with the original `URLRequest` at hand.
public struct ServiceRequest: Sendable {
    /// The full request as sent.
    public var request: URLRequest
    /// The identifier the service is registered under (the first path segment).
    public var identifier: String
    /// The path after the identifier, always starting with `/` (`/` when empty).
    public var path: String

    /// Creates a service request.
    public init(request: URLRequest, identifier: String, path: String) {
        self.request = request
        self.identifier = identifier
        self.path = path
    }

    /// The HTTP method, `GET` when unset.
    public var method: String { request.httpMethod ?? "GET" }

    /// The request's header fields.
    public var headers: HeaderFields { request.headers }

    /// The request body (empty when none).
    public var body: Data { request.httpBody ?? Data() }

    /// The decoded query items, in order.
    public var queryItems: [URLQueryItem] {
        request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false)?.queryItems } ?? []
    }

    /// The value of the first query item named `name`.
    public func query(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }
}
