import AsyncHTTPClient
import Foundation
import Logging
import PostgresNIO
import Recall
import RecallPostgres

// recall-gateway: an API gateway with a shared cache (see Gateway.swift and README.md).
//
//     swift run recall-gateway --upstream https://api.example.com [--listen 8080]
//                              [--postgres postgres://user:password@host:5432/database[?sslmode=disable]]
//
// In memory by default; with --postgres, every replica of the gateway shares one PostgreSQL
// storage (a memory tier in front of it) and fetches a missing response once for all of them.

/// The options, from the command line.
struct Options {
    var upstream: URL?
    var listen = 8080
    var postgres: URLComponents?

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        while let option = rest.popFirst() {
            guard let value = rest.popFirst() else { throw Problem("\(option) needs a value") }
            switch option {
            case "--upstream":
                guard let url = URL(string: value), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                    throw Problem("--upstream: not an http(s) URL: \(value)")
                }
                upstream = url
            case "--listen":
                guard let port = Int(value), (0...65_535).contains(port) else { throw Problem("--listen: not a port: \(value)") }
                listen = port
            case "--postgres":
                guard let components = URLComponents(string: value), components.scheme == "postgres", components.host != nil else {
                    throw Problem("--postgres: not a postgres:// URL")
                }
                postgres = components
            default:
                throw Problem("unknown option \(option)")
            }
        }
    }

    struct Problem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
    guard options.upstream != nil else { throw Options.Problem("--upstream is required") }
} catch {
    print("recall-gateway: \(error)\nusage: recall-gateway --upstream URL [--listen PORT] [--postgres postgres://user:password@host:port/database]")
    exit(2)
}

let client = Gateway.client()
let pipeline: Pipeline
var shutdown: @Sendable () async -> Void = {}
if let postgres = options.postgres {
    let database = PostgresClient(
        configuration: .init(
            host: postgres.host ?? "localhost", port: postgres.port ?? 5432, username: postgres.user ?? "postgres",
            password: postgres.password, database: String(postgres.path.dropFirst()),
            // TLS unless the URL says `sslmode=disable` (a database on the same host, say).
            tls: postgres.queryItems?.contains { $0.name == "sslmode" && $0.value == "disable" } == true
                ? .disable : .require(.makeClientConfiguration())))
    let running = Task { await database.run() }
    let storage = try await PostgresStorage.open(client: database)
    pipeline = Gateway.pipeline(client: client, storage: storage.withMemoryTier(), coordinator: storage)
    shutdown = {
        await storage.shutdown()
        running.cancel()
    }
} else {
    pipeline = Gateway.pipeline(client: client, storage: MemoryStorage())
}
let gateway = Gateway(upstream: options.upstream!, pipeline: pipeline)
print("recall-gateway: listening on \(options.listen), upstream \(gateway.upstream.absoluteString)")
try await HTTPServer().serve(host: "0.0.0.0", port: options.listen) { head, body in await gateway.answer(head, body: body) }
await shutdown()
try await client.shutdown().get()
