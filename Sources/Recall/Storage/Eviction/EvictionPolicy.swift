/// Chooses which record a bounded storage drops when it is full. Storages call it under
/// their own lock, so implementations need no synchronization.
public protocol EvictionPolicy {
    /// A record was added (or replaced) with this size.
    mutating func recordInsert(_ key: String, size: Int)
    /// A record was read. Storages may report a read just after the key's removal (reads do not
    /// wait for writes) and may skip reads under contention: ignore keys not tracked.
    mutating func recordAccess(_ key: String)
    /// A record was removed (evicted, invalidated or found corrupt).
    mutating func recordRemoval(_ key: String)
    /// The key to evict next, or `nil` when nothing is tracked. The storage then removes it
    /// and calls ``recordRemoval(_:)``.
    mutating func victim() -> String?
    /// The storage's limits, told once before first use, so a policy can size its regions.
    /// `countLimit` is `Int.max` for a storage bounded by bytes only.
    mutating func setCapacity(byteLimit: Int, countLimit: Int)
}

extension EvictionPolicy {
    /// Does nothing: policies that need no sizing (LRU, S3-FIFO, most custom ones) ignore the limits.
    public mutating func setCapacity(byteLimit: Int, countLimit: Int) {}
}

/// A way to make an ``EvictionPolicy`` for a storage: `.lru` or your own.
public struct Eviction: Sendable {
    /// The name shown in statistics and benchmarks.
    public let name: String
    /// Makes a fresh policy.
    public let make: @Sendable () -> any EvictionPolicy

    /// Creates an eviction choice.
    public init(name: String, make: @escaping @Sendable () -> any EvictionPolicy) {
        self.name = name
        self.make = make
    }

    /// Least recently used.
    public static let lru = Eviction(name: "LRU") { LRUPolicy() }
}
