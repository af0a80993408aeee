/// A table keyed by ``HashedKey`` in sixteen stripes, each behind a lock of its own, chosen by
/// the key's hash: what ``KeyedLock`` and ``RequestCoalescer`` keep of the keys in use.
///
/// Why: every miss takes the coalescer's lock twice (to lead its key, and to let it go), every
/// store the keyed lock's twice, and under concurrent misses one lock per table made the cores
/// wait for each other there (a profile of 16 callers on two cores showed threads sleeping on
/// those locks under `HTTPCache.lead`, `CacheLeads.finish` and `CacheWriter.store`). Two keys contend only when they fall in the same stripe. A key's entry always lives
/// in the same stripe, so each key's operations stay in one lock's order, as before.
struct StripedTable<Value: Sendable>: Sendable {
    private typealias Stripes = InlineArray<16, Locked<[HashedKey: Value]>>

    /// How many stripes.
    static var stripeCount: Int { Stripes.count }

    private let stripes = Stripes { _ in Locked([:]) }

    /// Runs `body` on the stripe that holds `key`, under its lock.
    func withLock<Result>(_ key: HashedKey, _ body: (inout [HashedKey: Value]) throws -> Result) rethrows -> Result {
        try stripes[stripe(of: key)].withLock(body)
    }

    /// Runs `body` on each stripe in turn, each under its lock (never two at once). `body` must
    /// not call back into the table: the stripe's lock is held, and it is not recursive.
    func forEachStripe(_ body: (inout [HashedKey: Value]) throws -> Void) rethrows {
        for index in stripes.indices { try stripes[index].withLock(body) }
    }

    /// The stripe of `key`: bits 16 and up of its hash (any bits would do: the stripes' tables
    /// hash their keys again, seeded; other stripings, such as ``RecordGenerations``', use the
    /// low bits).
    func stripe(of key: HashedKey) -> Int {
        Int(UInt(bitPattern: key.hash >> 16) % UInt(Self.stripeCount))
    }
}
