/// Hits and requests of one replay, by objects and by bytes.
public struct HitCount: Sendable, Hashable {
    /// Requests answered from the cache.
    public var objectHits = 0
    /// Bytes of the requests answered from the cache.
    public var byteHits = 0
    /// Requests replayed.
    public var requests = 0
    /// Bytes requested.
    public var bytes = 0

    /// Creates a zero count.
    public init() {}

    /// Hits over requests (0 for no requests).
    public var objectRatio: Double { Double(objectHits) / Double(max(1, requests)) }
    /// Bytes served from the cache over bytes requested (0 for no bytes).
    public var byteRatio: Double { Double(byteHits) / Double(max(1, bytes)) }

    mutating func count(hit: Bool, size: Int) {
        requests += 1
        bytes += size
        if hit {
            objectHits += 1
            byteHits += size
        }
    }
}
