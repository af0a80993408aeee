/// Per-partition state (a host's circuit, a host's budget) found without serializing unrelated
/// partitions: the table is split into stripes by the partition's hash, each behind its own lock
/// held only to find or create the value, and each value guards its own state.
final class PartitionTable<Value: AnyObject & Sendable>: Sendable {
    private let stripes: [Locked<[String: Value]>]
    private let make: @Sendable (String) -> Value

    /// A table that makes the value of a partition with `make` on first use.
    init(stripes: Int = 16, make: @escaping @Sendable (String) -> Value) {
        self.stripes = (0..<max(1, stripes)).map { _ in Locked([:]) }
        self.make = make
    }

    /// The value of `partition`, made on first use.
    func value(for partition: String) -> Value {
        stripe(partition).withLock { values in
            if let value = values[partition] { return value }
            let value = make(partition)
            values[partition] = value
            return value
        }
    }

    /// The value of `partition` if it was ever used.
    func existing(_ partition: String) -> Value? {
        stripe(partition).withLock { $0[partition] }
    }

    private func stripe(_ partition: String) -> Locked<[String: Value]> {
        stripes[Int(UInt(bitPattern: partition.hashValue) % UInt(stripes.count))]
    }
}
