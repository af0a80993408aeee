import Synchronization

/// How many times the records of each stripe of keys have changed in a storage: a reader that
/// loads a stripe's count before reading a record, and finds the same count later, knows the
/// record has not changed in between. ``MemoryStorage`` bumps the stripe of every key it
/// stores, removes or evicts, after the change; ``HTTPCache``'s per-core copies
/// (``PerCoreCopies``) are served only while their stripe's count is the one they were made at.
///
/// Striped, so that a store retires only the copies of one key in 64 (the keys' hashes spread
/// them), and padded, so that a store of one stripe does not move the cache line of another
/// from the cores that read it.
final class RecordGenerations: Sendable {
    static let stripeCount = 64

    /// One stripe's count, alone on its 64-byte cache line.
    private struct Cell: ~Copyable {
        let count = Atomic<UInt64>(0)
        private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
    }

    private let cells: InlineArray<64, Cell> = InlineArray { _ in Cell() }

    /// The stripe of `key` (a hash of it: worked out once per key where it is read often).
    static func stripe(of key: String) -> Int {
        stripe(ofHash: key.hashValue)
    }

    /// The stripe of the key whose hash (`String.hashValue`) is `hash`.
    static func stripe(ofHash hash: Int) -> Int {
        hash & (stripeCount - 1)
    }

    /// The count of `stripe` now (an acquiring load: a change counted is seen whole).
    func current(_ stripe: Int) -> UInt64 {
        cells[stripe].count.load(ordering: .acquiring)
    }

    /// Counts a change of the key whose hash (`String.hashValue`) is `hash`, made just before.
    func bump(hash: Int) {
        cells[Self.stripe(ofHash: hash)].count.add(1, ordering: .releasing)
    }
}
