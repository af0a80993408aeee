import Foundation

/// What a ``CacheByteStore`` read: the bytes under a key, and what the store can vouch for them.
public struct StoredBytes: Sendable {
    /// The bytes, as they were written.
    public var data: Data
    /// Whether `data`'s buffer belongs to this read alone (read just now from a file or a
    /// socket, kept by nothing else): large bodies are then served from it, not copied.
    public var isUnshared: Bool
    /// Given by a store that can vouch the bytes unchanged for as long as it gives the same memo
    /// with them (a file it holds open and has not seen change): what was decoded from them the
    /// first time is kept in it and not checked or decoded again. `nil`: decode every read.
    public var memo: DecodingMemo?

    /// Bytes read under a key.
    public init(_ data: Data, isUnshared: Bool = false, memo: DecodingMemo? = nil) {
        self.data = data
        self.isUnshared = isUnshared
        self.memo = memo
    }
}
