import Foundation

/// One request and its response from a HAR 1.2 capture, with what a replay needs: no bodies,
/// only their sizes.
public struct HAREntry: Sendable, Hashable {
    /// Whether the capturing client answered the request itself, as the HAR says.
    public enum ClientCache: String, Sendable, Hashable {
        /// The HAR does not say it came from the client's cache.
        case network
        /// Served from the client's memory cache (Chromium's `_fromCache: "memory"`).
        case memory
        /// Served from the client's disk cache (`_fromCache: "disk"`, or a HAR `cache` object
        /// that says the entry was used before the request).
        case disk
    }

    /// When the request started.
    public var started: Date
    /// The request method, such as GET.
    public var method: String
    /// The absolute request URL.
    public var url: String
    /// The request header fields, in order (HTTP/2 pseudo-fields such as `:path` removed).
    public var requestHeaders: [(name: String, value: String)]
    /// The response status (0 when the request failed without a response).
    public var status: Int
    /// The response header fields, in order (pseudo-fields removed).
    public var responseHeaders: [(name: String, value: String)]
    /// The length of the response body after decoding (`content.size`), when known.
    public var bodySize: Int?
    /// What the capturing client's own cache did.
    public var clientCache: ClientCache
    /// The line of the capture the entry starts on.
    public var line: Int

    /// Creates an entry.
    public init(
        started: Date, method: String, url: String, requestHeaders: [(name: String, value: String)] = [],
        status: Int, responseHeaders: [(name: String, value: String)] = [], bodySize: Int?,
        clientCache: ClientCache = .network, line: Int = 0
    ) {
        self.started = started
        self.method = method
        self.url = url
        self.requestHeaders = requestHeaders
        self.status = status
        self.responseHeaders = responseHeaders
        self.bodySize = bodySize
        self.clientCache = clientCache
        self.line = line
    }

    /// Equal when every field is, headers compared by name and value in order.
    public static func == (lhs: HAREntry, rhs: HAREntry) -> Bool {
        lhs.started == rhs.started && lhs.method == rhs.method && lhs.url == rhs.url && lhs.status == rhs.status
            && lhs.bodySize == rhs.bodySize && lhs.clientCache == rhs.clientCache && lhs.line == rhs.line
            && lhs.requestHeaders.map { [$0.name, $0.value] } == rhs.requestHeaders.map { [$0.name, $0.value] }
            && lhs.responseHeaders.map { [$0.name, $0.value] } == rhs.responseHeaders.map { [$0.name, $0.value] }
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(started)
        hasher.combine(method)
        hasher.combine(url)
        hasher.combine(status)
        hasher.combine(line)
    }
}
