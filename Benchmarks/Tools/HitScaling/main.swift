import Foundation
import Recall
import RecallTesting
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Throughput of memory hits through the full pipeline (Pipeline + HTTPCache + MemoryStorage,
// mock transport, 1 KB body) with 1, 2, 8 and 64 concurrent tasks, each doing hits back to back:
//
//   swift run -c release HitScaling [--seconds S] [--rounds N] [--keys K] [--tasks 1,2,8,64]
//                                   [--share all|cache|storage|none] [--separate] [--copy-bytes B]
//
// Each round measures every task count for S seconds (default 1), alternating, so that machine
// drift lands on all of them; the table gives the median of the rounds' hits per second and the
// ratio to one task. --keys spreads the hits over K URLs (default 1: every task hits one key, the
// most contended case). --share says what the tasks share: `all` (the default: one pipeline),
// `cache` (a pipeline each around one HTTPCache), `storage` (a pipeline and cache each over one
// MemoryStorage) or `none` (nothing; `--separate` says the same): Recall's code with nothing
// shared between tasks, the ceiling that sharing less could reach. Every task's pipeline is made
// and warmed (each key stored) before the clock starts. --copy-bytes sets the caches'
// `copyBytesPerCore` (0: no per-core copies of hot records, the code path before them).
// The last line gives a cache line's round trip between two cores before and after the rounds
// (``CrossCoreProbe``): where the host has placed the VM's cores far apart, hits that share
// records between cores (many keys) run slower, and work that shares nothing does not.

var seconds = 1.0
var rounds = 3
var keyCount = 1
var counts = [1, 2, 8, 64]
/// What the tasks share.
enum Sharing: String { case all, cache, storage, none }
var sharing = Sharing.all
var configuration = CacheConfiguration()
func usage() -> Never {
    print("usage: HitScaling [--seconds S] [--rounds N] [--keys K] [--tasks 1,2,8,64] [--share all|cache|storage|none] [--separate] [--copy-bytes B]")
    exit(2)
}
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--seconds": seconds = Double(arguments.next() ?? "") ?? seconds
    case "--rounds": rounds = Int(arguments.next() ?? "") ?? rounds
    case "--keys": keyCount = max(1, Int(arguments.next() ?? "") ?? keyCount)
    case "--tasks": counts = (arguments.next() ?? "").split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
    case "--separate": sharing = .none
    case "--copy-bytes":
        guard let value = arguments.next().flatMap({ Int($0) }), value >= 0 else { usage() }
        configuration.copyBytesPerCore = value
    case "--share":
        guard let value = arguments.next(), let parsed = Sharing(rawValue: value) else { usage() }
        sharing = parsed
    default: usage()
    }
}

/// The caches' settings, as the arguments left them.
let cacheConfiguration = configuration

/// A mock origin serving `keyCount` URLs.
func makeOrigin(_ keyCount: Int) -> MockTransport {
    let mock = MockTransport()
    for key in 0..<keyCount {
        // A body of its own for each URL, as from a real origin. (With one `Data` shared by all
        // the responses, every hit of every key retained and released that one object from
        // both cores: the slow 1,000-key rounds of docs/benchmarks.md, "Hits over cores".)
        let body = Data(repeating: 0x61, count: 1024)
        mock.route("GET", "/items/\(key)", .response(RecallResponse(status: 200, headers: ["Cache-Control": "max-age=86400", "ETag": "\"1\""], body: body)))
    }
    return mock
}
/// What every task shares under `--share all`, `cache` and `storage`.
let sharedStorage = MemoryStorage()
let sharedCache = HTTPCache(storage: sharedStorage, configuration: cacheConfiguration)
let sharedPipeline = Pipeline(transport: makeOrigin(keyCount), hooks: [sharedCache])
/// The pipeline of one task.
func makePipeline(_ keyCount: Int, _ sharing: Sharing) -> Pipeline {
    switch sharing {
    case .all: sharedPipeline
    case .cache: Pipeline(transport: makeOrigin(keyCount), hooks: [sharedCache])
    case .storage: Pipeline(transport: makeOrigin(keyCount), hooks: [HTTPCache(storage: sharedStorage, configuration: cacheConfiguration)])
    case .none: Pipeline(transport: makeOrigin(keyCount), hooks: [HTTPCache(storage: MemoryStorage(), configuration: cacheConfiguration)])
    }
}
/// The requests of one caller: each task makes its own, as concurrent callers do (a URLRequest
/// is a reference to a shared Foundation object when copied).
func makeRequests(_ keyCount: Int) -> [URLRequest] {
    (0..<keyCount).map { URLRequest(url: URL(string: "https://bench.test/items/\($0)?b=2&a=1")!) }
}
for request in makeRequests(keyCount) { _ = try await sharedPipeline.send(request) }

/// Work units per second of a computation that shares nothing (hashing integers in a local
/// hasher): what the machine itself gives `tasks` tasks, the ceiling of any scaling.
func ceiling(tasks: Int, seconds: Double) async -> Double {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    let start = ContinuousClock.now
    let total = await withTaskGroup(of: Int.self) { group in
        for task in 0..<tasks {
            group.addTask {
                var count = 0
                var hasher = Hasher()
                while ContinuousClock.now < deadline {
                    for value in 0..<2_000 { hasher.combine(value &+ task) }
                    count += 1
                }
                return count &+ (hasher.finalize() == 42 ? 1 : 0)
            }
        }
        return await group.reduce(0, +)
    }
    let elapsed = ContinuousClock.now - start
    return Double(total) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
}

/// Hits per second with `tasks` tasks hitting for `seconds`.
func measure(tasks: Int, seconds: Double, keyCount: Int, sharing: Sharing) async -> Double {
    // Each task's pipeline and requests, made and warmed before the clock starts.
    var callers: [(Pipeline, [URLRequest])] = []
    for _ in 0..<tasks {
        let pipeline = makePipeline(keyCount, sharing)
        let requests = makeRequests(keyCount)
        if sharing == .none { for request in requests { _ = try? await pipeline.send(request) } }
        callers.append((pipeline, requests))
    }
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    let start = ContinuousClock.now
    let total = await withTaskGroup(of: Int.self) { group in
        for task in 0..<tasks {
            let (pipeline, requests) = callers[task]
            group.addTask {
                var count = 0
                var index = task % requests.count
                while ContinuousClock.now < deadline {
                    for _ in 0..<100 {
                        _ = try? await pipeline.send(requests[index])
                        index = (index + 1) % requests.count
                    }
                    count += 100
                }
                return count
            }
        }
        return await group.reduce(0, +)
    }
    let elapsed = ContinuousClock.now - start
    return Double(total) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
}

var results: [Int: [Double]] = [:]
var machine: [Int: [Double]] = [:]
let roundTripBefore = await CrossCoreProbe.roundTrip()
_ = await measure(tasks: 2, seconds: seconds, keyCount: keyCount, sharing: sharing)  // warm up
for _ in 0..<rounds {
    for tasks in counts {
        results[tasks, default: []].append(await measure(tasks: tasks, seconds: seconds, keyCount: keyCount, sharing: sharing))
        machine[tasks, default: []].append(await ceiling(tasks: tasks, seconds: seconds))
    }
}
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
let base = median(results[counts[0]]!)
let machineBase = median(machine[counts[0]]!)
let unit = "× \(counts[0]) task\(counts[0] == 1 ? "" : "s")"
print("| tasks | hits/s (median of \(rounds)) | \(unit) | machine ceiling: shared-nothing work, \(unit) | hits/s of each round |")
print("|---|---|---|---|---|")
for tasks in counts {
    let values = results[tasks]!
    print(
        "| \(tasks) | \(Int(median(values))) | \(String(format: "%.2f", median(values) / base)) | "
            + "\(String(format: "%.2f", median(machine[tasks]!) / machineBase)) | "
            + values.map { String(Int($0 / 1000)) + " k" }.joined(separator: ", ") + " |")
}
let roundTripAfter = await CrossCoreProbe.roundTrip()
let shares = [
    Sharing.all: "one pipeline", .cache: "one cache, a pipeline per task", .storage: "one storage, a pipeline and cache per task",
    .none: "a pipeline, cache and storage per task"
]
print(
    "(\(ProcessInfo.processInfo.activeProcessorCount) cores; \(keyCount) key\(keyCount == 1 ? "" : "s"); \(shares[sharing]!); copyBytesPerCore \(configuration.copyBytesPerCore))"
)
if let before = roundTripBefore, let after = roundTripAfter {
    print(
        String(
            format: "(a cache line's round trip between two cores: %.0f ns before the rounds, %.0f ns after;"
                + " here ~90 ns with the VM's cores near each other, ~400 ns far apart: see docs/benchmarks.md)", before, after))
} else {
    print("(a cache line's round trip between two cores: not measured here, as threads cannot be pinned to two cores)")
}
