/// Random secrets for keyed hashes of credentials (see ``CacheStorage/secret``).
enum StorageSecret {
    /// The length of a secret in bytes.
    static let byteCount = 32

    /// One secret for the whole process, for storages that keep none of their own.
    static let processWide = make()

    /// A new secret from the system's cryptographically secure generator.
    static func make() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
