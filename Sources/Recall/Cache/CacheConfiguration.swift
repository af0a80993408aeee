/// The settings of an ``HTTPCache``.
public struct CacheConfiguration: Sendable {
    /// How requests become keys (ignored query parameters, header fields in the key).
    public var keyPolicy = CacheKeyPolicy()
    /// A namespace joined to every key, so caches sharing a storage never see each other's entries.
    public var namespace = ""
    /// Request fields whose values partition the cache: a response fetched with one
    /// `Authorization` or `Cookie` is never served to a request with another (or none). The
    /// values are hashed before they join the key. Empty to share entries across credentials.
    public var credentialFields: [String] = ["Authorization", "Cookie"]
    /// Requests carrying any of these fields bypass the cache entirely (neither served nor stored).
    public var bypassFields: [String] = []
    /// The share of (Date − Last-Modified) used as a heuristic freshness lifetime when a
    /// response gives none (RFC 9111 §4.2.2 suggests 10 %).
    public var heuristicFraction = 0.1
    /// The longest heuristic freshness lifetime, in seconds (one day by default).
    public var heuristicCap: Double = 86_400
    /// The most `Vary` variants kept per URL; the oldest goes first.
    public var maxVariants = 8
    /// Responses whose header fields exceed this many bytes are not stored.
    public var maxHeaderBytes = 64 << 10
    /// Concurrent misses on one key share one origin request.
    public var coalescesRequests = true

    /// The defaults: described on each property.
    public init() {}
}
