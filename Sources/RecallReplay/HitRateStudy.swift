import Foundation
import Recall

/// The synthetic hit-ratio study of docs/benchmarks.md: six traces with the shapes real
/// workloads have, each replayed through every eviction policy at three cache sizes next to
/// Belady.
///
/// - Zipf α 0.8 and α 1.0 over 100,000 objects of 1 KB (web and CDN popularity);
/// - Zipf α 0.9 with sizes log-uniform from 256 B to 1 MiB, independent of popularity;
/// - Zipf α 1.0 with scans: one request in five belongs to a sequential scan of objects never
///   seen before (a crawler, a backup, a report);
/// - a loop over the same objects in the same order, a little larger than the cache (LRU's
///   worst case), with caches of 50 %, 80 % and 90 % of it;
/// - drifting popularity: a new object every 10 requests, requests Zipf over the newest
///   (a news site, a feed: recency is everything, LRU's best case).
///
/// Cache sizes of the Zipf traces are shares of the whole catalogue (the 100,000 objects, as
/// in the literature's "1 % cache"); those of the other traces, shares of what the trace
/// requests.
public struct HitRateStudy: Sendable {
    /// One trace and the cache sizes (shares of its working set) it is replayed at.
    public struct Case: Sendable {
        /// The trace.
        public var trace: Trace
        /// Cache sizes as shares of ``base``.
        public var fractions: [Double]
        /// What the shares are of, in bytes: the catalogue, or (nil) the bytes the trace requests.
        public var base: Int?

        /// The cache sizes of this case.
        public var sizes: [EvictionComparison.CacheSize] {
            EvictionComparison.shares(fractions, ofBytes: base ?? trace.workingSetBytes)
        }
    }

    /// The policies the study replays: every one Recall ships, and S3-FIFO with the paper's
    /// parameters (a 10 % small queue, a ghost as large as the main queue), which Recall's
    /// defaults were tuned against.
    public static let evictions: [Eviction] =
        EvictionComparison.policies + [
            Eviction(name: "S3-FIFO (paper)") { S3FIFOPolicy(smallRatio: 0.1, ghostRatio: 0.9) }
        ]

    /// The cases, in the order reported.
    public let cases: [Case]

    /// Makes the traces: `requests` requests over `objects` objects each (seeded, reproducible).
    public init(requests: Int = 1_000_000, objects: Int = 100_000) {
        var sizeRNG = SeededRandomSource(seed: 99)
        let uniform = [Int](repeating: 1024, count: objects)
        let varied = (0..<objects).map { _ in Int(pow(2, Double.random(in: 8...20, using: &sizeRNG))) }
        let shares = [0.001, 0.01, 0.1]
        let catalogue = objects * 1024
        cases = [
            Case(
                trace: .zipf(name: "Zipf α=0.8", alpha: 0.8, objects: objects, count: requests, seed: 1, sizes: uniform),
                fractions: shares, base: catalogue),
            Case(
                trace: .zipf(name: "Zipf α=1.0", alpha: 1.0, objects: objects, count: requests, seed: 2, sizes: uniform),
                fractions: shares, base: catalogue),
            Case(
                trace: .zipf(name: "Zipf α=0.9, varied sizes", alpha: 0.9, objects: objects, count: requests, seed: 3, sizes: varied),
                fractions: shares, base: varied.reduce(0, +)),
            Case(
                trace: .zipfWithScans(
                    name: "Zipf α=1.0 with scans", alpha: 1.0, objects: objects, count: requests,
                    scanLength: max(1, objects / 20), scanEvery: max(1, objects / 5), seed: 4, objectSize: 1024),
                fractions: shares, base: catalogue),
            Case(trace: .loop(name: "Loop", objects: max(1, objects / 10), count: requests, objectSize: 1024), fractions: [0.5, 0.8, 0.9]),
            Case(
                trace: .drifting(
                    name: "Drifting popularity", alpha: 1.0, live: max(1, objects / 10), newEvery: 10,
                    count: requests, seed: 5, objectSize: 1024), fractions: shares)
        ]
    }

    /// Replays every case through `evictions` (and Belady), returning one comparison per case.
    public func run(evictions: [Eviction] = HitRateStudy.evictions) -> [EvictionComparison] {
        cases.map { EvictionComparison(trace: $0.trace, sizes: $0.sizes, evictions: evictions) }
    }

    /// Runs the study and writes `hit-ratio-N.svg` per case into `directory`; returns one
    /// markdown table of every case.
    public func report(chartsIn directory: String, evictions: [Eviction] = HitRateStudy.evictions) throws -> String {
        let comparisons = run(evictions: evictions)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var tables: [String] = []
        for (index, comparison) in comparisons.enumerated() {
            try comparison.svg.write(toFile: "\(directory)/hit-ratio-\(index + 1).svg", atomically: true, encoding: .utf8)
            let rows = comparison.markdown.split(separator: "\n")
            tables.append((index == 0 ? rows : Array(rows.dropFirst(2))).joined(separator: "\n"))
        }
        return tables.joined(separator: "\n")
    }
}
