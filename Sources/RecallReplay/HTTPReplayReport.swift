import Recall

/// What replaying a capture through Recall's `HTTPCache` showed, next to what the capturing
/// client's own cache did.
public struct HTTPReplayReport: Sendable, Hashable {
    /// Entries in the capture.
    public var entries = 0
    /// Entries replayed (http or https, with a response).
    public var replayed = 0
    /// Entries not replayed: other schemes (`data:`, `blob:`, `ws:`), or no response in the capture.
    public var skipped = 0
    /// Range requests (a `Range` field, or a `206` answer) not replayed: the replay carries
    /// bodies as their sizes, and a cache cannot cut or store a range of a size.
    public var rangeRequests = 0

    /// What the cache counted over the replay: hits, stale answers, revalidations, misses,
    /// requests passed through by method, stores (``/Recall/CacheStatistics/hitRatio`` is the share of
    /// lookups answered without a body from the origin).
    public var cache = CacheStatistics()

    /// Requests that reached the origin (the transport).
    public var originRequests = 0
    /// Response body bytes the application received.
    public var bodyBytes = 0
    /// Response body bytes the origin sent.
    public var originBodyBytes = 0

    /// Entries the capturing client answered from its memory cache.
    public var clientMemoryHits = 0
    /// Entries the capturing client answered from its disk cache.
    public var clientDiskHits = 0
    /// Entries the capturing client revalidated (a 304 in the capture).
    public var clientRevalidated = 0

    /// Creates an empty report.
    public init() {}

    /// Origin requests Recall saved: replayed requests minus those that reached the origin.
    public var originRequestsSaved: Int { replayed - originRequests }
    /// Body bytes Recall saved: bytes received minus bytes the origin sent.
    public var bytesSaved: Int { bodyBytes - originBodyBytes }
    /// Entries the capturing client answered without a body from the network.
    public var clientSaved: Int { clientMemoryHits + clientDiskHits + clientRevalidated }
}
