// One replica of a fleet, for the multi-process tests: a cache over PostgresStorage (with a
// memory tier and the storage as fetch coordinator) in front of the loopback origin. It reads
// commands from standard input, one a line, and answers each with one line:
//   get PATH   -> "<status> <source> <hit>"  (source: network, cache, revalidated, stale;
//                  hit: the origin's request number from its JSON body, or -1)
//   post PATH  -> "<status> <source> <hit>"
//   burst N PATH QUERY -> N GETs at once, of PATH0?QUERY … PATH(N-1)?QUERY:
//                  "network=N cache=N other=N" (other: any other source, or an error)
//   stats      -> "coalesced=N claims=N held-elsewhere=N invalidations=N renewals=N"
// With `no-coordinator` as a fourth argument it does not coordinate misses with the fleet (the
// benchmark's baseline). It runs docs/scale-out.md's setup word for word — the storage's
// defaults (250 ms timeout, 5 s lease), a memory tier, URLSessionTransport — unless
// RECALL_LEASE_MS or RECALL_TIMEOUT_MS in its environment set the storage's leaseTime or
// timeout (a test of those settings). It prints "ready" once the
// storage is open, and exits when its input closes.
import Foundation
import Logging
import PostgresNIO
import Recall
import RecallPostgres
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count == 4 || (arguments.count == 5 && arguments[4] == "no-coordinator"), let port = Int(arguments[1]), let origin = URL(string: arguments[3])
else {
    FileHandle.standardError.write(Data("usage: recall-postgres-fleet-worker PORT DATABASE ORIGIN-URL [no-coordinator]\n".utf8))
    exit(2)
}
var logger = Logger(label: "recall.fleet-worker")
logger.logLevel = ProcessInfo.processInfo.environment["RECALL_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
var configuration = PostgresClient.Configuration(
    host: "127.0.0.1", port: port, username: "recall", password: nil,
    database: arguments[2], tls: .disable)
configuration.options.connectTimeout = .seconds(10)
let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
// Started at once, before the storage asks for a connection (a plain Task may start later, and
// postgres-nio then warns that it was asked before it ran).
let running: Task<Void, Never>
if #available(macOS 26, *) {
    running = Task.immediate { await client.run() }
} else {
    running = Task { await client.run() }
}

/// Writes `line` to standard output at once (no buffering: the test waits for it).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func answer(_ response: RecallResponse) async -> String {
    struct Echo: Decodable { let hit: Int }
    let body = (try? await response.body.collect(upTo: 1 << 20)) ?? Data()
    let hit = (try? JSONDecoder().decode(Echo.self, from: body))?.hit ?? -1
    return "\(response.status) \(response.source) \(hit)"
}

do {
    var storageConfiguration = PostgresStorage.Configuration()
    let environment = ProcessInfo.processInfo.environment
    // The documented defaults, as a user has them (issue #53, point 7), unless a test sets its own.
    if let milliseconds = environment["RECALL_TIMEOUT_MS"].flatMap(Int.init) { storageConfiguration.timeout = .milliseconds(milliseconds) }
    if let milliseconds = environment["RECALL_LEASE_MS"].flatMap(Int.init) { storageConfiguration.leaseTime = .milliseconds(milliseconds) }
    let storage = try await PostgresStorage.open(client: client, configuration: storageConfiguration, logger: logger)
    let coordinated = arguments.count == 4
    let cache = HTTPCache(storage: storage.withMemoryTier(), coordinator: coordinated ? storage : nil)
    let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
    say("ready")
    while let line = readLine() {
        let words = line.split(separator: " ", maxSplits: 1).map(String.init)
        switch (words.first, words.count) {
        case ("get", 2), ("post", 2):
            var request = URLRequest(url: URL(string: words[1], relativeTo: origin)!.absoluteURL)
            request.httpMethod = words[0] == "get" ? "GET" : "POST"
            do {
                say(await answer(try await pipeline.send(request)))
            } catch {
                say("error \(error)")
            }
        case ("burst", 2):
            let parts = words[1].split(separator: " ").map(String.init)
            guard parts.count == 3, let count = Int(parts[0]) else {
                say("error usage: burst N PATH QUERY")
                continue
            }
            let sources = await withTaskGroup(of: String.self) { group in
                for index in 0..<count {
                    group.addTask {
                        let url = URL(string: "\(parts[1])\(index)?\(parts[2])", relativeTo: origin)!.absoluteURL
                        guard let response = try? await pipeline.send(URLRequest(url: url)),
                            (try? await response.body.collect(upTo: 1 << 20)) != nil
                        else { return "other" }
                        return response.source == .network || response.source == .cache ? "\(response.source)" : "other"
                    }
                }
                var sources: [String: Int] = [:]
                for await source in group { sources[source, default: 0] += 1 }
                return sources
            }
            say("network=\(sources["network", default: 0]) cache=\(sources["cache", default: 0]) other=\(sources["other", default: 0])")
        case ("stats", _):
            let mine = storage.fleetStatistics
            say(
                "coalesced=\(cache.statistics.coalesced) claims=\(mine.claims) held-elsewhere=\(mine.claimsHeldElsewhere) invalidations=\(mine.invalidationsReceived) renewals=\(mine.claimRenewals)"
            )
        default:
            say("error unknown command: \(line)")
        }
    }
    await storage.shutdown()
} catch {
    say("error \(error)")
}
running.cancel()
