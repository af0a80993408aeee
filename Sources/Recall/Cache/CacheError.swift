import Foundation

/// Errors the HTTP cache ends a request with; rare, and never a wrong answer.
public enum CacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The origin answered the cache's conditional request with a 304 whose validators do
    /// not match the stored entry, so there is no body to serve. The entry was removed; send
    /// the request again to fetch it in full.
    case unmatchedNotModified(URL?)

    /// What happened and what to do.
    public var description: String {
        switch self {
        case .unmatchedNotModified(let url):
            "the origin answered 304 Not Modified for \(url?.absoluteString ?? "a request") with validators that do not "
                + "match the stored response; the entry was dropped, retry to fetch the full response"
        }
    }
}
