import Foundation
import Recall

/// Errors of the typed service layer (``HttpService``, endpoints).
public struct ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``ServiceError``.
    public typealias Code = ErrorCode<ServiceError>

    /// What kind of error it is.
    public let code: Code
    /// The status the service answered with, for ``Recall/ErrorCode/badStatus``.
    public let statusCode: Int?
    /// The body of that answer, for ``Recall/ErrorCode/badStatus``: always the raw bytes, whether or not
    /// they decoded as the service's `ErrorResponse`.
    public let body: Data?
    /// The endpoint, URL text or coding failure the error is about, for the other codes.
    public let subject: String?
    /// The answer's body decoded as the service's ``HttpService/ErrorResponse``, for
    /// ``Recall/ErrorCode/badStatus`` when the service declares one and the body decoded; read it with
    /// ``errorResponse(as:)``. Not part of equality.
    public let errorResponse: (any Sendable)?

    init(code: Code, statusCode: Int? = nil, body: Data? = nil, subject: String? = nil, errorResponse: (any Sendable)? = nil) {
        self.code = code
        self.statusCode = statusCode
        self.body = body
        self.subject = subject
        self.errorResponse = errorResponse
    }

    /// The endpoint requires authorization and the service has none; nothing was sent.
    public static func authorizationRequired(endpoint: String) -> ServiceError {
        ServiceError(code: .authorizationRequired, subject: endpoint)
    }

    /// `apiUrl` and the path do not make a valid URL.
    public static func invalidURL(_ text: String) -> ServiceError {
        ServiceError(code: .invalidURL, subject: text)
    }

    /// The service answered with a status the endpoint does not accept (outside 200–299 unless
    /// it says otherwise).
    public static func badStatus(_ status: Int, body: Data) -> ServiceError {
        ServiceError(code: .badStatus, statusCode: status, body: body)
    }

    /// The service answered `status`; its `body` decoded as `errorResponse`.
    public static func badStatus(_ status: Int, body: Data, errorResponse: (any Sendable)?) -> ServiceError {
        ServiceError(code: .badStatus, statusCode: status, body: body, errorResponse: errorResponse)
    }

    /// The body could not be encoded or decoded.
    public static func coding(_ reason: String) -> ServiceError {
        ServiceError(code: .coding, subject: reason)
    }

    /// The decoded error answer, if the service declared `ErrorResponse` as `type` and the body
    /// decoded: `error.errorResponse(as: APIError.self)?.message`.
    public func errorResponse<T>(as type: T.Type) -> T? {
        errorResponse as? T
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
            let status = "the service answered \(statusCode ?? 0)"
            if let errorResponse { return status + ": \(errorResponse)" }
            let body = body ?? Data()
            return status + (body.isEmpty ? "" : ": \(String(decoding: body.prefix(500), as: UTF8.self))")
        case .coding:
            return "could not encode or decode the body: \(subject)"
        default:
            return "service error (\(code)): \(subject)"
        }
    }

    /// Equal when code, status, body and subject are (the decoded error answer is not compared).
    public static func == (lhs: ServiceError, rhs: ServiceError) -> Bool {
        lhs.code == rhs.code && lhs.statusCode == rhs.statusCode && lhs.body == rhs.body && lhs.subject == rhs.subject
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(statusCode)
        hasher.combine(body)
        hasher.combine(subject)
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
