import Foundation

/// Errors of the typed service layer (``HttpService``, endpoints).
public struct ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``ServiceError``.
    public typealias Code = ErrorCode<ServiceError>

    /// What kind of error it is.
    public let code: Code
    /// The status the service answered with, for ``Code/badStatus``.
    public let statusCode: Int?
    /// The body of that answer, for ``Code/badStatus``.
    public let body: Data?
    /// The endpoint, URL text or coding failure the error is about, for the other codes.
    public let subject: String?

    /// The endpoint requires authorization and the service has none; nothing was sent.
    public static func authorizationRequired(endpoint: String) -> ServiceError {
        ServiceError(code: .authorizationRequired, statusCode: nil, body: nil, subject: endpoint)
    }

    /// `apiUrl` and the path do not make a valid URL.
    public static func invalidURL(_ text: String) -> ServiceError {
        ServiceError(code: .invalidURL, statusCode: nil, body: nil, subject: text)
    }

    /// The service answered with a status outside 200–299.
    public static func badStatus(_ status: Int, body: Data) -> ServiceError {
        ServiceError(code: .badStatus, statusCode: status, body: body, subject: nil)
    }

    /// The body could not be encoded or decoded.
    public static func coding(_ reason: String) -> ServiceError {
        ServiceError(code: .coding, statusCode: nil, body: nil, subject: reason)
    }

    /// What went wrong and what to do.
    public var description: String {
        let subject = subject ?? ""
        switch code {
        case .authorizationRequired:
            return "\(subject) requires authorization, but the service has none: set `authorization` on the service"
        case .invalidURL:
            return "'\(subject)' is not a valid URL: give apiUrl as a host and optional path, such as 'api.example.com/v1'"
        case .badStatus:
            let body = body ?? Data()
            return "the service answered \(statusCode ?? 0)" + (body.isEmpty ? "" : ": \(String(decoding: body.prefix(500), as: UTF8.self))")
        case .coding:
            return "could not encode or decode the body: \(subject)"
        default:
            return "service error (\(code)): \(subject)"
        }
    }
}

extension ErrorCode where Owner == ServiceError {
    /// See ``ServiceError/authorizationRequired(endpoint:)``.
    public static let authorizationRequired = Self("authorizationRequired")
    /// See ``ServiceError/invalidURL(_:)``.
    public static let invalidURL = Self("invalidURL")
    /// See ``ServiceError/badStatus(_:body:)``.
    public static let badStatus = Self("badStatus")
    /// See ``ServiceError/coding(_:)``.
    public static let coding = Self("coding")
}
