/// A place a ``CacheByteStore`` keeps beside bytes it vouches will not change, for the record
/// layer to keep what it decoded from them (see ``StoredBytes/memo``). The store only makes it
/// and hands it out with those bytes: it never looks inside.
///
/// The contract: a store gives one memo only with the very bytes it first gave it with. When
/// the bytes may have changed (the file was replaced, rewritten, removed), it makes a new memo or
/// gives none.
public final class DecodingMemo: Sendable {
    /// What the bytes decoded to, with the bodies left out, and where in the bytes each lies.
    struct Decoded: Sendable {
        var template: CacheRecord
        var bodies: [Range<Int>]
    }

    let decoded = Locked<Decoded?>(nil)

    /// An empty memo, for bytes not decoded yet.
    public init() {}
}
