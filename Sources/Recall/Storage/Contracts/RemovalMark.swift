/// A storage's count of removals, read when a request that may store an answer begins: the
/// storage refuses the store once a removal came after it — made by this process or by any other
/// that shares the storage (replicas over one database table).
///
/// A storage that several processes share returns one from
/// ``CacheStorage/removalMark(for:)`` and checks it in
/// ``CacheStorage/store(_:expires:ifNotRemovedSince:)``, atomically with the write (a conditional
/// upsert in a database). Like ``HTTPCache``'s own removal counts it is kept per stripe of keys,
/// so the count of a key's stripe guards a store under that key and the count of all removals a
/// store under another key (a redirected answer): a removal of another key of the stripe refuses
/// a store too — a lost entry, never a wrong one.
///
/// The ``HTTPCache`` also names a fleet's shared fetch with ``stripe`` and ``stripeRemovals``
/// (``FetchCoordinator``): a request that starts after a removal never waits for a fetch that
/// began before it, in any process.
public struct RemovalMark: Sendable, Hashable, CustomStringConvertible {
    /// The stripe of the key looked up, as the storage numbers them (a storage may use a number
    /// no key has, such as -2, for a mark it could not read: no store checks against it).
    public var stripe: Int
    /// Removals of keys of ``stripe`` so far.
    public var stripeRemovals: Int64
    /// Removals of any key so far.
    public var allRemovals: Int64

    /// A mark of the storage's counts as read now.
    public init(stripe: Int, stripeRemovals: Int64, allRemovals: Int64) {
        self.stripe = stripe
        self.stripeRemovals = stripeRemovals
        self.allRemovals = allRemovals
    }

    /// `stripe:stripeRemovals/allRemovals`.
    public var description: String { "\(stripe):\(stripeRemovals)/\(allRemovals)" }
}
