import Foundation
import Recall

extension Trace {
    /// Zipf(α) over `objects` objects, `count` requests; object numbers are shuffled so that
    /// popularity is not number order. Deterministic for a seed.
    public static func zipf(name: String, alpha: Double, objects: Int, count: Int, seed: UInt64, sizes: [Int]) -> Trace {
        var rng = SeededRandomSource(seed: seed)
        let sampler = ZipfSampler(alpha: alpha, objects: objects)
        let permutation = Array(0..<objects).shuffled(using: &rng)
        let requests = (0..<count).map { _ in Int32(permutation[sampler.next(using: &rng)]) }
        return Trace(name: name, requests: requests, sizes: sizes)
    }

    /// A Zipf(α) stream over `objects` hot objects into which sequential scans of new objects
    /// are mixed: every `scanEvery` Zipf requests, a scan of `scanLength` objects never seen
    /// before (a crawler, a backup, a report that touches everything once). Scans are what
    /// recency-only policies lose to: each pushes the popular objects out.
    public static func zipfWithScans(
        name: String, alpha: Double, objects: Int, count: Int, scanLength: Int,
        scanEvery: Int, seed: UInt64, objectSize: Int
    ) -> Trace {
        var rng = SeededRandomSource(seed: seed)
        let sampler = ZipfSampler(alpha: alpha, objects: objects)
        let permutation = Array(0..<objects).shuffled(using: &rng)
        var requests: [Int32] = []
        requests.reserveCapacity(count)
        var nextNew = objects
        var sinceScan = 0
        while requests.count < count {
            if sinceScan >= scanEvery {
                for _ in 0..<min(scanLength, count - requests.count) {
                    requests.append(Int32(nextNew))
                    nextNew += 1
                }
                sinceScan = 0
                continue
            }
            requests.append(Int32(permutation[sampler.next(using: &rng)]))
            sinceScan += 1
        }
        return Trace(name: name, requests: requests, sizes: [Int](repeating: objectSize, count: nextNew))
    }

    /// Popularity that drifts by recency, as on a news site or a feed: a new object appears
    /// every `newEvery` requests, and each request asks for the object of age rank r (0 the
    /// newest) with probability proportional to 1/(r+1)^α among the `live` newest. Recency is all
    /// that matters here: LRU is near the optimum, and a frequency filter must adapt (a policy
    /// that keeps yesterday's favourites loses).
    public static func drifting(
        name: String, alpha: Double, live: Int, newEvery: Int, count: Int, seed: UInt64,
        objectSize: Int
    ) -> Trace {
        var rng = SeededRandomSource(seed: seed)
        let sampler = ZipfSampler(alpha: alpha, objects: live)
        var requests: [Int32] = []
        requests.reserveCapacity(count)
        var newest = live - 1  // the trace starts with `live` objects published
        for index in 0..<count {
            if index > 0, index % max(1, newEvery) == 0 { newest += 1 }
            requests.append(Int32(newest - sampler.next(using: &rng)))
        }
        return Trace(name: name, requests: requests, sizes: [Int](repeating: objectSize, count: newest + 1))
    }

    /// The same `objects` objects requested in the same order again and again: a loop a little
    /// larger than the cache is LRU's worst case (it evicts each object just before its turn).
    public static func loop(name: String, objects: Int, count: Int, objectSize: Int) -> Trace {
        let requests = (0..<count).map { Int32($0 % objects) }
        return Trace(name: name, requests: requests, sizes: [Int](repeating: objectSize, count: objects))
    }
}

/// Draws ranks 0..<objects with probability proportional to 1/(rank+1)^α (inverse CDF by
/// binary search).
struct ZipfSampler {
    private let cdf: [Double]

    init(alpha: Double, objects: Int) {
        var cdf = [Double](repeating: 0, count: max(1, objects))
        var total = 0.0
        for rank in 0..<max(1, objects) {
            total += 1 / pow(Double(rank + 1), alpha)
            cdf[rank] = total
        }
        self.cdf = cdf
    }

    func next(using rng: inout some RandomNumberGenerator) -> Int {
        let target = Double.random(in: 0..<cdf[cdf.count - 1], using: &rng)
        var low = 0, high = cdf.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cdf[middle] < target { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
