import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import MissPathParts
import Recall
import RecallAsyncHTTPClient
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Throughput under concurrency, with and without Recall, in one run: many callers send at once
// through AsyncHTTPClient to an origin on the loopback (SwiftNIO, in this process), first
// through the bare transport, then through a pipeline with an HTTPCache, rounds interleaved so
// that the machine's drift affects both sides alike.
//
//   swift run -c release ConcurrentLoad [--callers 16] [--seconds 2] [--rounds 5] [--mode miss|hit|both]
//                                        [--variant cache|pipeline|write-behind|no-coalescing|minimal|raw-table] [--only bare|recall]
//
// miss: every request asks for a new URL (a storable 1 KB answer, max-age=600): each one goes
// to the origin and is stored (the cache's miss path at full concurrency, stores and
// evictions included). hit: the callers ask for 100 URLs the cache holds.
// With the default variant each round also runs a minimal cache (a key, one locked table read and
// one write: the floor of any cache), and the last lines add `concurrent-ratio miss-minimal R` and
// `miss-gap-to-minimal G` (the minimal ratio less the cache's; issue #55), then the same gap
// round by round (median and range: how far the rounds agree). The rounds go through every order
// of the sides in turn (six for three sides). `--variant minimal` runs the minimal cache on both of
// its sides: an A/A check of the tool itself (over nine rounds its gap read −0.014, by round
// −0.027 at the median; single rounds spread ±0.1).
// The last lines read `concurrent-ratio miss R` and `concurrent-ratio hit R`: Recall's requests
// per second over the bare transport's (median of the rounds).

/// The run's settings, from the command line.
struct Settings {
    var callers = 16
    var seconds = 2.0
    var rounds = 5
    var modes = ["miss", "hit"]
    /// What the "recall" side is: the default cache, or a part of it (to find where time goes).
    var variant = "cache"
    /// Runs only this side (for a profiler), printing no ratio.
    var only: String?

    init(_ arguments: [String]) {
        var arguments = arguments.makeIterator()
        while let argument = arguments.next() {
            switch argument {
            case "--callers": callers = arguments.next().flatMap(Int.init) ?? callers
            case "--seconds": seconds = arguments.next().flatMap(Double.init) ?? seconds
            case "--rounds": rounds = arguments.next().flatMap(Int.init) ?? rounds
            case "--variant": variant = arguments.next() ?? variant
            case "--only": only = arguments.next()
            case "--mode":
                let mode = arguments.next() ?? "both"
                modes = mode == "both" ? ["miss", "hit"] : [mode]
            default:
                print(
                    "usage: ConcurrentLoad [--callers N] [--seconds S] [--rounds N] [--mode miss|hit|both] [--variant cache|pipeline|write-behind|no-coalescing|minimal|raw-table] [--only bare|recall]"
                )
                exit(2)
            }
        }
    }
}

let settings = Settings(Array(CommandLine.arguments.dropFirst()))
let (callers, seconds, rounds, modes) = (settings.callers, settings.seconds, settings.rounds, settings.modes)

/// Answers every request with 200, `Cache-Control: max-age=600` and 1 KB.
final class OriginHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    static let body = String(repeating: "x", count: 1024)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        var head = HTTPResponseHead(version: .http1_1, status: .ok)
        head.headers.add(name: "Content-Length", value: "1024")
        head.headers.add(name: "Cache-Control", value: "max-age=600")
        head.headers.add(name: "Content-Type", value: "text/plain")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: Self.body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

let serverGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let server = try await ServerBootstrap(group: serverGroup)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(OriginHandler()) }
    }
    .bind(host: "127.0.0.1", port: 0).get()
let port = server.localAddress?.port ?? 0

var configuration = HTTPClient.Configuration()
configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: callers)
let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup(numberOfThreads: 1), configuration: configuration)
let transport = AsyncHTTPClientTransport(client: client)

/// One side of the comparison: a transport, and a fresh one per round for the cache.
struct Side {
    let name: String
    let make: @Sendable () -> any Transport
}

let allSides = [
    Side(name: "bare") { transport },
    Side(name: "recall") {
        var configuration = CacheConfiguration()
        switch settings.variant {
        case "pipeline": return Pipeline(transport: transport)
        case "minimal": return Pipeline(transport: transport, hooks: [MinimalCache()])  // a floor for any cache
        case "raw-table": return Pipeline(transport: transport, hooks: [MinimalCache(key: Keying.urlText)])  // the same, keyed by the URL's text
        case "write-behind": configuration.writesBehind = true
        case "no-coalescing": configuration.coalescesRequests = false
        default: break
        }
        return Pipeline(transport: transport, hooks: [HTTPCache(storage: MemoryStorage(), configuration: configuration)])
    },
    // The floor of any cache, in the same rounds as the cache itself (issue #55: the gap to it).
    Side(name: "minimal") { Pipeline(transport: transport, hooks: [MinimalCache()]) }
]

let sides = allSides.filter { side in
    if let only = settings.only { return side.name == only }
    // (The other variants are parts of the cache; `--variant minimal` runs the minimal cache on
    // both sides: an A/A check of the tool, whose gap should read about 0.)
    return side.name != "minimal" || settings.variant == "cache" || settings.variant == "minimal"
}

/// Requests completed by `callers` callers in `seconds`, with the median latency.
func round(_ target: any Transport, mode: String, round: Int) async throws -> (perSecond: Double, p50: Double) {
    let base = "http://127.0.0.1:\(port)"
    if mode == "hit" {  // the cache holds the 100 URLs before the clock starts
        for index in 0..<100 { _ = try await target.send(URLRequest(url: URL(string: "\(base)/hot/\(index)")!)) }
    }
    let clock = ContinuousClock()
    let end = clock.now + .seconds(seconds)
    let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
        for caller in 0..<callers {
            group.addTask {
                var latencies: [Double] = []
                var number = 0
                while clock.now < end {
                    number += 1
                    let path = mode == "hit" ? "/hot/\((caller * 7 + number) % 100)" : "/r\(round)/c\(caller)/n\(number)"
                    let start = clock.now
                    let response = try await target.send(URLRequest(url: URL(string: base + path)!))
                    let body = try await response.body.collect(upTo: 1 << 20)
                    precondition(response.status == 200 && body.count == 1024, "unexpected answer \(response.status)")
                    latencies.append((clock.now - start).seconds)
                }
                return latencies
            }
        }
        return try await group.reduce(into: []) { $0 += $1 }.sorted()
    }
    return (Double(latencies.count) / seconds, latencies[latencies.count / 2])
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

print("\(callers) callers, \(seconds) s per round, \(rounds) rounds per side, AsyncHTTPClient over the loopback to a SwiftNIO origin")
print("| mode | side | requests/s (median) | p50 latency (ms) | each round (k/s) |")
print("|---|---|---|---|---|")
let orders = permutations(sides)
var ratios: [String: Double] = [:]
var roundGaps: [String: [Double]] = [:]
for mode in modes {
    // Warm both sides (connections, code) before measuring.
    for side in sides { _ = try await round(side.make(), mode: mode, round: -1) }
    var results: [String: [(perSecond: Double, p50: Double)]] = [:]
    for index in 0..<rounds {
        // The rounds go through every order of the sides in turn (six for three sides: use a
        // multiple of six rounds for balance), so that no side always runs first, in the middle,
        // or right after the same other side.
        for side in orders[index % orders.count] {
            results[side.name, default: []].append(try await round(side.make(), mode: mode, round: index))
        }
    }
    for side in sides {
        let measured = results[side.name] ?? []
        let each = measured.map { String(format: "%.1f", $0.perSecond / 1000) }.joined(separator: ", ")
        print(
            String(
                format: "| %@ | %@ | %.0f | %.3f | %@ |", mode, side.name, median(measured.map(\.perSecond)),
                median(measured.map(\.p50)) * 1000, each))
    }
    if let recall = results["recall"], let bare = results["bare"] {
        ratios[mode] = median(recall.map(\.perSecond)) / median(bare.map(\.perSecond))
        if let minimal = results["minimal"] {
            ratios[mode + "-minimal"] = median(minimal.map(\.perSecond)) / median(bare.map(\.perSecond))
            // The gap round by round (each round's three sides ran within seconds of each other):
            // how far the rounds agree.
            let gaps = (0..<rounds).map { (minimal[$0].perSecond - recall[$0].perSecond) / bare[$0].perSecond }.sorted()
            roundGaps[mode] = gaps
        }
    }
}
for mode in modes {
    if let ratio = ratios[mode] { print(String(format: "concurrent-ratio %@ %.3f", mode, ratio)) }
    if let ratio = ratios[mode], let minimal = ratios[mode + "-minimal"] {
        print(String(format: "concurrent-ratio %@-minimal %.3f", mode, minimal))
        print(String(format: "%@-gap-to-minimal %.3f", mode, minimal - ratio))
        if let gaps = roundGaps[mode] {
            print(
                String(
                    format: "%@-gap-to-minimal by round: median %.3f, from %.3f to %.3f", mode, median(gaps), gaps.first ?? 0,
                    gaps.last ?? 0))
        }
    }
}
try await client.shutdown().get()
try await server.close().get()
try await serverGroup.shutdownGracefully()
