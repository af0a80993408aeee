import Foundation

/// Errors the HTTP cache ends a request with; rare, and never a wrong answer.
public struct CacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``CacheError``.
    public typealias Code = ErrorCode<CacheError>

    /// What kind of error it is.
    public let code: Code
    /// The URL of the request, when known.
    public let url: URL?

    /// The origin answered the cache's conditional request with a 304 whose validators do not
    /// match the stored entry, and the pipeline could not send the request again. The stored
    /// entry is not served (it is removed unless the 304 came from another URL); send the
    /// request again to fetch the full response.
    public static func unmatchedNotModified(_ url: URL?) -> CacheError {
        CacheError(code: .unmatchedNotModified, url: url)
    }

    /// What happened and what to do.
    public var description: String {
        switch code {
        case .unmatchedNotModified:
            "the origin answered 304 Not Modified for \(url?.absoluteString ?? "a request") with validators that do not "
                + "match the stored response; it was not served, retry to fetch the full response"
        default:
            "cache error (\(code))"
        }
    }
}

extension ErrorCode where Owner == CacheError {
    /// See ``CacheError/unmatchedNotModified(_:)``.
    public static let unmatchedNotModified = Self("unmatchedNotModified")
}
