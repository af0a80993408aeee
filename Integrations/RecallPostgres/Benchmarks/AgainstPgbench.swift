import Foundation
import Logging
import NIOPosix
import PostgresNIO
import Recall
import RecallPostgres
import RecallPostgresTestSupport

/// The request path's lookup sent through PostgresNIO alone: the driver's share of a hit.
struct RawLookup: PostgresPreparedStatement {
    static let name = "bench_raw_lookup"
    static let sql = """
        SELECT key, CASE WHEN octet_length(record) <= $3 THEN record END, used_at < now() - make_interval(secs => $2)
        FROM recall_entries WHERE key_hash = sha256(convert_to($1, 'UTF8'))
        """
    typealias Row = (String, Data?, Bool)
    var key: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(key)
        bindings.append(60.0)
        bindings.append(8 << 20)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// Runs a task's jobs on one NIO event loop: code that awaits the loop's futures then resumes
/// without a thread switch (the "on its loop" row).
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Latencies in microseconds of `count` calls of `operation`, one at a time, sorted.
func latencies(_ count: Int, _ operation: (Int) async throws -> Void) async rethrows -> [Double] {
    let clock = ContinuousClock()
    var measured: [Double] = []
    measured.reserveCapacity(count)
    for index in 0..<count {
        let start = clock.now
        try await operation(index)
        measured.append(micros(clock.now - start))
    }
    return measured.sorted()
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

func micros(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}

/// pgbench and Recall on one server, round after round (the host's speed drifts between runs by
/// up to 3×: a ratio is taken within a round, then the median over rounds). Prints the figures
/// and returns the `pgbench-ratio` lines' values.
func compareWithPgbench(
    server: TemporaryPostgres, client: PostgresClient, storage: PostgresStorage, pooled: PostgresStorage, keys: Int,
    rounds: Int, hits: Int, transactions: Int, logger: Logger
) async throws -> [(String, Double)] {
    let pgbench = try Pgbench(server: server, database: server.database)
    try pgbench.initialize()
    // A copy of Recall's table as the hit runs left it (1,000 of its records), keyed by names
    // pgbench can build (`item-N`): the same shape, the same bytes, no trigger.
    let storedKeys = try await client.query("SELECT key FROM recall_entries", logger: logger).all().map { try $0.decode(String.self) }
    precondition(storedKeys.count == keys, "the hit runs left \(storedKeys.count) rows, not \(keys)")
    for statement in [
        "DROP TABLE IF EXISTS bench_entries",
        "CREATE TABLE bench_entries (LIKE recall_entries INCLUDING DEFAULTS INCLUDING INDEXES)",
        """
        INSERT INTO bench_entries (key_hash, key, record, size, stored_at, used_at, uses, expires_at)
        SELECT sha256(convert_to('item-' || n, 'UTF8')), 'item-' || n, record, size, stored_at, used_at, uses, expires_at
        FROM (SELECT row_number() OVER () - 1 AS n, * FROM recall_entries) AS numbered
        """,
        "VACUUM ANALYZE bench_entries"
    ] {
        _ = try await client.query(PostgresQuery(unsafeSQL: statement), logger: logger).all()
    }
    let record = try await client.query("SELECT record FROM recall_entries LIMIT 1", logger: logger).all()[0].decode(Data.self)
    let lookupScript = try pgbench.script(
        "lookup.sql",
        """
        \\set id random(0, \(keys - 1))
        SELECT key, CASE WHEN octet_length(record) <= 8388608 THEN record END, used_at < now() - make_interval(secs => 60) FROM bench_entries WHERE key_hash = sha256(convert_to('item-' || :id, 'UTF8'));
        """)
    let upsertScript = try pgbench.script(
        "upsert.sql",
        """
        \\set id random(0, 999)
        INSERT INTO bench_entries (key_hash, key, record, size, stored_at, used_at, uses, expires_at) VALUES (sha256(convert_to('store-' || :id, 'UTF8')), 'store-' || :id, decode(:record, 'hex'), :size, now(), now(), 0, now() + interval '1 hour') ON CONFLICT (key_hash) DO UPDATE SET key = EXCLUDED.key, record = EXCLUDED.record, size = EXCLUDED.size, stored_at = EXCLUDED.stored_at, used_at = EXCLUDED.used_at, expires_at = EXCLUDED.expires_at;
        """)
    let recordDefines = ["record": record.map { String(format: "%02x", $0) }.joined(), "size": "\(record.count)"]

    // The driver on a one-thread event loop group, to measure it without thread switches.
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    var pinnedConfiguration = PostgresClient.Configuration(
        host: "127.0.0.1", port: server.port, username: server.user,
        password: nil, database: server.database, tls: .disable)
    pinnedConfiguration.options.maximumConnections = 4
    let pinnedClient = PostgresClient(configuration: pinnedConfiguration, eventLoopGroup: group, backgroundLogger: logger)
    let pinnedRun = Task { await pinnedClient.run() }
    defer { pinnedRun.cancel() }
    let loop = EventLoopTaskExecutor(group.next())

    var figures: [String: [Double]] = [:]
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<rounds {
        let picks = (0..<hits).map { _ in storedKeys[Int.random(in: 0..<storedKeys.count, using: &generator)] }
        let storeKeys = (0..<hits).map { _ in "store-\(Int.random(in: 0..<1_000, using: &generator))" }
        figures["select p50", default: []].append(try pgbench.measure(clients: 1, transactions: transactions, log: true).p50)
        figures["lookup p50", default: []].append(try pgbench.measure(clients: 1, transactions: transactions, script: lookupScript, log: true).p50)
        figures["hit p50", default: []].append(micros(try await measureHits("PostgresStorage", storage: storage, tasks: 1, hits: hits).p50))
        figures["pooled hit p50", default: []].append(micros(try await measureHits("PostgresStorage", storage: pooled, tasks: 1, hits: hits).p50))
        figures["storage p50", default: []].append(
            median(
                await latencies(hits) {
                    guard await storage.bytes(for: picks[$0]) != nil else { fatalError("a miss in the storage's hit run") }
                }))
        figures["driver p50", default: []].append(
            median(
                try await latencies(hits) {
                    _ = try await client.execute(RawLookup(key: picks[$0]), logger: logger).all()
                }))
        figures["connection p50", default: []].append(
            median(
                try await client.withConnection { connection in
                    try await latencies(hits) { _ = try await connection.execute(RawLookup(key: picks[$0]), logger: logger).all() }
                }))
        figures["loop p50", default: []].append(
            median(
                try await withTaskExecutorPreference(loop) {
                    try await pinnedClient.withConnection { connection in
                        try await latencies(hits) { _ = try await connection.execute(RawLookup(key: picks[$0]), logger: logger).all() }
                    }
                }))
        figures["upsert p50", default: []].append(
            try pgbench.measure(
                clients: 1, transactions: transactions, script: upsertScript,
                defines: recordDefines, log: true
            ).p50)
        figures["store p50", default: []].append(
            median(
                await latencies(min(hits, 2_000)) {
                    await storage.write(record, for: storeKeys[$0], expires: Date().addingTimeInterval(3_600))
                }))
        for tasks in [16, 64] {
            figures["select \(tasks)", default: []].append(try pgbench.measure(clients: tasks, transactions: transactions).perSecond)
            figures["hits \(tasks)", default: []].append(try await measureHits("PostgresStorage", storage: storage, tasks: tasks, hits: hits * 4).perSecond)
            figures["pooled hits \(tasks)", default: []].append(
                try await measureHits("PostgresStorage", storage: pooled, tasks: tasks, hits: hits * 4).perSecond)
        }
    }

    /// The ratio of `recall` to `floor` in each round, and its median.
    func ratio(_ recall: String, _ floor: String) -> Double {
        median(zip(figures[recall]!, figures[floor]!).map { $0 / $1 })
    }
    func cell(_ name: String, _ unit: String) -> String {
        let values = figures[name]!
        return "\(String(format: "%.0f", median(values))) \(unit) (\(String(format: "%.0f", values.min()!))–\(String(format: "%.0f", values.max()!)))"
    }
    print("\n## Next to pgbench\n")
    print(
        "\(rounds) rounds; each: pgbench \(transactions) transactions a run, `-M prepared`, on the same server, then Recall (\(hits) hits at 1 task, \(hits * 4) at 16 and 64). `-S` is pgbench's select-only transaction (one row of pgbench_accounts by primary key); *Recall-shaped* is Recall's lookup statement on a copy of Recall's table (\(keys) of its records, \(record.count) bytes each). Recall's pool: up to 64 connections; the storage holds \(storage.configuration.requestConnections) of them (`requestConnections`). Median of the rounds (range); ratios are taken within a round, then the median.\n"
    )
    /// A row of the table: `recall`'s figures next to `floor`'s, and their ratio.
    func row(_ label: String, _ floor: String, _ recall: String, _ unit: String) {
        print("| \(label) | \(cell(floor, unit)) | \(cell(recall, unit)) | \(String(format: "%.2f×", ratio(recall, floor))) |")
    }
    let pooled = "… the same, each statement leasing from the pool (`requestConnections = 0`)"
    print("| figure | pgbench | Recall | ratio |")
    print("|---|---|---|---|")
    row("hit p50, 1 client: `-S` / pipeline hit", "select p50", "hit p50", "µs")
    row(pooled, "select p50", "pooled hit p50", "µs")
    row("hit p50, 1 client: Recall-shaped / pipeline hit", "lookup p50", "hit p50", "µs")
    row("… `PostgresStorage.bytes(for:)`", "lookup p50", "storage p50", "µs")
    row("… PostgresNIO alone, through its pool", "lookup p50", "driver p50", "µs")
    row("… PostgresNIO alone, one connection", "lookup p50", "connection p50", "µs")
    row("… PostgresNIO alone, one connection, run on its event loop", "lookup p50", "loop p50", "µs")
    row("store p50, 1 client: `INSERT … ON CONFLICT` / `write`", "upsert p50", "store p50", "µs")
    for tasks in [16, 64] {
        row("throughput, \(tasks) clients / tasks: `-S` / pipeline hits", "select \(tasks)", "hits \(tasks)", "/s")
        row(pooled, "select \(tasks)", "pooled hits \(tasks)", "/s")
    }
    return [
        ("hit-p50", ratio("hit p50", "select p50")),
        ("hit-p50-recall-shaped", ratio("hit p50", "lookup p50")),
        ("throughput-16", ratio("hits 16", "select 16")),
        ("throughput-64", ratio("hits 64", "select 64")),
        ("store-p50", ratio("store p50", "upsert p50"))
    ]
}
