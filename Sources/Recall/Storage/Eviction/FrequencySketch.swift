/// A 4-bit count-min sketch of how often keys were seen recently, as in Caffeine: the
/// popularity estimate behind ``WTinyLFUPolicy``'s admission decisions.
///
/// Counters are 4 bits, 16 to a `UInt64`; each key has 4 counters (depth 4), all in one
/// 64-byte block of 8 words so an update touches one cache line. The estimate is the smallest
/// of the 4 (collisions only ever inflate it). The table has a power-of-two number of words,
/// at least twice the expected entries (Caffeine: once); when the number of increments
/// reaches 32 times the expected entries (Caffeine: 10), every counter is halved, so that old
/// popularity fades. Both were measured: a longer memory is closer to LFU on skewed traces
/// (about +0.5 points of hit ratio on Zipf), at the cost of slower adaptation when popularity
/// shifts.
struct FrequencySketch {
    private static let resetMask: UInt64 = 0x7777_7777_7777_7777
    private static let oneMask: UInt64 = 0x1111_1111_1111_1111

    private var table: [UInt64]
    private var blockMask: UInt64
    private var additions = 0

    /// The number of entries the table was sized for (at least 64: 1 KiB, so that even a tiny
    /// cache does not see hot and cold keys collide in all 4 counters).
    private(set) var expectedEntries: Int
    /// The increments after which every counter is halved.
    private(set) var sampleSize: Int

    /// A sketch sized for `entries` keys.
    init(entries: Int = 64) {
        expectedEntries = 0
        sampleSize = 0
        table = []
        blockMask = 0
        ensureCapacity(entries)
    }

    /// Sizes the sketch for `entries` keys; it only grows, and growth is rare (the table
    /// doubles). A larger table starts as copies of the old one: a key's block in the new table
    /// keeps the low bits of its old block, so every estimate survives the growth (Caffeine
    /// starts over instead, forgetting what it had learnt while the cache filled).
    mutating func ensureCapacity(_ entries: Int) {
        let maximum = min(max(entries, 64), 1 << 28)
        guard maximum > expectedEntries else { return }
        expectedEntries = maximum
        sampleSize = 32 * maximum
        guard 2 * maximum > table.count else { return }
        var length = 8
        while length < 2 * maximum { length <<= 1 }
        let old = table
        table = [UInt64](repeating: 0, count: length)
        if !old.isEmpty {
            let oldMask = old.count - 1  // a power of two
            for index in table.indices { table[index] = old[index & oldMask] }
        }
        blockMask = UInt64(length >> 3) - 1
    }

    /// The estimated number of recent occurrences of the key with this hash, 0...15.
    func frequency(_ hash: UInt64) -> Int {
        let block = Int(truncatingIfNeeded: (hash & blockMask) << 3)
        let counterHash = hash >> 32
        var minimum: UInt64 = 15
        for depth in 0..<4 {
            let bits = counterHash >> UInt64(depth << 3)
            let counter = (bits >> 1) & 15
            let word = block + Int(truncatingIfNeeded: bits & 1) + (depth << 1)
            minimum = min(minimum, (table[word] >> (counter << 2)) & 0xF)
        }
        return Int(truncatingIfNeeded: minimum)
    }

    /// Counts one occurrence of the key with this hash (saturating at 15), aging the whole
    /// sketch when the sample is complete.
    mutating func increment(_ hash: UInt64) {
        let block = Int(truncatingIfNeeded: (hash & blockMask) << 3)
        let counterHash = hash >> 32
        var added = false
        for depth in 0..<4 {
            let bits = counterHash >> UInt64(depth << 3)
            let shift = ((bits >> 1) & 15) << 2
            let word = block + Int(truncatingIfNeeded: bits & 1) + (depth << 1)
            let mask: UInt64 = 0xF << shift
            if table[word] & mask != mask {
                table[word] &+= 1 << shift
                added = true
            }
        }
        guard added else { return }
        additions += 1
        if additions >= sampleSize { reset() }
    }

    /// Halves every counter; the sample count loses what the halving truncated.
    private mutating func reset() {
        var odd = 0
        for index in table.indices {
            odd += (table[index] & Self.oneMask).nonzeroBitCount
            table[index] = (table[index] >> 1) & Self.resetMask
        }
        additions = max(0, (additions - odd / 4) / 2)
    }

    /// A well-mixed 64-bit hash of `key` (its per-process seeded `hashValue`, through the
    /// SplitMix64 finalizer).
    static func hash(_ key: String) -> UInt64 {
        var z = UInt64(bitPattern: Int64(key.hashValue))
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
