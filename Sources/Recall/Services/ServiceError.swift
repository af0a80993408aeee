import Foundation

/// Errors of the typed service layer (``HttpService``, endpoints).
public enum ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The endpoint requires authorization and the service has none; nothing was sent.
    case authorizationRequired(endpoint: String)
    /// `apiUrl` and the path do not make a valid URL.
    case invalidURL(String)
    /// The service answered with a status outside 200–299.
    case badStatus(Int, body: Data)
    /// The body could not be encoded or decoded.
    case coding(String)

    /// The status code of a ``badStatus(_:body:)``.
    public var statusCode: Int? {
        if case .badStatus(let status, _) = self { return status }
        return nil
    }

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .authorizationRequired(let endpoint):
            "\(endpoint) requires authorization, but the service has none: set `authorization` on the service"
        case .invalidURL(let text):
            "'\(text)' is not a valid URL: give apiUrl as a host and optional path, such as 'api.example.com/v1'"
        case .badStatus(let status, let body):
            "the service answered \(status)" + (body.isEmpty ? "" : ": \(String(decoding: body.prefix(500), as: UTF8.self))")
        case .coding(let why):
            "could not encode or decode the body: \(why)"
        }
    }
}
