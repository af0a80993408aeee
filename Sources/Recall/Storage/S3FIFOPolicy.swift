/// S3-FIFO eviction (Yang et al., "FIFO queues are all you need for cache eviction", SOSP 2023).
///
/// New keys enter a small FIFO (about 10 % of the bytes); keys read again while there move to
/// the main FIFO, the rest are evicted early and remembered in a ghost FIFO, so that a key
/// seen again soon goes straight to the main queue. The main queue gives keys read since
/// their last pass another round (a CLOCK-like second chance, up to three). One-hit wonders
/// thus leave quickly without pushing out the popular keys, which is where LRU loses.
public struct S3FIFOPolicy: EvictionPolicy {
    private enum Queue { case small, main }

    private struct Entry {
        var queue: Queue
        var frequency: UInt8
        var size: Int
        var generation: UInt64
    }

    private var entries: [String: Entry] = [:]
    private var small = FIFOQueue()
    private var main = FIFOQueue()
    private var ghost = FIFOQueue()
    private var ghostKeys: [String: UInt64] = [:]
    private var smallBytes = 0
    private var mainBytes = 0
    private var nextGeneration: UInt64 = 0
    private var pendingVictim: (key: String, toGhost: Bool)?

    /// The share of bytes the small queue may hold before it is evicted from first.
    public let smallRatio: Double

    /// How many reads while in the small queue earn a key its place in the main queue.
    public let promotionThreshold: UInt8

    /// Creates the policy; `smallRatio` is 0.1 in the paper.
    public init(smallRatio: Double = 0.1, promotionThreshold: UInt8 = 1) {
        self.smallRatio = min(max(smallRatio, 0.01), 0.9)
        self.promotionThreshold = max(1, promotionThreshold)
    }

    /// Tracks a new key (into the main queue if the ghost remembers it) or a replaced one.
    public mutating func recordInsert(_ key: String, size: Int) {
        if let existing = entries[key] {
            adjust(existing.queue, by: size - existing.size)
            entries[key]?.size = size
            return
        }
        nextGeneration += 1
        let fromGhost = ghostKeys.removeValue(forKey: key) != nil
        let queue: Queue = fromGhost ? .main : .small
        entries[key] = Entry(queue: queue, frequency: 0, size: size, generation: nextGeneration)
        push(key, to: queue, generation: nextGeneration)
        adjust(queue, by: size)
    }

    /// Counts a read (saturating at 3).
    public mutating func recordAccess(_ key: String) {
        // One hash of the key, and no write at all for a key already at 3 (every hot key).
        guard let index = entries.index(forKey: key), entries.values[index].frequency < 3 else { return }
        entries.values[index].frequency += 1
    }

    /// Stops tracking `key`; a key evicted early from the small queue is remembered in the ghost.
    public mutating func recordRemoval(_ key: String) {
        guard let entry = entries.removeValue(forKey: key) else { return }
        adjust(entry.queue, by: -entry.size)
        if let victim = pendingVictim, victim.key == key {
            pendingVictim = nil
            if victim.toGhost { remember(key) }
        }
    }

    /// The next key to evict, after promoting and recycling keys as S3-FIFO does.
    public mutating func victim() -> String? {
        if let pendingVictim, entries[pendingVictim.key] != nil { return pendingVictim.key }
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
                return key
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
                return key
            }
            if main.isEmpty, small.isEmpty { break }
        }
        // Queues exhausted by stale entries: fall back to any tracked key.
        if let key = entries.keys.first {
            pendingVictim = (key, false)
            return key
        }
        return nil
    }

    private mutating func push(_ key: String, to queue: Queue, generation: UInt64) {
        switch queue {
        case .small: small.push(key, generation: generation)
        case .main: main.push(key, generation: generation)
        }
    }

    private mutating func adjust(_ queue: Queue, by delta: Int) {
        switch queue {
        case .small: smallBytes += delta
        case .main: mainBytes += delta
        }
    }

    private mutating func remember(_ key: String) {
        nextGeneration += 1
        ghostKeys[key] = nextGeneration
        ghost.push(key, generation: nextGeneration)
        // The ghost remembers about as many keys as the cache holds.
        let limit = max(16, entries.count)
        while ghostKeys.count > limit, let (old, generation) = ghost.pop() {
            if ghostKeys[old] == generation { ghostKeys[old] = nil }
        }
    }
}

extension Eviction {
    /// S3-FIFO: frequency-aware FIFO queues; higher hit ratios than LRU on skewed workloads.
    public static let s3fifo = Eviction(name: "S3-FIFO") { S3FIFOPolicy() }
}
