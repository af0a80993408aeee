import Foundation
import Recall

// Trace replay: hit ratios (objects and bytes) of Recall's MemoryStorage under each eviction
// policy, next to Belady's offline optimum, for Zipf traces and a trace of varied sizes.
// Used by the `HitRates` tool and by the `HitRateReplay` benchmark.

public struct Trace: Sendable {
    /// A name for tables and charts.
    public let name: String
    /// The object requested by each request.
    public let requests: [Int32]
    /// The size of each object, in bytes.
    public let sizes: [Int]
}

/// Zipf(α) over `objects` ids, `count` requests; ids are shuffled so popularity is not id order.
public func zipfTrace(name: String, alpha: Double, objects: Int, count: Int, seed: UInt64, sizes: [Int]) -> Trace {
    var rng = SeededRandomSource(seed: seed)
    var cdf = [Double](repeating: 0, count: objects)
    var total = 0.0
    for rank in 0..<objects {
        total += 1 / pow(Double(rank + 1), alpha)
        cdf[rank] = total
    }
    let permutation = Array(0..<objects).shuffled(using: &rng)
    var requests = [Int32](repeating: 0, count: count)
    for index in 0..<count {
        let target = Double.random(in: 0..<total, using: &rng)
        var low = 0, high = objects - 1
        while low < high {
            let middle = (low + high) / 2
            if cdf[middle] < target { low = middle + 1 } else { high = middle }
        }
        requests[index] = Int32(permutation[low])
    }
    return Trace(name: name, requests: requests, sizes: sizes)
}

/// Hits and requests of one replay.
public struct Outcome: Sendable {
    public var objectHits = 0
    public var byteHits = 0
    public var requests = 0
    public var bytes = 0
    /// Hits over requests.
    public var objectRatio: Double { Double(objectHits) / Double(max(1, requests)) }
    /// Bytes served from cache over bytes requested.
    public var byteRatio: Double { Double(byteHits) / Double(max(1, bytes)) }
}

let keys = (0..<1_000_000).map { "https://trace.test/object/\($0)" }
let blob = Data(count: 4 << 20)

/// Replays `trace` through a MemoryStorage holding `capacity` bytes of bodies.
public func replay(_ trace: Trace, capacity: Int, eviction: Eviction) -> Outcome {
    // Budget the storage by its own accounting: body plus the record's fixed overhead.
    let overhead = CacheRecord(key: keys[0], variants: [entry(size: 0)]).byteCount
    let objectsHeld = trace.requests.count // upper bound for the count limit
    let storage = MemoryStorage(byteLimit: capacity + overhead * max(1, capacity / max(1, averageSize(trace))),
                                countLimit: objectsHeld, entryLimit: Int.max, eviction: eviction)
    var outcome = Outcome()
    for id in trace.requests {
        let index = Int(id)
        let size = trace.sizes[index]
        outcome.requests += 1
        outcome.bytes += size
        if storage.recordNow(for: keys[index]) != nil {
            outcome.objectHits += 1
            outcome.byteHits += size
        } else {
            storage.storeNow(CacheRecord(key: keys[index], variants: [entry(size: size)]))
        }
    }
    return outcome
}

func entry(size: Int) -> CacheEntry {
    CacheEntry(status: 200, headers: [:], body: blob.prefix(size), url: nil,
               requestTime: Date(timeIntervalSince1970: 0), responseTime: Date(timeIntervalSince1970: 0))
}

func averageSize(_ trace: Trace) -> Int {
    let distinct = Set(trace.requests)
    return distinct.reduce(0) { $0 + trace.sizes[Int($1)] } / max(1, distinct.count)
}

/// Belady's MIN with sizes: on a miss, admit, then evict the objects whose next use is furthest
/// (possibly the new one: a bypass). Optimal for equal sizes; the standard heuristic otherwise.
public func belady(_ trace: Trace, capacity: Int) -> Outcome {
    let count = trace.requests.count
    var nextUse = [Int](repeating: Int.max, count: count)
    var last = [Int32: Int]()
    for index in stride(from: count - 1, through: 0, by: -1) {
        let id = trace.requests[index]
        nextUse[index] = last[id] ?? Int.max
        last[id] = index
    }
    var heap = Heap()
    var cached = [Int32: Int]() // id → its current next use
    var used = 0
    var outcome = Outcome()
    for index in 0..<count {
        let id = trace.requests[index]
        let size = trace.sizes[Int(id)]
        outcome.requests += 1
        outcome.bytes += size
        if cached[id] != nil {
            outcome.objectHits += 1
            outcome.byteHits += size
        } else {
            used += size
        }
        cached[id] = nextUse[index]
        heap.push((nextUse[index], id))
        while used > capacity, let (next, victim) = heap.pop() {
            guard cached[victim] == next else { continue } // stale heap entry
            cached[victim] = nil
            used -= trace.sizes[Int(victim)]
        }
    }
    return outcome
}

/// A max-heap on next use.
struct Heap {
    var items: [(Int, Int32)] = []
    mutating func push(_ item: (Int, Int32)) {
        items.append(item)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[parent].0 < items[child].0 else { break }
            items.swapAt(parent, child)
            child = parent
        }
    }
    mutating func pop() -> (Int, Int32)? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var largest = parent
            if left < items.count, items[left].0 > items[largest].0 { largest = left }
            if right < items.count, items[right].0 > items[largest].0 { largest = right }
            guard largest != parent else { break }
            items.swapAt(parent, largest)
            parent = largest
        }
        return top
    }
}


/// Replays the three traces at three cache sizes for each policy and Belady; returns a
/// markdown table and writes one SVG chart per trace into `outDirectory`.
public func hitRateReport(requests requestCount: Int = 1_000_000, objects objectCount: Int = 100_000,
                          outDirectory: String) throws -> String {
    var lines: [String] = []
    var sizeRNG = SeededRandomSource(seed: 99)
    let uniform = [Int](repeating: 1024, count: objectCount)
    // Varied sizes: log-uniform between 256 B and 1 MiB, independent of popularity.
    let varied = (0..<objectCount).map { _ in Int(pow(2, Double.random(in: 8...20, using: &sizeRNG))) }
    let traces = [
        zipfTrace(name: "Zipf α=0.8", alpha: 0.8, objects: objectCount, count: requestCount, seed: 1, sizes: uniform),
        zipfTrace(name: "Zipf α=1.0", alpha: 1.0, objects: objectCount, count: requestCount, seed: 2, sizes: uniform),
        zipfTrace(name: "Zipf α=0.9, varied sizes", alpha: 0.9, objects: objectCount, count: requestCount, seed: 3, sizes: varied),
    ]
    let fractions = [0.001, 0.01, 0.1]
    let policies: [Eviction] = [.lru, .s3fifo]

    lines.append("| trace | cache size | policy | object hit ratio | byte hit ratio |")
    lines.append("|---|---|---|---|---|")
    var chartData: [(trace: String, series: [String: [Double]])] = []
    for trace in traces {
        let workingSet = Set(trace.requests).reduce(0) { $0 + trace.sizes[Int($1)] }
        var series: [String: [Double]] = [:]
        for fraction in fractions {
            let capacity = Int(Double(workingSet) * fraction)
            var rows: [(String, Outcome)] = policies.map { ($0.name, replay(trace, capacity: capacity, eviction: $0)) }
            rows.append(("Belady", belady(trace, capacity: capacity)))
            for (name, outcome) in rows {
                lines.append(String(format: "| %@ | %.1f %% | %@ | %.1f %% | %.1f %% |", trace.name, fraction * 100, name,
                             outcome.objectRatio * 100, outcome.byteRatio * 100))
                series[name, default: []].append(outcome.objectRatio * 100)
            }
        }
        chartData.append((trace.name, series))
    }

    // SVG charts: hit ratio versus cache size, one line per policy.

    func svg(title: String, series: [String: [Double]]) -> String {
        let width = 520.0, height = 320.0, left = 60.0, right = 130.0, top = 40.0, bottom = 50.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let maximum = max(10, ((series.values.flatMap { $0 }.max() ?? 100) / 10).rounded(.up) * 10)
        func x(_ index: Int) -> Double { left + plotWidth * Double(index) / Double(fractions.count - 1) }
        func y(_ value: Double) -> Double { top + plotHeight * (1 - value / maximum) }
        let colors = ["LRU": "#d62728", "S3-FIFO": "#1f77b4", "Belady": "#2ca02c"]
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        out += "<text x=\"\(Int(width / 2))\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">Hit ratio vs cache size — \(title)</text>\n"
        for tick in stride(from: 0.0, through: maximum, by: maximum / 5) {
            out += "<line x1=\"\(left)\" y1=\"\(y(tick))\" x2=\"\(left + plotWidth)\" y2=\"\(y(tick))\" stroke=\"#ddd\"/>\n"
            out += "<text x=\"\(left - 8)\" y=\"\(y(tick) + 4)\" text-anchor=\"end\">\(Int(tick)) %</text>\n"
        }
        for (index, fraction) in fractions.enumerated() {
            out += "<text x=\"\(x(index))\" y=\"\(top + plotHeight + 20)\" text-anchor=\"middle\">\(fraction * 100) %</text>\n"
        }
        out += "<text x=\"\(left + plotWidth / 2)\" y=\"\(height - 8)\" text-anchor=\"middle\">cache size (share of the working set)</text>\n"
        for (offset, name) in ["LRU", "S3-FIFO", "Belady"].enumerated() {
            guard let values = series[name] else { continue }
            let color = colors[name] ?? "black"
            let points = values.enumerated().map { "\(x($0.offset)),\(y($0.element))" }.joined(separator: " ")
            out += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(points)\"/>\n"
            for (index, value) in values.enumerated() {
                out += "<circle cx=\"\(x(index))\" cy=\"\(y(value))\" r=\"3\" fill=\"\(color)\"/>\n"
            }
            let legendY = top + 10 + Double(offset) * 20
            out += "<line x1=\"\(left + plotWidth + 15)\" y1=\"\(legendY)\" x2=\"\(left + plotWidth + 35)\" y2=\"\(legendY)\" stroke=\"\(color)\" stroke-width=\"2\"/>\n"
            out += "<text x=\"\(left + plotWidth + 40)\" y=\"\(legendY + 4)\">\(name)</text>\n"
        }
        return out + "</svg>\n"
    }

    try? FileManager.default.createDirectory(atPath: outDirectory, withIntermediateDirectories: true)
    for (index, chart) in chartData.enumerated() {
        let path = "\(outDirectory)/hit-ratio-\(index + 1).svg"
        try svg(title: chart.trace, series: chart.series).write(toFile: path, atomically: true, encoding: .utf8)
        lines.append("wrote \(path)")
    }
    return lines.joined(separator: "\n")
}
