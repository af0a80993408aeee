import Synchronization

/// How many times the cache has removed stored responses (an invalidation after a `PUT`, a
/// `DELETE`, a discarded variant), per stripe of keys and in all.
///
/// A request reads its key's epoch (``snapshot(stripe:)``) when it starts. Its answer is
/// stored only while the epoch is still the same (``isCurrent(_:stripe:)``, checked under the
/// key's write lock, where removals bump it): an answer the origin may have produced before a
/// write completed never replaces what a request that began after the write stored. A stripe
/// holds many keys, so a removal can also refuse the store of another key of its stripe: a
/// lost entry, never a wrong one.
///
/// The same epoch keeps requests apart in coalescing: a request that starts after an
/// invalidation never waits for a fetch that began before it.
final class InvalidationEpochs: Sendable {
    static let stripeCount = 1024

    private let stripes: InlineArray<1024, Atomic<UInt64>> = InlineArray { _ in Atomic(0) }
    /// Removals of any stripe, for an answer stored under another key than the one looked up
    /// (a redirect), whose stripe the request did not read.
    private let total = Atomic<UInt64>(0)

    /// What a request saw when it started.
    struct Snapshot: Sendable {
        /// The stripe of the key it looked up.
        var stripe: Int
        /// That stripe's epoch.
        var epoch: UInt64
        /// Removals of every stripe.
        var total: UInt64
        /// The storage's own counts (``RemovalMark``), for a storage other processes share; read
        /// when the request may store (``CacheWriter/marking(_:key:)``), `nil` before or when the
        /// storage keeps none. (Boxed: a snapshot travels with every lookup, hits included, and
        /// stays one word larger, not four.)
        var storage: RemovalMark? {
            get { box?.mark }
            set { box = newValue.map(Box.init) }
        }
        private var box: Box?

        /// A ``RemovalMark`` kept by reference.
        private final class Box: Sendable {
            let mark: RemovalMark
            init(_ mark: RemovalMark) { self.mark = mark }
        }

        init(stripe: Int, epoch: UInt64, total: UInt64) {
            self.stripe = stripe
            self.epoch = epoch
            self.total = total
        }
    }

    /// The stripe of a key whose hash is `hash`.
    static func stripe(ofHash hash: Int) -> Int {
        hash & (stripeCount - 1)
    }

    /// The epochs as a request that looks up a key of `stripe` sees them now.
    func snapshot(stripe: Int) -> Snapshot {
        Snapshot(stripe: stripe, epoch: stripes[stripe].load(ordering: .acquiring), total: total.load(ordering: .acquiring))
    }

    /// Counts a removal of a key of `stripe`; call it under the key's write lock.
    func advance(stripe: Int) {
        stripes[stripe].add(1, ordering: .releasing)
        total.add(1, ordering: .releasing)
    }

    /// Whether nothing a request that saw `snapshot` must respect was removed since, for a key
    /// of `stripe`: its stripe's epoch when it is the stripe looked up, else every stripe's.
    func isCurrent(_ snapshot: Snapshot, stripe: Int) -> Bool {
        if stripe == snapshot.stripe { return stripes[stripe].load(ordering: .acquiring) == snapshot.epoch }
        return total.load(ordering: .acquiring) == snapshot.total
    }
}
