import Foundation

/// Errors the HTTP cache ends a request with; rare, and never a wrong answer.
public struct CacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``CacheError``.
    public typealias Code = ErrorCode<CacheError>

    /// What kind of error it is.
    public let code: Code
    /// The URL of the request, when known.
    public let url: URL?
    /// What happened and what to do.
    public let description: String

    /// The origin answered the cache's conditional request with a 304 whose validators do not
    /// match the stored entry, and the pipeline could not send the request again. The entry was
    /// removed; send the request again to fetch it in full.
    public static func unmatchedNotModified(_ url: URL?) -> CacheError {
        CacheError(code: .unmatchedNotModified, url: url, description:
            "the origin answered 304 Not Modified for \(url?.absoluteString ?? "a request") with validators that do not "
                + "match the stored response; the entry was dropped, retry to fetch the full response")
    }
}

extension ErrorCode where Owner == CacheError {
    /// See ``CacheError/unmatchedNotModified(_:)``.
    public static let unmatchedNotModified = Self("unmatchedNotModified")
}
