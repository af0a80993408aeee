import Foundation
import Recall
import RecallTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// What a cache miss adds to a real loopback round trip: the same kind of request, sent in
// alternating order (bare, cached, cached, bare, …) to the same origin, so that the server's
// and the machine's drift affect both sides alike. Every cached request is a miss that stores.
//
//   swift run -c release MissOverhead [--pairs N] [--no-cache]

var pairs = 2000
var withCache = true
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    if argument == "--pairs", let value = arguments.next().flatMap(Int.init) {
        pairs = value
    } else if argument == "--no-cache" {
        withCache = false // the pipeline alone, to separate its cost from the cache's
    } else {
        print("usage: MissOverhead [--pairs N] [--no-cache]")
        exit(2)
    }
}

let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Tests/RecallTests/Support/origin_server.py")
let server = try LoopbackOrigin(script: script)

let bare = URLSessionTransport()
let cache = HTTPCache(storage: MemoryStorage())
let cached = Pipeline(transport: URLSessionTransport(), hooks: withCache ? [cache] : [])
func url(_ kind: String, _ number: Int) -> URL {
    server.url("/\(kind)", [("n", String(number)), ("cc", "max-age=600"), ("size", "1024")])
}

let clock = ContinuousClock()
func measure(_ body: () async throws -> Void) async rethrows -> Double {
    let start = clock.now
    try await body()
    let elapsed = start.duration(to: clock.now)
    return Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) * 1e-12
}

// Warm up both connections.
for number in 0..<200 {
    _ = try await bare.send(URLRequest(url: url("bare", -number - 1)))
    _ = try await cached.send(URLRequest(url: url("cached", -number - 1)))
}
var bareTimes: [Double] = [], cachedTimes: [Double] = []
for number in 0..<pairs {
    let bareFirst = number % 2 == 0
    for turn in 0..<2 {
        if (turn == 0) == bareFirst {
            bareTimes.append(try await measure { _ = try await bare.send(URLRequest(url: url("bare", number))) })
        } else {
            cachedTimes.append(try await measure { _ = try await cached.send(URLRequest(url: url("cached", number))) })
        }
    }
}
precondition(!withCache || (cache.statistics.misses >= pairs && cache.statistics.stores >= pairs),
             "every cached request must be a miss that stores")

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
print("| | p25 (µs) | p50 (µs) | p75 (µs) | mean (µs) |")
print("|---|---|---|---|---|")
for (name, values) in [("bare URLSessionTransport", bareTimes), ("Pipeline + HTTPCache (miss, store)", cachedTimes)] {
    print(String(format: "| %@ | %.0f | %.0f | %.0f | %.0f |", name, percentile(values, 0.25), percentile(values, 0.5),
                 percentile(values, 0.75), values.reduce(0, +) / Double(values.count)))
}
let ratio = percentile(cachedTimes, 0.5) / percentile(bareTimes, 0.5)
print(String(format: "\nmiss / bare at p50: %.3f (%+.1f %%), %d pairs, %d misses stored", ratio, (ratio - 1) * 100, pairs, cache.statistics.stores))
