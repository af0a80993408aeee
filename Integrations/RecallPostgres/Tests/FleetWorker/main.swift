// One replica of a fleet, for the multi-process tests: a cache over PostgresStorage (with a
// memory tier and the storage as fetch coordinator) in front of the loopback origin. It reads
// commands from standard input, one a line, and answers each with one line:
//   get PATH   -> "<status> <source> <hit>"  (source: network, cache, revalidated, stale;
//                  hit: the origin's request number from its JSON body, or -1)
//   post PATH  -> "<status> <source> <hit>"
//   stats      -> "coalesced=N claims=N held-elsewhere=N invalidations=N"
// With `no-coordinator` as a fourth argument it does not coordinate misses with the fleet (the
// benchmark's baseline). It prints "ready" once the storage is open, and exits when its input closes.
import Foundation
import Logging
import PostgresNIO
import Recall
import RecallPostgres
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count == 4 || (arguments.count == 5 && arguments[4] == "no-coordinator"), let port = Int(arguments[1]), let origin = URL(string: arguments[3]) else {
    FileHandle.standardError.write(Data("usage: recall-postgres-fleet-worker PORT DATABASE ORIGIN-URL [no-coordinator]\n".utf8))
    exit(2)
}
var logger = Logger(label: "recall.fleet-worker")
logger.logLevel = .warning
var configuration = PostgresClient.Configuration(host: "127.0.0.1", port: port, username: "recall", password: nil,
                                                 database: arguments[2], tls: .disable)
configuration.options.connectTimeout = .seconds(10)
let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
let running = Task { await client.run() }

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
    storageConfiguration.timeout = .seconds(10)          // a loaded CI machine: be patient, the test checks behaviour not speed
    storageConfiguration.leaseTime = .seconds(60)        // no claim lapses while a slow fetch or a slow worker is under way
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
        case ("stats", _):
            let mine = storage.fleetStatistics
            say("coalesced=\(cache.statistics.coalesced) claims=\(mine.claims) held-elsewhere=\(mine.claimsHeldElsewhere) invalidations=\(mine.invalidationsReceived)")
        default:
            say("error unknown command: \(line)")
        }
    }
    await storage.shutdown()
} catch {
    say("error \(error)")
}
running.cancel()
