import Foundation
import Recall

/// Hit ratios of one trace for each eviction policy and cache size, next to Belady's optimum:
/// the table and chart `recall replay` and the HitRates tool print.
public struct EvictionComparison: Sendable {
    /// One cache size: its label (such as "1 %" or "64 MB") and its capacity in bytes.
    public struct CacheSize: Sendable, Hashable {
        /// How the size is shown.
        public var label: String
        /// The capacity in bytes of bodies.
        public var bytes: Int

        /// Creates a size.
        public init(label: String, bytes: Int) {
            self.label = label
            self.bytes = bytes
        }
    }

    /// The trace's name.
    public let traceName: String
    /// The sizes, in the order replayed.
    public let sizes: [CacheSize]
    /// The policies' names in order, Belady last.
    public let policies: [String]
    /// `results[policy][size]`: the hit counts.
    public let results: [[HitCount]]

    /// The policies replayed by default: every one Recall ships.
    public static let policies: [Eviction] = [.lru, .s3fifo, .wTinyLFU]

    /// The name under which Belady's optimum appears.
    public static let beladyName = "Belady"

    /// Replays `trace` at each size through each policy and Belady.
    public init(trace: Trace, sizes: [CacheSize], evictions: [Eviction]) {
        traceName = trace.name
        self.sizes = sizes
        policies = evictions.map(\.name) + [Self.beladyName]
        var results: [[HitCount]] = evictions.map { eviction in
            sizes.map { EvictionReplay.run(trace, capacity: $0.bytes, eviction: eviction) }
        }
        results.append(sizes.map { EvictionReplay.belady(trace, capacity: $0.bytes) })
        self.results = results
    }

    /// Sizes as shares of the trace's working set (0.01 is 1 %).
    public static func shares(_ fractions: [Double], of trace: Trace) -> [CacheSize] {
        shares(fractions, ofBytes: trace.workingSetBytes)
    }

    /// Sizes as shares of `total` bytes (0.01 is 1 %).
    public static func shares(_ fractions: [Double], ofBytes total: Int) -> [CacheSize] {
        fractions.map { CacheSize(label: percent($0 * 100) + " %", bytes: Int(Double(total) * $0)) }
    }

    /// The hit counts of `policy` at every size, or nil for a policy not replayed.
    public func counts(for policy: String) -> [HitCount]? {
        policies.firstIndex(of: policy).map { results[$0] }
    }

    /// A markdown table: a row per size and policy, with object and byte hit ratios.
    public var markdown: String {
        var lines = ["| trace | cache size | policy | object hit ratio | byte hit ratio |", "|---|---|---|---|---|"]
        for (column, size) in sizes.enumerated() {
            for (row, policy) in policies.enumerated() {
                let count = results[row][column]
                lines.append("| \(traceName) | \(size.label) | \(policy) | \(percent(count.objectRatio * 100)) % | \(percent(count.byteRatio * 100)) % |")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// An SVG chart: cache size on x, hit ratio on y, one line per policy; objects on the left,
    /// bytes on the right.
    public var svg: String {
        HitRatioChart(
            title: traceName, xLabels: sizes.map(\.label),
            panels: [
                .init(title: "object hit ratio", series: policies.enumerated().map { ($0.element, results[$0.offset].map { $0.objectRatio * 100 }) }),
                .init(title: "byte hit ratio", series: policies.enumerated().map { ($0.element, results[$0.offset].map { $0.byteRatio * 100 }) })
            ]
        ).svg
    }
}

/// `value` with one decimal.
func percent(_ value: Double) -> String { String(format: "%.1f", value) }
