/// Per-partition state (a host's circuit, a host's budget) found without serializing unrelated
/// partitions: the table is split into stripes by the partition's hash, each behind its own lock
/// held only to find or create the value, and each value guards its own state.
///
/// The table stays bounded however many hosts a process talks to: when a stripe holds
/// `limit / stripes` partitions and a new one comes, the stripe forgets those whose state is the
/// state a new partition starts in (`isIdle`: a full bucket, a closed circuit without failures).
/// If they are all busy, the stripe grows and sweeps again at twice its size — amortized O(1).
final class PartitionTable<Value: AnyObject & Sendable>: Sendable {
    private struct Stripe {
        var values: [String: Value] = [:]
        var sweepAt: Int
    }

    private let stripes: [Locked<Stripe>]
    private let stripeLimit: Int
    private let isIdle: @Sendable (Value) -> Bool
    private let make: @Sendable (String) -> Value

    /// A table that makes the value of a partition with `make` on first use, and forgets idle
    /// ones beyond about `limit` partitions.
    init(
        stripes: Int = 16, limit: Int = 4_096, isIdle: @escaping @Sendable (Value) -> Bool,
        make: @escaping @Sendable (String) -> Value
    ) {
        let count = max(1, stripes)
        stripeLimit = max(1, limit / count)
        self.stripes = (0..<count).map { [stripeLimit] _ in Locked(Stripe(sweepAt: stripeLimit)) }
        self.isIdle = isIdle
        self.make = make
    }

    /// The value of `partition`, made on first use.
    func value(for partition: String) -> Value {
        stripe(partition).withLock { stripe in
            if let value = stripe.values[partition] { return value }
            if stripe.values.count >= stripe.sweepAt {
                stripe.values = stripe.values.filter { !isIdle($0.value) }
                stripe.sweepAt = max(stripeLimit, 2 * stripe.values.count)
            }
            let value = make(partition)
            stripe.values[partition] = value
            return value
        }
    }

    /// The value of `partition` if it was ever used (and not forgotten as idle).
    func existing(_ partition: String) -> Value? {
        stripe(partition).withLock { $0.values[partition] }
    }

    /// How many partitions the table holds now.
    var count: Int {
        stripes.reduce(0) { sum, stripe in sum + stripe.withLock { $0.values.count } }
    }

    private func stripe(_ partition: String) -> Locked<Stripe> {
        stripes[Int(UInt(bitPattern: partition.hashValue) % UInt(stripes.count))]
    }
}
