import Foundation
import RecallPostgresTestSupport

/// PostgreSQL's own benchmark tool, run against the benchmark's server: the floor Recall's
/// figures are divided by.
struct Pgbench {
    /// What one run measured.
    struct Result {
        /// Transactions per second (pgbench's `tps`, without the connection time).
        var perSecond: Double
        /// Each transaction's latency in microseconds (runs with a log only), sorted.
        var latencies: [Double]

        /// The median latency in microseconds (runs with a log only).
        var p50: Double { latencies.isEmpty ? .nan : latencies[latencies.count / 2] }
        /// The 99th percentile in microseconds (runs with a log only).
        var p99: Double { latencies.isEmpty ? .nan : latencies[latencies.count * 99 / 100] }
    }

    let server: TemporaryPostgres
    let database: String
    let program: String
    let directory: URL

    init(server: TemporaryPostgres, database: String) throws {
        self.server = server
        self.database = database
        program = try TemporaryPostgres.tool("pgbench")
        directory = server.directory.appendingPathComponent("pgbench-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// Creates pgbench's own tables (scale 1: 100,000 accounts).
    func initialize() throws {
        _ = try run(["-i", "-s", "1", "-q"])
    }

    /// Runs `transactions` transactions (spread over `clients` clients, 2 threads when there are
    /// several) with prepared statements; `-S` (its select-only transaction) unless `script` names a
    /// file. With `log`, every transaction's latency is read from pgbench's log. (A count, not a
    /// time: `-T` did not end on this machine's virtual clock.)
    func measure(
        clients: Int, transactions: Int, script: String? = nil, defines: [String: String] = [:],
        log: Bool = false
    ) throws -> Result {
        let perClient = max(transactions / clients, 100)
        var arguments = ["-n", "-M", "prepared", "-c", "\(clients)", "-j", clients > 1 ? "2" : "1", "-t", "\(perClient)"]
        arguments += script.map { ["-f", $0] } ?? ["-S"]
        for (name, value) in defines.sorted(by: { $0.key < $1.key }) { arguments += ["-D", "\(name)=\(value)"] }
        let logPrefix = directory.appendingPathComponent("log-\(UUID().uuidString.prefix(8))").path
        if log { arguments += ["-l", "--log-prefix=\(logPrefix)"] }
        let output = try run(arguments)
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
            let perSecond = Double(line.dropFirst("tps = ".count).prefix { $0 != " " })
        else {
            throw Failure(description: "pgbench printed no tps: \(output)")
        }
        var latencies: [Double] = []
        if log {
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                .filter { (directory.path + "/" + $0).hasPrefix(logPrefix) }
            for file in files {
                let text = try String(contentsOfFile: directory.path + "/" + file, encoding: .utf8)
                // client_id transaction_no time script_no time_epoch time_us: `time` in µs.
                for row in text.split(separator: "\n") {
                    let columns = row.split(separator: " ")
                    if columns.count >= 3, let latency = Double(columns[2]) { latencies.append(latency) }
                }
            }
        }
        return Result(perSecond: perSecond, latencies: latencies.sorted())
    }

    /// Writes `text` to a script file and returns its path.
    func script(_ name: String, _ text: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func run(_ arguments: [String]) throws -> String {
        try TemporaryPostgres.run(
            program, arguments + ["-h", "127.0.0.1", "-p", "\(server.port)", "-U", server.user, database],
            in: directory)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }
}
