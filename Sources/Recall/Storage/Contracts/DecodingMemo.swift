import Synchronization

/// A place a ``CacheByteStore`` keeps beside bytes it vouches will not change, for the record
/// layer to keep what it decoded from them (see ``StoredBytes/memo``). The store only makes it
/// and hands it out with those bytes: it never looks inside.
///
/// The contract: a store gives one memo only with the very bytes it first gave it with. When
/// the bytes may have changed (the file was replaced, rewritten, removed), it makes a new memo or
/// gives none.
public final class DecodingMemo: @unchecked Sendable {
    /// What the bytes decoded to, with the bodies left out, and where in the bytes each lies.
    struct Decoded: Sendable {
        var template: CacheRecord
        var bodies: [Range<Int>]
        /// How many bytes it was decoded from: bytes of another length are not these bytes.
        var byteCount: Int
    }

    /// 0: empty; 1: being filled; 2: filled (``value`` is set and never changes again).
    private let fill = Atomic<Int>(0)
    /// Written once, by the one caller that moved ``fill`` from 0 to 1, before it publishes 2
    /// (releasing); read only after loading 2 (acquiring). (Unchecked `Sendable` for this field.)
    private nonisolated(unsafe) var value: Decoded?

    /// An empty memo, for bytes not decoded yet.
    public init() {}

    /// What the bytes decoded to, once kept: one atomic load on a hit, no lock.
    var decoded: Decoded? {
        fill.load(ordering: .acquiring) == 2 ? value : nil
    }

    /// Whether the memo is filled: one atomic load, nothing copied.
    var isFilled: Bool {
        fill.load(ordering: .acquiring) == 2
    }

    /// Keeps `decoded`, unless the memo is filled (or being filled) already: the bytes are the
    /// same, so what another read decoded from them is the same too.
    func keep(_ decoded: Decoded) {
        guard fill.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged else { return }
        value = decoded
        fill.store(2, ordering: .releasing)
    }
}
