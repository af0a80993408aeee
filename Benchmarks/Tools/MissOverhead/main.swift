import Foundation
import Synchronization
import Recall
import RecallTesting
import MissPathParts
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// What a cache miss adds to a real loopback round trip: the same kind of request, sent in
// turn, the sides taking every order in turn, to the same origin, so that the server's
// and the machine's drift affect both sides alike. Every cached request is a miss that stores.
//
//   swift run -c release MissOverhead [--pairs N] [--no-cache] [--variant V] [--stages] [--floor] [--keys-only]
//   (with a variant that has an HTTPCache, but timed, a minimal cache runs in the same rotation: `miss-gap-to-minimal
//   P points`; with --floor, RFCFloorCache and FusedFloorCache too: `rfc-floor-gap-to-minimal`, `miss-gap-to-rfc-floor`,
//   `fused-floor-gap-to-minimal`, `miss-gap-to-fused-floor`; the sides take every order in turn)
//   swift run -c release MissOverhead --cold N [--thrash MB] [--no-cache] [--variant V]
//   swift run -c release MissOverhead --cold N [--thrash MB] --features
//   swift run -c release MissOverhead --cpu N [--rounds R] [--variant V] [--only bare|minimal|variant]
//
// The last line gives the ratio of the medians, with a 95 % bootstrap interval of it.
//
// Variants: cache (the default: the target's measurement), full (a storage full from the
// start, so that every store evicts one: memory is reused, as in a cache at its steady state),
// roomy (a storage that never fills in a run: no store evicts; with --cpu, what eviction costs),
// minimal (a hook that only keys, reads and writes one table: a floor for any cache), rfc-floor
// (RFCFloorCache: the minimal cache plus RFC 9111's own work on a miss — the request's
// Cache-Control, the response's caching fields parsed into an entry, the storing rules), raw-table
// (the same, keyed by the URL's text as it comes), keying alone before the transport: url-text
// (reads the URL's text), canonical (CacheKeyPolicy's canonical URL), key (HTTPCache.key(for:));
// timed (the cache inside a hook that reads the thread's CPU time around each call: it tells
// where the time goes, and its own clock calls add about 2 % to the ratio), write-behind, no-store, no-coalescing,
// noop-hook, timed-noop (the timing hook around a hook that does nothing), timed-minimal and
// timed-floor (the timing hook around MinimalCache, around RFCFloorCache). --stages wraps every
// side's transport in one that time stamps its calls, and splits each side's median into the
// time before the transport is called, in it, and after it returns.
//
// --cold N times N misses in-process instead, through a transport that answers at once, each
// after writing over MB megabytes (4 by default) so that the core's caches hold something else,
// as they do after a network wait: the same cost without the network's noise (±0.5 µs between
// runs, against ±4 µs for the loopback's ratio). See docs/benchmarks.md, "A miss over loopback", for how cold is cold.
// With --features, eight sides take turns in one process: bare, the minimal cache, the RFC floor,
// the fused floor (FusedFloorCache: the parts a lone miss needs, with nothing between them),
// HTTPCache without coalescing, without per-core copies, with LRU instead of S3-FIFO, and as it
// comes; it prints each over bare and the cache over each (`cache-over-rfc-floor`,
// `cold-gap-to-minimal`): what the cache's parts cost cold, free of the drift between processes.
//
// --cpu N sends N misses in-process from 16 callers at once, through the same instant transport,
// bare, through the variant and through the minimal cache, each round in another order of the
// three (all six in turn): the process's CPU time per request, stores included (the cache is
// flushed before the clock stops). What the cache adds to a miss under concurrency, without the
// network's and the client's noise; it reads `cpu-gap-to-minimal M µs` (the cache's added CPU
// per miss less the minimal's) and the same gap round by round (its median, least and most).

var pairs = 2000
var withCache = true
var variant = "cache"
var keysOnly = false
var withFloor = false
var stages = false
var cold: (count: Int, thrashMB: Int)?
var cpuLoad: Int?
var rounds = 6
var only: String?  // --cpu: run one of the three alone (for a profile)
var features = false  // --cold: the floors and the cache with and without its parts, in one rotation
// The variants with an HTTPCache (whose statistics the run checks), and those without one.
let cacheVariants = ["cache", "full", "roomy", "timed", "write-behind", "no-store", "no-coalescing"]
let variants = cacheVariants + ["minimal", "raw-table", "url-text", "canonical", "key", "noop-hook", "timed-noop", "timed-minimal", "timed-floor", "rfc-floor"]
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    if argument == "--pairs", let value = arguments.next().flatMap(Int.init) {
        pairs = value
    } else if argument == "--no-cache" {
        withCache = false  // the pipeline alone, to separate its cost from the cache's
        variant = "none"
    } else if argument == "--floor" {
        withFloor = true  // with a cache variant, RFCFloorCache in the rotation too
    } else if argument == "--stages" {
        stages = true  // time stamps around the transport: before it, in it, after it
    } else if argument == "--cold", let value = arguments.next().flatMap(Int.init) {
        cold = (value, cold?.thrashMB ?? 4)  // misses in-process, each after evicting the core's caches
    } else if argument == "--cpu", let value = arguments.next().flatMap(Int.init) {
        cpuLoad = value  // CPU time per miss in-process, 16 callers at once
    } else if argument == "--only", let value = arguments.next(), ["bare", "minimal", "variant"].contains(value) {
        only = value  // --cpu: that target alone, for `perf record`
    } else if argument == "--rounds", let value = arguments.next().flatMap(Int.init) {
        rounds = max(1, value)
    } else if argument == "--features" {
        features = true
    } else if argument == "--thrash", let value = arguments.next().flatMap(Int.init) {
        cold = (cold?.count ?? 2000, value)
    } else if argument == "--keys-only" {
        keysOnly = true  // only the cache key of new URLs, in-process: see docs/benchmarks.md, "A miss over loopback"
    } else if argument == "--variant", let value = arguments.next(), variants.contains(value) {
        variant = value  // parts of the miss path, to find what costs: see docs/benchmarks.md, "A miss over loopback"
        withCache = cacheVariants.contains(value)
    } else {
        print(
            "usage: MissOverhead [--pairs N] [--no-cache] [--variant \(variants.joined(separator: "|"))] [--stages] [--floor] [--keys-only]"
                + " [--cold N [--thrash MB] [--features]] [--cpu N [--rounds R]]")
        exit(2)
    }
}

if features, cold == nil {
    print("--features runs with --cold N")
    exit(2)
}
if withFloor, cold != nil || cpuLoad != nil || !cacheVariants.contains(variant) || variant == "timed" {
    print("--floor runs beside a cache variant over the loopback (not with --cold, --cpu, --no-cache, timed or a keying variant)")
    exit(2)
}

/// Keys each request before the transport and does nothing else: what keying alone costs.
final class KeyingHook: ServiceHook {
    let key: @Sendable (URLRequest) -> String?
    /// The keys' lengths added up, so that no key can be left unmade.
    let bytes = Atomic<Int>(0)
    init(key: @escaping @Sendable (URLRequest) -> String?) { self.key = key }
    func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        bytes.wrappingAdd(key(request)?.utf8.count ?? 0, ordering: .relaxed)
        return .proceed(request)
    }
}

/// A storage that keeps nothing: the cache's miss path without the store.
final class DroppingStorage: CacheStorage {
    let secret: [UInt8] = Array(repeating: 7, count: 32)
    func record(for key: String) async -> CacheRecord? { nil }
    func store(_ record: CacheRecord, expires: Date?) async {}
    func remove(_ key: String) async {}
    func removeAll() async {}
    func flush() async {}
    var statistics: StorageStatistics { StorageStatistics() }
}

if keysOnly {
    let keyCache = HTTPCache(storage: MemoryStorage())
    let requests = (0..<20_000).map { URLRequest(url: URL(string: "http://127.0.0.1:43210/cached?n=\($0)&cc=max-age%3D600&size=1024")!) }
    let start = ContinuousClock.now
    var total = 0
    for request in requests { total &+= keyCache.key(for: request)?.utf8.count ?? 0 }
    let elapsed = ContinuousClock.now - start
    print(
        "key(for:) of a new URL: \(Double(elapsed.components.attoseconds) * 1e-12 / 20_000 + Double(elapsed.components.seconds) * 1e6 / 20_000) µs (\(total))")
    exit(0)
}
/// Answers every request at once, as the origin does: a new response each time (1 KB,
/// `max-age=600`), made from a Foundation response as ``URLSessionTransport`` makes it.
struct InstantTransport: Transport {
    var respondsToCancellation: Bool { true }
    func send(_ request: URLRequest) async throws -> RecallResponse {
        let http = HTTPURLResponse(
            url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1",
            headerFields: ["Cache-Control": "max-age=600", "Content-Length": "1024"])!
        return RecallResponse(http, body: Data(repeating: 0x61, count: 1024))
    }
}

// The cached side: the cache and the hooks the variant asks for.
var configuration = CacheConfiguration()
configuration.coalescesRequests = variant != "no-coalescing"
configuration.writesBehind = variant == "write-behind"
/// The storage `variant` asks for (a new one each call).
func makeStorage(_ variant: String) -> any CacheStorage {
    switch variant {
    case "no-store": DroppingStorage()
    case "full": MemoryStorage(countLimit: 500)  // full from the start: every store evicts one (steady state)
    case "roomy": MemoryStorage(byteLimit: 1 << 32, countLimit: 10_000_000)  // never full in a run: no evictions
    default: MemoryStorage()
    }
}
let cache = HTTPCache(storage: makeStorage(variant), configuration: configuration)
let timedInner: any ServiceHook =
    switch variant {
    case "timed-noop": NoopHook()
    case "timed-minimal": MinimalCache()
    case "timed-floor": RFCFloorCache()
    default: cache
    }
let timed = TimedHook(timedInner)
let hooks: [any ServiceHook] =
    switch variant {
    case "none": []
    case "noop-hook": [NoopHook()]
    case "minimal": [MinimalCache()]
    case "rfc-floor": [RFCFloorCache()]
    case "raw-table": [MinimalCache(key: Keying.urlText)]
    case "url-text": [KeyingHook(key: Keying.urlText)]
    case "canonical": [KeyingHook(key: Keying.canonical)]
    case "key": [KeyingHook(key: Keying.cacheKey)]
    case "timed", "timed-noop", "timed-minimal", "timed-floor": [timed]
    default: [cache]
    }

if let (count, thrashMB) = cold {
    // What a miss costs when the core's caches hold something else, as they do after waiting
    // 400 µs for the network: before each request, write over `thrashMB` MB (more than the
    // core's L2), then time one new URL, bare or through Pipeline + HTTPCache, alternating.
    guard features else {
        let times = try await coldMisses(
            through: [InstantTransport(), Pipeline(transport: InstantTransport(), hooks: hooks)], count: count, thrashMB: thrashMB,
            flush: { [cache] side in if side == 1 { await cache.flush() } })
        await cache.flush()
        print(
            String(
                format: "cold miss, %d MB thrashed: bare %.2f µs, pipeline %.2f µs, difference %.2f µs (medians of %d)",
                thrashMB, median(times[0]), median(times[1]), median(times[1]) - median(times[0]), count))
        exit(0)
    }
    // --features: the floors and the cache with and without its parts, in one rotation.
    var alone = CacheConfiguration()
    alone.coalescesRequests = false
    var uncopied = CacheConfiguration()
    uncopied.copyBytesPerCore = 0
    let floor = RFCFloorCache()
    let fused = FusedFloorCache()
    let caches = [
        ("cache-without-coalescing", HTTPCache(storage: MemoryStorage(), configuration: alone)),
        ("cache-without-core-copies", HTTPCache(storage: MemoryStorage(), configuration: uncopied)),
        ("cache-with-lru", HTTPCache(storage: MemoryStorage(eviction: .lru))),
        ("cache", HTTPCache(storage: MemoryStorage()))
    ]
    let sides: [(name: String, transport: any Transport)] =
        [
            ("bare", InstantTransport()),
            ("minimal", Pipeline(transport: InstantTransport(), hooks: [MinimalCache()])),
            ("rfc-floor", Pipeline(transport: InstantTransport(), hooks: [floor])),
            ("fused-floor", Pipeline(transport: InstantTransport(), hooks: [fused]))
        ] + caches.map { ($0.0, Pipeline(transport: InstantTransport(), hooks: [$0.1])) }
    let times = try await coldMisses(
        through: sides.map(\.transport), count: count, thrashMB: thrashMB,
        flush: { _ in for (_, cache) in caches { await cache.flush() } })
    guard floor.storeCount >= count, fused.storeCount >= count, fused.missCount >= count,
        caches.allSatisfy({ $0.1.statistics.misses >= count && $0.1.statistics.stores >= count })
    else {
        print(
            "a cache did not miss and store every request: the run measured something else (stores: RFC floor \(floor.storeCount),"
                + " fused floor \(fused.storeCount), caches \(caches.map { $0.1.statistics.stores }))")
        exit(1)
    }
    let over = times.map { median($0) - median(times[0]) }
    let last = sides.count - 1  // the cache as it comes
    print(String(format: "cold misses, %d MB thrashed, medians of %d; bare %.2f µs, each side over it:", thrashMB, count, median(times[0])))
    for (index, side) in sides.enumerated().dropFirst() { print(String(format: "  %@ %.2f µs", side.name, over[index])) }
    print(String(format: "rfc-floor-over-minimal %.2f µs", over[2] - over[1]))
    print(String(format: "fused-floor-over-minimal %.2f µs", over[3] - over[1]))
    for index in 3..<last { print(String(format: "cache-over-%@ %.2f µs", sides[index].name, over[last] - over[index])) }
    print(String(format: "cache-over-rfc-floor %.2f µs", over[last] - over[2]))
    print(String(format: "cold-gap-to-minimal %.2f µs", over[last] - over[1]))
    exit(0)
}
if let count = cpuLoad {
    /// The process's CPU time (user and system), in microseconds.
    @Sendable func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func micros(_ time: timeval) -> Double { Double(time.tv_sec) * 1e6 + Double(time.tv_usec) }
        return micros(usage.ru_utime) + micros(usage.ru_stime)
    }
    /// CPU microseconds per request for `count` new URLs sent through `target` by 16 callers,
    /// `flush` awaited before the clock stops.
    @concurrent func perRequest(_ target: any Transport, round: Int, flush: @Sendable () async -> Void) async throws -> Double {
        let callers = 16
        let start = processCPU()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                group.addTask {
                    for number in stride(from: caller, to: count, by: callers) {
                        _ = try await target.send(URLRequest(url: URL(string: "http://127.0.0.1:43210/r\(round)/c?n=\(number)&size=1024")!))
                    }
                }
            }
            try await group.waitForAll()
        }
        await flush()
        return (processCPU() - start) / Double(count)
    }
    var results: [String: [Double]] = [:]
    let names = only.map { [$0 == "variant" ? variant : $0] } ?? ["bare", variant, "minimal"]
    let orders = permutations(names)
    for round in -1..<rounds {
        // Every order of the sides in turn (use a multiple of six rounds), warming up in the first.
        for name in orders[max(0, round) % orders.count] {
            // A fresh cache each round, as ConcurrentLoad makes one.
            var configuration = CacheConfiguration()
            configuration.coalescesRequests = variant != "no-coalescing"
            configuration.writesBehind = variant == "write-behind"
            let fresh = HTTPCache(storage: makeStorage(variant), configuration: configuration)
            let target: any Transport =
                switch name {
                case "bare": InstantTransport()
                case "minimal": Pipeline(transport: InstantTransport(), hooks: [MinimalCache()])
                default: Pipeline(transport: InstantTransport(), hooks: withCache ? [fresh] : hooks)
                }
            let cpu = try await perRequest(target, round: round) { await fresh.flush() }
            if round >= 0 { results[name, default: []].append(cpu) }  // (round -1 warms up)
        }
    }
    for name in names {
        print(
            String(
                format: "%@: %.2f µs CPU per request (median of %d rounds: %@)", name, median(results[name]!), rounds,
                results[name]!.map { String(format: "%.2f", $0) }.joined(separator: ", ")))
    }
    guard only == nil else { exit(0) }
    let bareCPU = median(results["bare"]!)
    // The sides of one round run within seconds of each other, while this VM drifts across a run.
    let byRound = zip(results[variant]!, results["minimal"]!).map { $0 - $1 }
    print(
        String(
            format: "cpu-added %@ %.2f µs, minimal %.2f µs\ncpu-gap-to-minimal %.2f µs\ncpu-gap-to-minimal by round: median %.2f µs, from %.2f to %.2f",
            variant, median(results[variant]!) - bareCPU, median(results["minimal"]!) - bareCPU,
            median(results[variant]!) - median(results["minimal"]!), median(byRound), byRound.min()!, byRound.max()!))
    exit(0)
}
let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Tests/RecallTests/Support/origin_server.py")
let server = try LoopbackOrigin(script: script)

let bareStamps = StampingTransport(URLSessionTransport())
let cachedStamps = StampingTransport(URLSessionTransport())
let bare: any Transport = stages ? bareStamps : bareStamps.inner
let cached = Pipeline(transport: stages ? cachedStamps : cachedStamps.inner, hooks: hooks)
func url(_ kind: String, _ number: Int) -> URL {
    server.url("/\(kind)", [("n", String(number)), ("cc", "max-age=600"), ("size", "1024")])
}

let clock = ContinuousClock()
func microseconds(_ elapsed: Duration) -> Double {
    Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) * 1e-12
}
/// A call's time, and (with `--stages`) the time before the transport, in it and after it.
typealias Stages = (before: Double, inside: Double, after: Double)
func measure(_ stamps: StampingTransport, _ body: () async throws -> Void) async rethrows -> (Double, Stages) {
    let start = clock.now
    try await body()
    let end = clock.now
    let (began, ended) = stamps.lock.withLock { (stamps.began, stamps.ended) }
    return (
        microseconds(start.duration(to: end)),
        (microseconds(start.duration(to: began)), microseconds(began.duration(to: ended)), microseconds(ended.duration(to: end)))
    )
}
var bareStages: [Stages] = [], cachedStages: [Stages] = []
// With a cache variant (but timed, whose clock calls would weigh on one side), a minimal cache (a
// key, one locked table read and one write: the floor of any cache) runs in the same rotation,
// over a transport of its own (issue #55: the gap to it).
let withMinimal = cacheVariants.contains(variant) && variant != "timed"
let minimalStamps = StampingTransport(URLSessionTransport())
let minimal = Pipeline(transport: stages ? minimalStamps : minimalStamps.inner, hooks: [MinimalCache()])
var minimalTimes: [Double] = [], minimalStages: [Stages] = []
// With --floor, RFCFloorCache too (the least an RFC 9111 cache does on a miss).
let withRFCFloor = withMinimal && withFloor
let floorStamps = StampingTransport(URLSessionTransport())
let floorHook = RFCFloorCache()
let floorCache = Pipeline(transport: stages ? floorStamps : floorStamps.inner, hooks: [floorHook])
var floorTimes: [Double] = [], floorStages: [Stages] = []
// And FusedFloorCache (what a lone miss of HTTPCache must do, with nothing between its parts).
let fusedStamps = StampingTransport(URLSessionTransport())
let fusedHook = FusedFloorCache()
let fusedCache = Pipeline(transport: stages ? fusedStamps : fusedStamps.inner, hooks: [fusedHook])
var fusedTimes: [Double] = [], fusedStages: [Stages] = []

// Warm up every side's connection.
for number in 0..<(variant == "full" ? 600 : 200) {
    _ = try await bare.send(URLRequest(url: url("bare", -number - 1)))
    _ = try await cached.send(URLRequest(url: url("cached", -number - 1)))
    if withMinimal { _ = try await minimal.send(URLRequest(url: url("minimal", -number - 1))) }
    if withRFCFloor {
        _ = try await floorCache.send(URLRequest(url: url("floor", -number - 1)))
        _ = try await fusedCache.send(URLRequest(url: url("fused", -number - 1)))
    }
}
var bareTimes: [Double] = [], cachedTimes: [Double] = []
// Every order of the sides in turn: each side runs at each place, and after each other side, as
// often as the rest (a cold miss costs less after a side that ran the same code: the minimal
// cache keys requests with the cache's own code).
let orders = permutations(withRFCFloor ? [0, 1, 2, 3, 4] : withMinimal ? [0, 1, 2] : [0, 1])
for number in 0..<pairs {
    for side in orders[number % orders.count] {
        switch side {
        case 0:
            let (time, stages) = try await measure(bareStamps) { _ = try await bare.send(URLRequest(url: url("bare", number))) }
            bareTimes.append(time)
            bareStages.append(stages)
        case 1:
            let (time, stages) = try await measure(cachedStamps) { _ = try await cached.send(URLRequest(url: url("cached", number))) }
            cachedTimes.append(time)
            cachedStages.append(stages)
        case 2:
            let (time, stages) = try await measure(minimalStamps) { _ = try await minimal.send(URLRequest(url: url("minimal", number))) }
            minimalTimes.append(time)
            minimalStages.append(stages)
        case 3:
            let (time, stages) = try await measure(floorStamps) { _ = try await floorCache.send(URLRequest(url: url("floor", number))) }
            floorTimes.append(time)
            floorStages.append(stages)
        default:
            let (time, stages) = try await measure(fusedStamps) { _ = try await fusedCache.send(URLRequest(url: url("fused", number))) }
            fusedTimes.append(time)
            fusedStages.append(stages)
        }
    }
}
await cache.flush()  // (with --variant write-behind, misses are stored just after their answers)
precondition(
    !withCache || (cache.statistics.misses >= pairs && (cache.statistics.stores >= pairs || variant == "no-store")),
    "every cached request must be a miss that stores")
precondition(!withRFCFloor || (floorHook.storeCount >= pairs && fusedHook.storeCount >= pairs), "the floors must store their misses")

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
print("| | p25 (µs) | p50 (µs) | p75 (µs) | mean (µs) |")
print("|---|---|---|---|---|")
let cachedName = variant == "cache" ? "Pipeline + HTTPCache (miss, store)" : "Pipeline, variant \(variant)"
for (name, values) in [("bare URLSessionTransport", bareTimes), (cachedName, cachedTimes)] {
    print(
        String(
            format: "| %@ | %.0f | %.0f | %.0f | %.0f |", name, percentile(values, 0.25), percentile(values, 0.5),
            percentile(values, 0.75), values.reduce(0, +) / Double(values.count)))
}
/// A 95 % interval of the p50 ratio, by the bootstrap: the pairs resampled with replacement
/// 1,000 times, a pair's two times kept together (so that drift stays matched), with a fixed
/// seed (SplitMix64), so a run's interval is reproducible from its samples.
func ratioInterval(_ bare: [Double], _ cached: [Double], resamples: Int = 1000) -> (low: Double, high: Double) {
    var seed: UInt64 = 0x5EED
    func next() -> UInt64 {
        seed &+= 0x9E37_79B9_7F4A_7C15
        var z = seed
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    let count = min(bare.count, cached.count)
    var (someBare, someCached) = ([Double](repeating: 0, count: count), [Double](repeating: 0, count: count))
    let ratios = (0..<resamples).map { _ in
        for index in 0..<count {
            let pair = Int(next() % UInt64(count))
            (someBare[index], someCached[index]) = (bare[pair], cached[pair])
        }
        return percentile(someCached, 0.5) / percentile(someBare, 0.5)
    }
    return (percentile(ratios, 0.025), percentile(ratios, 0.975))
}
let ratio = percentile(cachedTimes, 0.5) / percentile(bareTimes, 0.5)
let interval = ratioInterval(bareTimes, cachedTimes)
print(
    String(
        format: "\nmiss / bare at p50: %.3f (%+.1f %%; 95 %% interval %+.1f to %+.1f %%), %d pairs",
        ratio, (ratio - 1) * 100, (interval.low - 1) * 100, (interval.high - 1) * 100, pairs)
        + (withCache ? ", \(cache.statistics.stores) misses stored" : "") + " (variant: \(variant))")
if withMinimal {
    let minimalRatio = percentile(minimalTimes, 0.5) / percentile(bareTimes, 0.5)
    print(String(format: "minimal cache / bare at p50: %.3f (%+.1f %%), same rotation", minimalRatio, (minimalRatio - 1) * 100))
    print(String(format: "miss-gap-to-minimal %.1f points", (ratio - minimalRatio) * 100))
    if withRFCFloor {
        let floorRatio = percentile(floorTimes, 0.5) / percentile(bareTimes, 0.5)
        print(String(format: "rfc-floor cache / bare at p50: %.3f (%+.1f %%), same rotation", floorRatio, (floorRatio - 1) * 100))
        print(String(format: "rfc-floor-gap-to-minimal %.1f points", (floorRatio - minimalRatio) * 100))
        print(String(format: "miss-gap-to-rfc-floor %.1f points", (ratio - floorRatio) * 100))
        let fusedRatio = percentile(fusedTimes, 0.5) / percentile(bareTimes, 0.5)
        print(String(format: "fused-floor cache / bare at p50: %.3f (%+.1f %%), same rotation", fusedRatio, (fusedRatio - 1) * 100))
        print(String(format: "fused-floor-gap-to-minimal %.1f points", (fusedRatio - minimalRatio) * 100))
        print(String(format: "miss-gap-to-fused-floor %.1f points", (ratio - fusedRatio) * 100))
    }
}
if stages {
    print("\nmedians (µs) | before the transport | in it | after it")
    print("|---|---|---|---|")
    let sides = [("bare", bareStages), ("pipeline", cachedStages), ("minimal", minimalStages), ("rfc-floor", floorStages), ("fused-floor", fusedStages)]
    for (name, times) in sides where !times.isEmpty {
        print(
            String(
                format: "| %@ | %.1f | %.1f | %.1f |", name, percentile(times.map(\.before), 0.5),
                percentile(times.map(\.inside), 0.5), percentile(times.map(\.after), 0.5)))
    }
}
let calls = Double(cachedTimes.count + 200)
if variant.hasPrefix("timed") {
    print(
        String(
            format: "time inside the cache per miss: onSchedule %.1f µs, onSuccess %.1f µs (thread CPU time: %.1f µs, %.1f µs)",
            timed.schedule.wall / calls, timed.success.wall / calls, timed.schedule.cpu / calls, timed.success.cpu / calls))
}
