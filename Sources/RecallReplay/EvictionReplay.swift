import Foundation
import Recall

/// Replays a ``Trace`` through Recall's real `MemoryStorage` under an eviction policy, or
/// through Belady's offline optimum, and counts the hits.
///
/// Every request is a lookup; a miss stores the object. Freshness plays no part: this measures
/// the eviction policy alone (what ``HTTPCacheReplay`` measures with the HTTP rules).
public enum EvictionReplay {
    /// Hit counts of `trace` through a `MemoryStorage` holding `capacity` bytes of bodies,
    /// evicting with `eviction`.
    public static func run(_ trace: Trace, capacity: Int, eviction: Eviction) -> HitCount {
        let keys = objectKeys(count: trace.sizes.count)
        let storage = MemoryStorage(
            byteLimit: byteLimit(trace, capacity: capacity, keys: keys),
            countLimit: Int.max, entryLimit: Int.max, eviction: eviction)
        var count = HitCount()
        for id in trace.requests {
            let index = Int(id)
            let size = trace.sizes[index]
            let hit = storage.recordNow(for: keys[index]) != nil
            // An object larger than the whole cache is never held.
            if !hit, size <= capacity { storage.storeNow(CacheRecord(key: keys[index], variants: [entry(size: size)])) }
            count.count(hit: hit, size: size)
        }
        return count
    }

    /// The storage limit that holds `capacity` bytes of bodies. A `MemoryStorage` charges each
    /// record its body plus an overhead (key, fields, bookkeeping: ``/Recall/CacheRecord/byteCount``),
    /// so the limit is the capacity plus the overhead of the objects that capacity holds on
    /// average, each object's overhead worked out with the storage's own charge for its record,
    /// and at least the largest overhead, so that any object of at most `capacity` bytes fits.
    /// A capacity of the whole working set holds every object, as Belady's does.
    static func byteLimit(_ trace: Trace, capacity: Int, keys: [String]) -> Int {
        var seen = [Bool](repeating: false, count: trace.sizes.count)
        var objects = 0, bodies = 0, overheads = 0, largest = 0
        for id in trace.requests where !seen[Int(id)] {
            seen[Int(id)] = true
            let size = trace.sizes[Int(id)]
            let overhead = CacheRecord(key: keys[Int(id)], variants: [entry(size: size)]).byteCount - size
            objects += 1
            bodies += size
            overheads += overhead
            largest = max(largest, overhead)
        }
        guard capacity > 0, objects > 0 else { return max(0, capacity) }
        // At or above the working set, everything fits: the overhead of all of it.
        guard capacity < bodies else { return capacity + overheads }
        // The objects `capacity` holds on average, rounded up (capacity × objects / bodies < objects),
        // and their share of the overheads, rounded up (at most `overheads`).
        let held = ceilingQuotient(capacity.multipliedFullWidth(by: objects), bodies)
        return capacity + max(largest, ceilingQuotient(overheads.multipliedFullWidth(by: held), objects))
    }

    /// ⌈product / divisor⌉, for a quotient that fits in an Int.
    private static func ceilingQuotient(_ product: (high: Int, low: UInt), _ divisor: Int) -> Int {
        let (quotient, remainder) = divisor.dividingFullWidth(product)
        return quotient + (remainder > 0 ? 1 : 0)
    }

    /// Belady's MIN with sizes: on a miss, admit, then evict the objects whose next use is
    /// furthest away (possibly the new one: a bypass). Optimal for equal sizes; the standard
    /// heuristic for varied sizes.
    public static func belady(_ trace: Trace, capacity: Int) -> HitCount {
        // Positions are Int32 (4 bytes a request): exact up to 2^31 - 1 requests, the most a
        // TraceBuilder makes; a longer synthetic trace is replayed up to there.
        let count = min(trace.requests.count, Int(Int32.max) - 1)
        let never = Int32.max
        var nextUse = [Int32](repeating: never, count: count)
        var last = [Int32](repeating: -1, count: trace.sizes.count)
        for index in stride(from: count - 1, through: 0, by: -1) {
            let id = trace.requests[index]
            let following = last[Int(id)]
            nextUse[index] = following < 0 ? never : following
            last[Int(id)] = Int32(index)
        }
        last = []
        var heap = MaxHeap()
        var cached = [Int32](repeating: -1, count: trace.sizes.count)  // id → its current next use, -1 when not held
        var held = 0
        var used = 0
        var result = HitCount()
        for index in 0..<count {
            let id = trace.requests[index]
            let size = trace.sizes[Int(id)]
            let hit = cached[Int(id)] >= 0
            if !hit {
                used += size
                held += 1
            }
            result.count(hit: hit, size: size)
            cached[Int(id)] = nextUse[index]
            heap.push(nextUse[index], id)
            while used > capacity, let (next, victim) = heap.pop() {
                guard cached[Int(victim)] == next else { continue }  // a stale heap entry
                cached[Int(victim)] = -1
                used -= trace.sizes[Int(victim)]
                held -= 1
            }
            // Each hit leaves a stale entry behind: rebuild the heap from the objects held once
            // stale entries outnumber them, so it grows with what is held, not with the requests.
            if heap.count > 2 * held + 1024 {
                heap = MaxHeap()
                for (object, next) in cached.enumerated() where next >= 0 { heap.push(next, Int32(object)) }
            }
        }
        return result
    }

    private static let blob = ZeroBytes.data(count: 1 << 20)

    /// Keys shaped like real ones (the storage hashes them), one per object.
    static func objectKeys(count: Int) -> [String] {
        (0..<count).map { "https://trace.test/object/\($0)" }
    }

    /// A stored response of `size` body bytes, zeros that cost no memory (``ZeroBytes``; bodies
    /// up to 1 MiB are slices of one view of them, larger ones views of their own).
    static func entry(size: Int) -> CacheEntry {
        let body = size <= blob.count ? blob.prefix(size) : ZeroBytes.data(count: size)
        return CacheEntry(
            status: 200, headers: [:], body: body, url: nil,
            requestTime: Date(timeIntervalSince1970: 0), responseTime: Date(timeIntervalSince1970: 0))
    }
}

/// A max-heap of (next use, object) pairs for Belady's replay: the furthest next use first,
/// and among equal ones (objects never used again) the lowest object number, so the order
/// pops come in does not depend on the order of pushes (nor on a rebuild).
struct MaxHeap {
    private var items: [(Int32, Int32)] = []

    /// The entries held, stale ones included.
    var count: Int { items.count }

    /// Whether `a` comes out before `b`.
    private static func precedes(_ a: (Int32, Int32), _ b: (Int32, Int32)) -> Bool {
        a.0 != b.0 ? a.0 > b.0 : a.1 < b.1
    }

    mutating func push(_ priority: Int32, _ id: Int32) {
        items.append((priority, id))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(items[child], items[parent]) else { break }
            items.swapAt(parent, child)
            child = parent
        }
    }

    mutating func pop() -> (Int32, Int32)? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < items.count, Self.precedes(items[left], items[first]) { first = left }
            if right < items.count, Self.precedes(items[right], items[first]) { first = right }
            guard first != parent else { break }
            items.swapAt(parent, first)
            parent = first
        }
        return top
    }
}
