import Foundation
import Recall

/// Errors from registering with or sending through a ``ServiceRouter``.
public struct ServiceRouterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``ServiceRouterError``.
    public typealias Code = ErrorCode<ServiceRouterError>

    /// What kind of error it is.
    public let code: Code
    /// The identifier, for ``Recall/ErrorCode/alreadyRegistered`` and ``Recall/ErrorCode/invalidIdentifier``.
    public let identifier: String?
    /// The request's URL, for ``Recall/ErrorCode/wrongHost``.
    public let url: URL?
    /// The router's host, for ``Recall/ErrorCode/wrongHost``.
    public let expectedHost: String?

    /// Another service is already registered under this identifier; unregister it first.
    public static func alreadyRegistered(_ identifier: String) -> ServiceRouterError {
        ServiceRouterError(code: .alreadyRegistered, identifier: identifier, url: nil, expectedHost: nil)
    }

    /// Identifiers must be non-empty and contain no `/`.
    public static func invalidIdentifier(_ identifier: String) -> ServiceRouterError {
        ServiceRouterError(code: .invalidIdentifier, identifier: identifier, url: nil, expectedHost: nil)
    }

    /// The request's URL is not addressed to the router's host.
    public static func wrongHost(_ url: URL?, expected: String) -> ServiceRouterError {
        ServiceRouterError(code: .wrongHost, identifier: nil, url: url, expectedHost: expected)
    }

    /// What went wrong and what to do.
    public var description: String {
        switch code {
        case .alreadyRegistered:
            "a service is already registered as '\(identifier ?? "")'; unregister it first"
        case .invalidIdentifier:
            "'\(identifier ?? "")' is not a valid service identifier: use a non-empty name without '/'"
        case .wrongHost:
            "\(url?.absoluteString ?? "a request without a URL") is not addressed to this router; use http://\(expectedHost ?? "")/<identifier>/…"
        default:
            "service router error (\(code))"
        }
    }
}

extension ErrorCode where Owner == ServiceRouterError {
    /// See ``ServiceRouterError/alreadyRegistered(_:)``.
    public static let alreadyRegistered = Self("alreadyRegistered")
    /// See ``ServiceRouterError/invalidIdentifier(_:)``.
    public static let invalidIdentifier = Self("invalidIdentifier")
    /// See ``ServiceRouterError/wrongHost(_:expected:)``.
    public static let wrongHost = Self("wrongHost")
}
