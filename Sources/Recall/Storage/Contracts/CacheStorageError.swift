/// Problems a cache storage meets. They never fail a request: a corrupt entry is a miss
/// and is removed; a failed write is counted and the response still goes to the caller.
/// Opening a ``DiskStorage`` is where they are thrown.
public struct CacheStorageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``CacheStorageError``.
    public typealias Code = ErrorCode<CacheStorageError>

    /// What kind of problem it is.
    public let code: Code
    /// What went wrong, in the storage's words.
    public let reason: String

    /// A stored record could not be decoded; it is removed.
    public static func corrupt(_ reason: String) -> CacheStorageError { CacheStorageError(code: .corrupt, reason: reason) }
    /// The storage directory could not be created or used.
    public static func directory(_ reason: String) -> CacheStorageError { CacheStorageError(code: .directory, reason: reason) }
    /// Writing an entry failed (disk full, permissions…).
    public static func writeFailed(_ reason: String) -> CacheStorageError { CacheStorageError(code: .writeFailed, reason: reason) }
    /// Another storage, in this process or another, holds the cache directory's lock.
    public static func locked(_ reason: String) -> CacheStorageError { CacheStorageError(code: .locked, reason: reason) }

    /// What went wrong and what to do.
    public var description: String {
        switch code {
        case .corrupt: "corrupt cache entry: \(reason); it was removed and counts as a miss"
        case .directory: "cache directory unusable: \(reason); check the path and its permissions"
        case .writeFailed: "cache write failed: \(reason); the response was still returned"
        case .locked: "cache directory in use: \(reason); give each process its own directory"
        default: "cache storage error (\(code)): \(reason)"
        }
    }
}

extension ErrorCode where Owner == CacheStorageError {
    /// See ``CacheStorageError/corrupt(_:)``.
    public static let corrupt = Self("corrupt")
    /// See ``CacheStorageError/directory(_:)``.
    public static let directory = Self("directory")
    /// See ``CacheStorageError/writeFailed(_:)``.
    public static let writeFailed = Self("writeFailed")
    /// See ``CacheStorageError/locked(_:)``.
    public static let locked = Self("locked")
}
