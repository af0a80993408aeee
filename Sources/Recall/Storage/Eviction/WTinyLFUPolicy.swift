/// W-TinyLFU eviction (Einziger, Friedman, Manes, "TinyLFU: A Highly Efficient Cache Admission
/// Policy", 2017), as in Caffeine, with its window sized by hill climbing (Einziger et al.,
/// "Adaptive Software Cache Management", Middleware 2018).
///
/// New keys enter a small LRU window (1 % of the bytes at first). A key leaving the window
/// competes with the main region's least recently used key, and the one a frequency sketch
/// has seen less often recently is evicted, so one-hit wonders and scans cannot push out
/// popular keys. The main region is a segmented LRU: keys read while on probation (20 %) are
/// promoted to the protected segment (80 %). Every so often the policy compares its hit rate
/// with the previous period's and moves the window size in whichever direction helped, so
/// recency-biased workloads get a large window and frequency-biased ones a small one.
///
/// Regions are measured in bytes. Every call is O(1) amortized.
public struct WTinyLFUPolicy: EvictionPolicy {
    private enum Region: UInt8 { case window, probation, protected, free }

    private struct Node {
        var key: String
        var hash: UInt64
        var size: Int
        var previous: Int
        var next: Int
        var region: Region
    }

    // Nodes 0, 1 and 2 are the sentinels of the circular window, probation and protected lists:
    // a sentinel's `next` is the list's least recently used node, its `previous` the most recent.
    private static let windowList = 0
    private static let probationList = 1
    private static let protectedList = 2

    private var nodes: [Node]
    private var indices: [String: Int] = [:]
    private var freeSlots: [Int] = []
    private var windowBytes = 0
    private var probationBytes = 0
    private var protectedBytes = 0
    private var sketch = FrequencySketch()
    private var pendingVictim: Int?
    private var random: UInt64 = 0x2545_F491_4F6C_DD1D

    // Limits: told by the storage, or estimated from the first eviction.
    private var byteLimit = Int.max
    private var countLimit = Int.max
    private var limitsKnown = false
    private var estimatedLimit: Int?
    private var lastInsertSize = 0
    private var insertedSinceVictim = false

    // Hill climbing.
    private let adaptive: Bool
    private var evicting = false
    private var hits = 0
    private var misses = 0
    private var samplePeriod = minimumSample
    private var previousHitRate = 0.0
    private var step = -stepShare

    private static let minimumSample = 10_000
    private static let stepShare = 0.0625
    private static let stepDecay = 0.98
    private static let restartThreshold = 0.05
    private static let maximumWindowShare = 0.8
    private static let protectedShare = 0.8
    private static let floodingThreshold = 6
    private static let maximumSize = 1 << 48  // so that no sum of sizes can overflow

    /// The share of the bytes the window currently aims for (0...0.8); it moves with the
    /// workload when the policy is adaptive.
    public private(set) var windowShare: Double

    /// The number of keys tracked.
    public var count: Int { indices.count }

    /// Creates the policy: `initialWindow` is the window's share of the bytes to start with
    /// (1 % in Caffeine); `adaptive` lets hill climbing resize it.
    public init(initialWindow: Double = 0.01, adaptive: Bool = true) {
        windowShare = initialWindow.isFinite ? min(max(initialWindow, 0), Self.maximumWindowShare) : 0.01
        self.adaptive = adaptive
        nodes = (0..<3).map { Node(key: "", hash: 0, size: 0, previous: $0, next: $0, region: .free) }
    }

    /// Remembers the storage's limits, which size the regions.
    public mutating func setCapacity(byteLimit: Int, countLimit: Int) {
        self.byteLimit = max(0, byteLimit)
        self.countLimit = max(0, countLimit)
        limitsKnown = true
    }

    /// Tracks a new key in the window, or updates the size of a tracked one in place (which
    /// also counts as a read).
    public mutating func recordInsert(_ key: String, size: Int) {
        let size = min(max(0, size), Self.maximumSize)
        if let index = indices[key] {
            let delta = size - nodes[index].size
            nodes[index].size = size
            adjust(nodes[index].region, by: delta)
            touch(index)
            return
        }
        let hash = FrequencySketch.hash(key)
        sketch.increment(hash)
        let node = Node(key: key, hash: hash, size: size, previous: 0, next: 0, region: .window)
        let index: Int
        if let slot = freeSlots.popLast() {
            nodes[slot] = node
            index = slot
        } else {
            index = nodes.count
            nodes.append(node)
        }
        indices[key] = index
        link(index, to: Self.windowList)
        windowBytes += size
        if indices.count > sketch.expectedEntries { sketch.ensureCapacity(indices.count) }
        lastInsertSize = size
        insertedSinceVictim = true
        misses += 1
        sampled()
    }

    /// Counts a read: the key moves to the front of its region, from probation to protected.
    public mutating func recordAccess(_ key: String) {
        guard let index = indices[key] else { return }
        touch(index)
        hits += 1
        sampled()
    }

    /// Stops tracking `key`.
    public mutating func recordRemoval(_ key: String) {
        guard let index = indices.removeValue(forKey: key) else { return }
        unlink(index)
        adjust(nodes[index].region, by: -nodes[index].size)
        nodes[index] = Node(key: "", hash: 0, size: 0, previous: index, next: index, region: .free)
        freeSlots.append(index)
        if pendingVictim == index { pendingVictim = nil }
    }

    /// The next key to evict: a key leaving an oversized window duels with the main region's
    /// least recently used key (the less frequent one loses); otherwise probation's LRU key.
    public mutating func victim() -> String? {
        if let pendingVictim { return nodes[pendingVictim].key }
        guard !indices.isEmpty else { return nil }
        if !limitsKnown, insertedSinceVictim {
            // The storage is over its limit now and was not before the last insert.
            let total = windowBytes + probationBytes + protectedBytes
            estimatedLimit = max(1, total - lastInsertSize)
        }
        insertedSinceVictim = false
        evicting = true
        let capacity = self.capacity
        let windowTarget = windowShare * capacity
        let mainTarget = capacity - windowTarget
        demote(to: Self.protectedShare * mainTarget)
        while Double(windowBytes) > windowTarget, let candidate = first(Self.windowList) {
            let size = nodes[candidate].size
            if Double(probationBytes + protectedBytes + size) <= mainTarget {
                // The main region has room: no duel.
                move(candidate, to: Self.probationList)
                continue
            }
            guard let victim = first(Self.probationList) ?? first(Self.protectedList) else {
                return choose(candidate)
            }
            if admit(candidate, over: victim) {
                move(candidate, to: Self.probationList)
                return choose(victim)
            }
            return choose(candidate)
        }
        guard let victim = first(Self.probationList) ?? first(Self.protectedList) ?? first(Self.windowList) else {
            return nil
        }
        return choose(victim)
    }

    // MARK: Regions

    /// The bytes the storage holds at most: its byte limit, or its count limit times the
    /// average size when that is smaller; before limits are known, an estimate.
    private var capacity: Double {
        guard limitsKnown else { return estimatedLimit.map(Double.init) ?? .infinity }
        var capacity = Double(byteLimit)
        if countLimit < Int.max, !indices.isEmpty {
            let total = windowBytes + probationBytes + protectedBytes
            capacity = min(capacity, Double(countLimit) * Double(total) / Double(indices.count))
        }
        return capacity
    }

    private mutating func touch(_ index: Int) {
        sketch.increment(nodes[index].hash)
        if pendingVictim == index { pendingVictim = nil }
        switch nodes[index].region {
        case .window:
            move(index, to: Self.windowList)
        case .protected:
            move(index, to: Self.protectedList)
        case .probation:
            let protectedTarget = Self.protectedShare * (1 - windowShare) * capacity
            guard Double(nodes[index].size) <= protectedTarget else {
                move(index, to: Self.probationList)
                return
            }
            move(index, to: Self.protectedList)
            demote(to: protectedTarget)
        case .free:
            break
        }
    }

    /// Moves protected's least recently used keys to probation while it is over `target` bytes.
    private mutating func demote(to target: Double) {
        while Double(protectedBytes) > target, let oldest = first(Self.protectedList) {
            move(oldest, to: Self.probationList)
        }
    }

    /// Whether the window's `candidate` should replace the main region's `victim`: when the
    /// sketch saw it more often (ties keep the victim). Failing that, a warm candidate (6 or
    /// more) still wins 1 time in 128, so that keys made to collide with a hot victim in the
    /// sketch (hash flooding) cannot keep new keys out for ever, as in Caffeine.
    private mutating func admit(_ candidate: Int, over victim: Int) -> Bool {
        let candidateFrequency = sketch.frequency(nodes[candidate].hash)
        let victimFrequency = sketch.frequency(nodes[victim].hash)
        if candidateFrequency > victimFrequency { return true }
        guard candidateFrequency >= Self.floodingThreshold else { return false }
        return nextRandom() & 127 == 0
    }

    private mutating func choose(_ index: Int) -> String {
        pendingVictim = index
        return nodes[index].key
    }

    private mutating func nextRandom() -> UInt64 {
        random &+= 0x9E37_79B9_7F4A_7C15
        var z = random
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    // MARK: Hill climbing

    /// Ends a sample period when it is complete (10 events per key held, at least 10,000: fewer
    /// make the hit rate too noisy to steer by): keeps moving the window in the same direction
    /// if the hit rate improved, else reverses; the step (6.25 % of the bytes at first) decays
    /// by 2 % a period and restarts when the hit rate moves by 5 points or more.
    private mutating func sampled() {
        guard hits + misses >= samplePeriod else { return }
        defer {
            hits = 0
            misses = 0
            samplePeriod = max(Self.minimumSample, 10 * indices.count)
        }
        guard adaptive, evicting else { return }
        let hitRate = Double(hits) / Double(hits + misses)
        let change = hitRate - previousHitRate
        let amount = change >= 0 ? step : -step
        step = abs(change) >= Self.restartThreshold ? (amount >= 0 ? Self.stepShare : -Self.stepShare) : Self.stepDecay * amount
        previousHitRate = hitRate
        windowShare = min(max(windowShare + amount, 0), Self.maximumWindowShare)
    }

    // MARK: Lists

    private func first(_ list: Int) -> Int? {
        let index = nodes[list].next
        return index == list ? nil : index
    }

    private mutating func adjust(_ region: Region, by delta: Int) {
        switch region {
        case .window: windowBytes += delta
        case .probation: probationBytes += delta
        case .protected: protectedBytes += delta
        case .free: break
        }
    }

    /// Moves `index` to the most recent end of `list` (which may be its own).
    private mutating func move(_ index: Int, to list: Int) {
        let size = nodes[index].size
        adjust(nodes[index].region, by: -size)
        unlink(index)
        link(index, to: list)
        adjust(nodes[index].region, by: size)
    }

    private mutating func link(_ index: Int, to list: Int) {
        let last = nodes[list].previous
        nodes[index].previous = last
        nodes[index].next = list
        nodes[last].next = index
        nodes[list].previous = index
        switch list {
        case Self.windowList: nodes[index].region = .window
        case Self.probationList: nodes[index].region = .probation
        default: nodes[index].region = .protected
        }
    }

    private mutating func unlink(_ index: Int) {
        let previous = nodes[index].previous
        let next = nodes[index].next
        nodes[previous].next = next
        nodes[next].previous = previous
        nodes[index].previous = index
        nodes[index].next = index
    }
}

extension Eviction {
    /// W-TinyLFU: a small LRU window before a frequency-filtered segmented LRU, the window
    /// sized by hill climbing (Caffeine's policy). Ahead of S3-FIFO on loops and on skewed
    /// traffic in large caches, resistant to scans; slow to adapt when popularity shifts by
    /// recency (see docs/benchmarks.md).
    public static let wTinyLFU = Eviction(name: "W-TinyLFU") { WTinyLFUPolicy() }
}
