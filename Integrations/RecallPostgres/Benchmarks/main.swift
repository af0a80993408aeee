// The fleet storage measured next to the single-process ones, in one run on one machine:
//
//   swift run -c release recall-postgres-benchmark [--hits N] [--bursts N] [--rounds N]
//                                                   [--pgbench-hits N] [--pgbench-transactions N] [--nio-executor]
//                                                   [--request-connections N]
//
// 1. Hit latency (p50, p99) and throughput through a full Pipeline + HTTPCache, for 1 and 64
//    concurrent tasks, over MemoryStorage (the baseline), DiskStorage, PostgresStorage and a
//    memory tier in front of PostgresStorage. 1,000 keys of 2 KB bodies, read at random.
// 2. Next to pgbench on the same server, round after round (AgainstPgbench.swift): hit p50 and
//    store p50 at 1 client, hits/s at 16 and 64, and the layers of a hit (driver, pool, storage,
//    pipeline). Ends with the `pgbench-ratio NAME R` lines.
// 3. Origin requests for bursts of identical misses from 4 processes (recall-postgres-fleet-worker)
//    on one database, with and without the storage as FetchCoordinator (`--bursts 0`: skipped).
//
// It starts its own PostgreSQL (initdb + postgres on a free loopback port) and loopback origin,
// and removes them at the end. Prints a Markdown report.
import Foundation
import Logging
import NIOPosix
import PostgresNIO
import Recall
import RecallPostgres
import RecallPostgresTestSupport
import RecallTesting
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

func option(_ name: String, _ fallback: Int) -> Int {
    guard let index = CommandLine.arguments.firstIndex(of: name), index + 1 < CommandLine.arguments.count,
        let value = Int(CommandLine.arguments[index + 1])
    else { return fallback }
    return value
}

// `--nio-executor`: Swift concurrency's global executor is NIO's event loop group, the one the
// PostgreSQL connections run on (a process-wide choice a server makes at start).
let nioExecutor =
    CommandLine.arguments.contains("--nio-executor")
    && NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
let hitsPerRun = option("--hits", 20_000)
let bursts = option("--bursts", 20)
let keys = 1_000

var logger = Logger(label: "recall.postgres.benchmark")
logger.logLevel = .warning

/// One measured configuration.
struct Measured {
    var name: String
    var tasks: Int
    var p50: Duration
    var p99: Duration
    var perSecond: Double
}

/// `duration` in microseconds, one decimal (``micros(_:)``).
func microseconds(_ duration: Duration) -> String {
    String(format: "%.1f", micros(duration))
}

/// An origin that answers every request with the same cacheable 2 KB (only the fill reaches it).
struct FixedOrigin: Transport {
    let body: Data

    func send(_ request: URLRequest) async throws -> RecallResponse {
        RecallResponse(status: 200, headers: ["Cache-Control": "max-age=3600"], body: body, url: request.url)
    }
}

/// Hits through a pipeline over `storage`: `hitsPerRun` in all, spread over `tasks` tasks.
func measureHits(_ name: String, storage: any CacheStorage, tasks: Int, hits hitsPerRun: Int = hitsPerRun) async throws -> Measured {
    let origin = FixedOrigin(body: Data(repeating: UInt8(ascii: "r"), count: 2_048))
    let pipeline = Pipeline(transport: origin, hooks: [HTTPCache(storage: storage)])
    let requests = (0..<keys).map { URLRequest(url: URL(string: "https://origin.test/item/\($0)")!) }
    for request in requests { _ = try await pipeline.send(request) }  // fill
    await storage.flush()
    for request in requests.prefix(200) { _ = try await pipeline.send(request) }  // warm
    let clock = ContinuousClock()
    let started = clock.now
    let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
        for task in 0..<tasks {
            group.addTask {
                var generator = SystemRandomNumberGenerator()
                var mine: [Duration] = []
                mine.reserveCapacity(hitsPerRun / tasks)
                for _ in 0..<(hitsPerRun / tasks) {
                    let request = requests[Int.random(in: 0..<keys, using: &generator)]
                    let start = clock.now
                    let response = try await pipeline.send(request)
                    mine.append(clock.now - start)
                    precondition(response.source == .cache, "\(name) task \(task): a miss in the hit benchmark")
                }
                return mine
            }
        }
        return try await group.reduce(into: [Duration]()) { $0 += $1 }
    }
    let elapsed = clock.now - started
    let sorted = latencies.sorted()
    let seconds = micros(elapsed) / 1e6
    return Measured(
        name: name, tasks: tasks, p50: sorted[sorted.count / 2], p99: sorted[sorted.count * 99 / 100],
        perSecond: Double(sorted.count) / seconds)
}

let server = try TemporaryPostgres()
defer { server.stop() }
var clientConfiguration = PostgresClient.Configuration(
    host: "127.0.0.1", port: server.port, username: server.user,
    password: nil, database: server.database, tls: .disable)
clientConfiguration.options.maximumConnections = 64
let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
let running = Task { await client.run() }

var results: [Measured] = []
let diskDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-bench-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: diskDirectory) }
var storageConfiguration = PostgresStorage.Configuration()
storageConfiguration.timeout = .seconds(5)  // measure the database, not the cut
storageConfiguration.requestConnections = option("--request-connections", storageConfiguration.requestConnections)
let postgres = try await PostgresStorage.open(client: client, configuration: storageConfiguration, logger: logger)
for tasks in [1, 16, 64] {
    // 16 tasks: PostgreSQL only, for the throughput next to pgbench's 16 clients.
    if tasks != 16 {
        results.append(try await measureHits("MemoryStorage (baseline)", storage: MemoryStorage(), tasks: tasks))
        results.append(
            try await measureHits("DiskStorage", storage: try DiskStorage(directory: diskDirectory.appendingPathComponent("\(tasks)")), tasks: tasks))
    }
    await postgres.removeAll()
    results.append(try await measureHits("PostgresStorage", storage: postgres, tasks: tasks))
    if tasks != 16 {
        await postgres.removeAll()
        results.append(try await measureHits("memory tier + PostgresStorage", storage: postgres.withMemoryTier(), tasks: tasks))
    }
}

print("## Hits: PostgreSQL next to memory and disk\n")
if nioExecutor { print("Swift's global executor: NIO's event loop group (`--nio-executor`).\n") }
print(
    "`swift run -c release recall-postgres-benchmark --hits \(hitsPerRun) --bursts \(bursts)`; \(keys) keys of 2 KB bodies read at random through Pipeline + HTTPCache; PostgreSQL 15 on loopback (fsync off), started by the program.\n"
)
print("| storage | tasks | p50 µs | p99 µs | hits/s | p50 ÷ memory | hits/s ÷ memory |")
print("|---|---|---|---|---|---|---|")
for result in results where result.tasks != 16 {
    let baseline = results.first { $0.tasks == result.tasks }!
    let ratio = micros(result.p50) / micros(baseline.p50)
    print(
        "| \(result.name) | \(result.tasks) | \(microseconds(result.p50)) | \(microseconds(result.p99)) | \(Int(result.perSecond)) | \(String(format: "%.1f×", ratio)) | \(String(format: "%.3f×", result.perSecond / baseline.perSecond)) |"
    )
}

// The same, each statement leasing its connection from the pool (the storage before it held
// connections of its own): the before of the lanes' before/after.
var pooledConfiguration = storageConfiguration
pooledConfiguration.requestConnections = 0
let pooled = try await PostgresStorage.open(client: client, configuration: pooledConfiguration, logger: logger)
let ratios = try await compareWithPgbench(
    server: server, client: client, storage: postgres, pooled: pooled, keys: keys,
    rounds: option("--rounds", 3), hits: option("--pgbench-hits", 3_000),
    transactions: option("--pgbench-transactions", 20_000), logger: logger)

// MARK: Cross-process coalescing

/// Origin requests for `bursts` bursts of one miss from each of 4 processes.
func originRequests(coordinated: Bool) async throws -> (origin: Int, requests: Int) {
    let database = "fleet_\(coordinated ? "on" : "off")"
    _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"), logger: logger).all()
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Tests/RecallTests/Support/origin_server.py")
    let origin = try LoopbackOrigin(script: script)
    let workers = try (0..<4).map { _ in
        try FleetWorkerProcess(port: server.port, database: database, origin: origin.url("/"), coordinated: coordinated)
    }
    defer { workers.forEach { $0.stop() } }
    for worker in workers { guard try worker.line() == "ready" else { fatalError("a worker did not start") } }
    var requests = 0
    for burst in 0..<bursts {
        for worker in workers { try worker.send("get /burst\(burst)?cc=max-age%3D60&delay_ms=50") }
        for worker in workers { _ = try worker.line() }
        requests += workers.count
    }
    var total = 0
    for burst in 0..<bursts {
        struct Hits: Decodable { let hits: Int }
        let (data, _) = try await URLSession.shared.data(from: origin.url("/__hits", [("path", "/burst\(burst)")]))
        total += try JSONDecoder().decode(Hits.self, from: data).hits
    }
    return (total, requests)
}

if bursts > 0 {
    let without = try await originRequests(coordinated: false)
    let with = try await originRequests(coordinated: true)
    print("\n## Cross-process coalescing\n")
    print("\(bursts) bursts, each one request for a new URL from each of 4 processes at once (the origin takes 50 ms).\n")
    print("| coordinator | requests | reached the origin | saved |")
    print("|---|---|---|---|")
    print("| none (each process coalesces only its own) | \(without.requests) | \(without.origin) | \(without.requests - without.origin) |")
    print("| PostgresStorage (lease rows) | \(with.requests) | \(with.origin) | \(with.requests - with.origin) |")
}

await postgres.shutdown()
await pooled.shutdown()
running.cancel()

// The targets at a glance (issue #40): hit p50 ≤ 2, throughput ≥ 0.5.
print("")
for (name, ratio) in ratios { print("pgbench-ratio \(name) \(String(format: "%.2f", ratio))") }

extension AsyncSequence where Self: Sendable {
    func all() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }
}
