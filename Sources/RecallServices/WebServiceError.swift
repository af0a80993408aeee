import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An error answer from a ``WebServiceProxy`` call, as in Echo: the status, and a description
/// that is the body when the server sent `text/plain`, else the status's standard phrase
/// (`HTTPURLResponse.localizedString(forStatusCode:)`, such as "not found").
public struct WebServiceError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The HTTP status.
    public let statusCode: Int
    /// The text of a `text/plain` body, else the status's standard phrase.
    public let errorDescription: String?

    /// Creates the error from an answer.
    public init(statusCode: Int, body: Data, contentType: String?) {
        self.statusCode = statusCode
        let isText = contentType?.lowercased().hasPrefix("text/plain") ?? false
        self.errorDescription = isText ? String(decoding: body, as: UTF8.self) : HTTPURLResponse.localizedString(forStatusCode: statusCode)
    }

    /// ``errorDescription``, with the status.
    public var description: String { "HTTP \(statusCode): \(errorDescription ?? "")" }
}
