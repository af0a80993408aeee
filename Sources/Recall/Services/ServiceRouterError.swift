import Foundation

/// Errors from registering with or sending through a ``ServiceRouter``.
public enum ServiceRouterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another service is already registered under this identifier; unregister it first.
    case alreadyRegistered(String)
    /// Identifiers must be non-empty and contain no `/`.
    case invalidIdentifier(String)
    /// The request's URL is not addressed to the router's host.
    case wrongHost(URL?, expected: String)

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .alreadyRegistered(let id):
            "a service is already registered as '\(id)'; unregister it first"
        case .invalidIdentifier(let id):
            "'\(id)' is not a valid service identifier: use a non-empty name without '/'"
        case .wrongHost(let url, let expected):
            "\(url?.absoluteString ?? "a request without a URL") is not addressed to this router; use http://\(expected)/<identifier>/…"
        }
    }
}
