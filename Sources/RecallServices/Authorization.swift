import Foundation
import Recall

/// How a service proves who is calling: set on an ``HttpService``, applied to endpoints whose
/// ``AuthorizationRequirement`` is `.optional` or `.required`.
public enum Authorization: Sendable, Hashable {
    /// `Authorization: Basic base64(username:password)`.
    case basic(username: String, password: String)
    /// `Authorization: Bearer <token>`.
    case bearer(String)
    /// Any header field, such as `X-API-Key: …`.
    case header(name: String, value: String)

    /// The header field this authorization adds.
    public var field: HeaderFields.Field {
        switch self {
        case .basic(let username, let password):
            HeaderFields.Field(name: "Authorization", value: "Basic " + Data("\(username):\(password)".utf8).base64EncodedString())
        case .bearer(let token):
            HeaderFields.Field(name: "Authorization", value: "Bearer \(token)")
        case .header(let name, let value):
            HeaderFields.Field(name: name, value: value)
        }
    }
}

/// Whether an endpoint sends the service's ``Authorization``.
public enum AuthorizationRequirement: Sendable, Hashable {
    /// Never sent.
    case none
    /// Sent when the service has one.
    case optional
    /// Sent; without one the call fails before anything is sent.
    case required
}
