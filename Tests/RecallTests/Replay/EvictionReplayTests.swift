import Foundation
import Recall
@testable import RecallReplay
import Testing

/// Review point 10: a cache of "x % of the working set" in the eviction table holds x % of it,
/// charged as the storage charges its records.
@Suite("Replay: eviction replays at a share of the working set")
struct EvictionReplayTests {
    /// `objects` objects requested in order, twice: a cache holding them all hits the whole
    /// second pass (50 %); one an object short, under LRU, hits nothing.
    private static func twoPasses(sizes: [Int]) -> Trace {
        let first = (0..<sizes.count).map { Int32($0) }
        return Trace(name: "two passes", requests: first + first, sizes: sizes)
    }

    @Test(
        "at 100 % of the working set every policy holds every object: a two-pass trace hits 50 %",
        arguments: ["equal sizes", "varied sizes"])
    func wholeWorkingSet(shape: String) {
        let sizes = shape == "equal sizes" ? [Int](repeating: 1_000, count: 400) : (0..<400).map { [0, 9, 15, 100, 4_096, 70_000, 3 << 20][$0 % 7] }
        let trace = Self.twoPasses(sizes: sizes)
        let comparison = EvictionComparison(
            trace: trace, sizes: EvictionComparison.shares([1.0], of: trace),
            evictions: EvictionComparison.policies)
        for policy in comparison.policies {
            let count = comparison.counts(for: policy)?.first
            #expect(count?.objectHits == sizes.count, "\(shape), \(policy): \(String(describing: count))")
            #expect(count?.byteHits == sizes.reduce(0, +), "\(shape), \(policy)")
        }
    }

    @Test("a share of the working set gets the storage's charge for the objects it holds on average, at least one")
    func limitFollowsTheStoragesCharge() {
        let sizes = (0..<100).map { [10, 1_000, 50_000][$0 % 3] }
        let trace = Self.twoPasses(sizes: sizes)
        let keys = EvictionReplay.objectKeys(count: sizes.count)
        let charged = sizes.indices.reduce(0) { $0 + CacheRecord(key: keys[$1], variants: [EvictionReplay.entry(size: sizes[$1])]).byteCount }
        let bodies = sizes.reduce(0, +)
        let overheads = charged - bodies
        #expect(EvictionReplay.byteLimit(trace, capacity: bodies, keys: keys) == charged)
        #expect(EvictionReplay.byteLimit(trace, capacity: 2 * bodies, keys: keys) == charged + bodies)
        // Half the bytes hold half the objects on average, and their overhead.
        #expect(EvictionReplay.byteLimit(trace, capacity: bodies / 2, keys: keys) == bodies / 2 + overheads / 2)
        // A cache smaller than an average object still takes any object of its size.
        let small = EvictionReplay.byteLimit(trace, capacity: 1_000, keys: keys)
        #expect(small >= CacheRecord(key: keys[1], variants: [EvictionReplay.entry(size: 1_000)]).byteCount)
        #expect(EvictionReplay.byteLimit(trace, capacity: 0, keys: keys) == 0)
    }
}
