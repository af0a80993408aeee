import Foundation

/// The key of the cache's keyed hashes (HMAC-SHA256) of credentials and secret query values,
/// when it is held outside the store (``CacheConfiguration/secret``).
///
/// By default the key lives with the records (``CacheStorage/secret``: `DiskStorage` keeps it in
/// its directory, `PostgresStorage` in its database), so whoever can read the records can read
/// the key too and test guesses of a token offline. A key from your configuration or secret
/// store keeps that out of their reach. Every process that shares a storage must use the same
/// key, and a new key makes the stored responses of credentialed requests unreachable (they
/// are misses, and age out).
public struct CacheSecret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key's bytes.
    public let bytes: [UInt8]

    /// Names the key's length, never its bytes (logs and debuggers see no more).
    public var description: String { "CacheSecret(\(bytes.count) bytes)" }
    /// The same as ``description``.
    public var debugDescription: String { description }
    /// A mirror without the bytes.
    public var customMirror: Mirror { Mirror(self, children: ["byteCount": bytes.count]) }

    /// The fewest bytes a key may have.
    public static let minimumByteCount = 32

    /// A key of `bytes` (at least ``minimumByteCount`` of them: 32 random bytes, as
    /// `openssl rand -base64 32` makes).
    ///
    /// - Throws: ``CacheSecret/TooShort`` for fewer bytes.
    public init(_ bytes: [UInt8]) throws {
        guard bytes.count >= Self.minimumByteCount else { throw TooShort(byteCount: bytes.count) }
        self.bytes = bytes
    }

    /// A key written in base64 (surrounding white space is ignored).
    ///
    /// - Throws: ``CacheSecret/TooShort`` when it is not base64 or holds too few bytes.
    public init(base64: String) throws {
        guard let data = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TooShort(byteCount: 0)
        }
        try self.init(Array(data))
    }

    /// A key with fewer than ``CacheSecret/minimumByteCount`` bytes (or text that is not base64).
    public struct TooShort: Error, Sendable, Hashable, CustomStringConvertible {
        /// The bytes given.
        public let byteCount: Int

        /// What went wrong and what to do.
        public var description: String {
            "a cache secret needs at least \(CacheSecret.minimumByteCount) random bytes (got \(byteCount)); make one with `openssl rand -base64 32`"
        }
    }
}
