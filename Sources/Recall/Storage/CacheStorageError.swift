/// Problems a cache storage meets. They never fail a request: a corrupt entry is a miss
/// and is removed; a failed write is counted and the response still goes to the caller.
public enum CacheStorageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stored file could not be decoded; it is removed.
    case corrupt(String)
    /// The storage directory could not be created or used.
    case directory(String)
    /// Writing an entry failed (disk full, permissions…).
    case writeFailed(String)
    /// Another process holds the cache directory's lock.
    case locked(String)

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .corrupt(let why): "corrupt cache entry: \(why); it was removed and counts as a miss"
        case .directory(let why): "cache directory unusable: \(why); check the path and its permissions"
        case .writeFailed(let why): "cache write failed: \(why); the response was still returned"
        case .locked(let why): "cache directory in use: \(why); give each process its own directory"
        }
    }
}
