/// S3-FIFO eviction (Yang et al., "FIFO queues are all you need for cache eviction", SOSP 2023).
///
/// New keys enter a small FIFO (5 % of the bytes); keys read again while there move to the
/// main FIFO, the rest are evicted early and remembered in a ghost, so that a key seen
/// again soon goes straight to the main queue. The main queue gives keys read since their last
/// pass another round (a CLOCK-like second chance, up to three). One-hit wonders thus leave
/// quickly without pushing out the popular keys, which is where LRU loses.
///
/// The paper's defaults are a 10 % small queue and a ghost as large as the main queue. Recall's
/// (5 %, and a ghost of half as many keys as the cache holds) were chosen on the six traces of
/// docs/benchmarks.md and checked on catalogues 3× smaller and larger. Against the paper's they
/// gain up to 1.2 points of hit ratio on skewed traffic (Zipf 1.0, 1 % cache: 60.1 % against
/// 59.4 %) and up to 3.9 on loops, and lose 1.3–1.5 points on recency-driven traffic in the smallest caches
/// (30 to 130 objects), where a 5 % queue holds too few keys, and up to 0.4 on scans in large
/// ones. Pass the paper's values to `init(smallRatio:promotionThreshold:ghostRatio:)` to get
/// its policy.
public struct S3FIFOPolicy: EvictionPolicy {
    private enum Queue { case small, main }

    private struct Entry {
        var queue: Queue
        var frequency: UInt8
        var size: Int
        var generation: UInt64
    }

    /// Keyed with their hashes worked out once (`HashedKey`): a removal from thousands of
    /// entries rehashes no other key's text, and the queues hand keys back with their hashes.
    private var entries: [HashedKey: Entry] = [:]
    private var small = FIFOQueue<HashedKey>()
    private var main = FIFOQueue<HashedKey>()
    /// The ghost remembers keys by their hashes, not their text: it outlives the records, and a
    /// long URL's text held there is memory nobody accounts for. A collision only sends a new
    /// key to the main queue instead of the small one.
    private var ghost = GhostTable()
    private var smallBytes = 0
    private var mainBytes = 0
    private var nextGeneration: UInt64 = 0
    private var pendingVictim: (key: HashedKey, toGhost: Bool)?

    /// The share of bytes the small queue may hold before it is evicted from first.
    public let smallRatio: Double

    /// How many reads while in the small queue earn a key its place in the main queue.
    public let promotionThreshold: UInt8

    /// How many of the latest keys evicted early the ghost remembers, as a share of the keys the
    /// cache holds (a key that came back still counts among them until it ages out).
    public let ghostRatio: Double

    /// Creates the policy. The paper's values are `smallRatio` 0.1 and `ghostRatio` 0.9 (the
    /// main queue's share); out-of-range values are clamped (`smallRatio` to 0.01...0.9,
    /// `ghostRatio` to 0...4, and the ghost always remembers at least 16 keys).
    public init(smallRatio: Double = 0.05, promotionThreshold: UInt8 = 1, ghostRatio: Double = 0.5) {
        self.smallRatio = smallRatio.isFinite ? min(max(smallRatio, 0.01), 0.9) : 0.05
        self.promotionThreshold = max(1, promotionThreshold)
        self.ghostRatio = ghostRatio.isFinite ? min(max(ghostRatio, 0), 4) : 0.5
    }

    /// Tracks a new key (into the main queue if the ghost remembers it) or a replaced one.
    public mutating func recordInsert(_ text: String, size: Int) {
        let key = HashedKey(text)
        // One probe of the table for a new key (a store's usual case: a storage removes the key
        // it replaces first); a key tracked already gets its entry back with the new size. (The
        // ghost is asked first either way: a tracked key's hash is there only by a collision or
        // as an aged-out slot, and forgetting it then costs nothing but that slot.)
        nextGeneration += 1
        let queue: Queue = ghost.forget(key.hash, limit: ghostLimit) ? .main : .small
        if var tracked = entries.updateValue(Entry(queue: queue, frequency: 0, size: size, generation: nextGeneration), forKey: key) {
            adjust(tracked.queue, by: size - tracked.size)
            tracked.size = size
            entries[key] = tracked
            return
        }
        push(key, to: queue, generation: nextGeneration)
        adjust(queue, by: size)
    }

    /// Counts a read (saturating at 3).
    public mutating func recordAccess(_ key: String) {
        // One hash of the key, and no write at all for a key already at 3 (every hot key).
        guard let index = entries.index(forKey: HashedKey(key)), entries.values[index].frequency < 3 else { return }
        entries.values[index].frequency += 1
    }

    /// Stops tracking `key`; a key evicted early from the small queue is remembered in the ghost.
    public mutating func recordRemoval(_ text: String) {
        // A storage removes the victim just named: its key comes back with its hash.
        let key = pendingVictim.flatMap { $0.key.text == text ? $0.key : nil } ?? HashedKey(text)
        guard let entry = entries.removeValue(forKey: key) else { return }
        adjust(entry.queue, by: -entry.size)
        if let victim = pendingVictim, victim.key == key {
            pendingVictim = nil
            if victim.toGhost { ghost.remember(key.hash, limit: ghostLimit) }
        }
    }

    /// The next key to evict, after promoting and recycling keys as S3-FIFO does.
    public mutating func victim() -> String? {
        if let pendingVictim, entries[pendingVictim.key] != nil { return pendingVictim.key.text }
        var guardCount = entries.count * 4 + 8
        while guardCount > 0, !entries.isEmpty {
            guardCount -= 1
            let total = smallBytes + mainBytes
            let fromSmall = Double(smallBytes) >= Double(total) * smallRatio || main.isEmpty
            if fromSmall, let (key, generation) = small.pop() {
                guard var entry = entries[key], entry.generation == generation, entry.queue == .small else { continue }
                if entry.frequency >= promotionThreshold {
                    // Read while in the small queue: promote to main.
                    nextGeneration += 1
                    entry.queue = .main
                    entry.frequency = 0
                    entry.generation = nextGeneration
                    entries[key] = entry
                    smallBytes -= entry.size
                    mainBytes += entry.size
                    main.push(key, generation: nextGeneration)
                    continue
                }
                pendingVictim = (key, true)
                return key.text
            }
            if let (key, generation) = main.pop() {
                guard var entry = entries[key], entry.generation == generation, entry.queue == .main else { continue }
                if entry.frequency > 0 {
                    nextGeneration += 1
                    entry.frequency -= 1
                    entry.generation = nextGeneration
                    entries[key] = entry
                    main.push(key, generation: nextGeneration)
                    continue
                }
                pendingVictim = (key, false)
                return key.text
            }
            if main.isEmpty, small.isEmpty { break }
        }
        // Queues exhausted by stale entries: fall back to any tracked key.
        if let key = entries.keys.first {
            pendingVictim = (key, false)
            return key.text
        }
        return nil
    }

    private mutating func push(_ key: HashedKey, to queue: Queue, generation: UInt64) {
        switch queue {
        case .small: small.push(key, generation: generation)
        case .main: main.push(key, generation: generation)
        }
        // Stale entries (removed or requeued keys) leave a queue only when popped, and a cache
        // below its limits never pops: drop them once they are a quarter as many as the live
        // keys (a removed key's text stays alive while a stale entry holds it).
        if small.count + main.count > entries.count + entries.count / 4 + 64 {
            let entries = entries
            small.compact { key, generation in entries[key].map { $0.generation == generation && $0.queue == .small } ?? false }
            main.compact { key, generation in entries[key].map { $0.generation == generation && $0.queue == .main } ?? false }
        }
    }

    /// Entries in the two queues, stale ones included (for tests: it stays within a small
    /// multiple of the keys tracked).
    var queuedCount: Int { small.count + main.count }

    /// The slots of the ghost's table (for tests: it stays within a small multiple of the keys
    /// it may remember).
    var ghostCapacity: Int { ghost.capacity }

    private mutating func adjust(_ queue: Queue, by delta: Int) {
        switch queue {
        case .small: smallBytes += delta
        case .main: mainBytes += delta
        }
    }

    /// How many keys the ghost remembers: `ghostRatio` of the keys tracked, at least 16.
    private var ghostLimit: Int { max(16, Int(ghostRatio * Double(entries.count))) }
}

extension Eviction {
    /// S3-FIFO: frequency-aware FIFO queues; higher hit ratios than LRU on skewed workloads.
    public static let s3fifo = Eviction(name: "S3-FIFO") { S3FIFOPolicy() }
}
