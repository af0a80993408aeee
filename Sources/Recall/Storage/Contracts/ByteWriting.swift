import Foundation

/// A record written in pieces (``CacheByteStore/beginWriting(for:size:expires:)``): appended to as its
/// body arrives, then committed — made the bytes under its key, whole, at once — or abandoned.
/// Until it is committed, readers of the key see what was there before; after an abandon (or a
/// failure) nothing of it is left.
public protocol ByteWriting: Sendable {
    /// Appends `bytes`. Throws when they cannot be kept (the disk is full, the record passes the
    /// store's limit): then abandon the write.
    func append(_ bytes: Data) async throws
    /// Makes what was appended the bytes under the key, replacing what was there, at once. Throws
    /// when it cannot; then nothing changed.
    func commit() async throws
    /// Drops what was appended; the bytes under the key are unchanged. Safe after a failed
    /// append or commit, and more than once.
    func abandon() async
}
