import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Recall
@testable import RecallGateway
import Testing

/// The gateway end to end, through real sockets: clients (a real `HTTPClient`) → the gateway
/// (its SwiftNIO server, its shared cache, an `AsyncHTTPClientTransport`) → an upstream on the
/// loopback that counts what reaches it.
@Suite("recall-gateway: an API gateway with a shared cache, end to end", .timeLimit(.minutes(2)))
struct GatewayTests {
    /// 4 MiB, written by the upstream in 64 KiB pieces: over the storage's entry limit it is
    /// not kept; under it, it is.
    static let large = Data((0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    /// What the upstream answers each path with, counting the requests that reach it.
    static func upstreamAnswer(_ head: HTTPRequestHead, counts: NIOLockedValueBox<[String: Int]>) -> RecallResponse {
        let path = String(head.uri.split(separator: "?").first ?? "")
        counts.withLockedValue { $0[path, default: 0] += 1 }
        let user = head.headers.first(name: "Authorization") ?? "nobody"
        switch path {
        case "/catalog": return .text("catalog for \(user)", headers: ["Cache-Control": "public, max-age=600"])
        case "/account": return .text("account of \(user)", headers: ["Cache-Control": "private, max-age=600"])
        case "/plain": return .text("plain for \(user)", headers: ["Cache-Control": "max-age=600"])
        case "/large":
            let (body, writer) = ResponseBody.makeStream(expectedLength: large.count)
            Task {
                var offset = 0
                while offset < large.count {
                    let end = min(offset + (64 << 10), large.count)
                    try? await writer.write(large[offset..<end])
                    offset = end
                }
                writer.finish()
            }
            return RecallResponse(
                status: 200, headers: ["Cache-Control": "public, max-age=600", "Content-Length": String(large.count)], body: body)
        default: return .text("not found", status: 404)
        }
    }

    /// Runs `body` with a gateway in front of a counting upstream, both listening on free
    /// loopback ports, and a client; stops them after.
    static func withGateway(
        _ body: (_ gateway: String, _ client: HTTPClient, _ counts: NIOLockedValueBox<[String: Int]>) async throws -> Void
    ) async throws {
        let counts = NIOLockedValueBox<[String: Int]>([:])
        let client = Gateway.client()
        let (upstreamPorts, upstreamReady) = AsyncStream<Int>.makeStream()
        let (gatewayPorts, gatewayReady) = AsyncStream<Int>.makeStream()
        let upstream = Task {
            try await HTTPServer().serve(host: "127.0.0.1", port: 0, ready: { upstreamReady.yield($0) }) { head, _ in
                upstreamAnswer(head, counts: counts)
            }
        }
        defer { upstream.cancel() }
        guard let upstreamPort = await upstreamPorts.first(where: { _ in true }) else { throw CancellationError() }
        let gateway = Gateway(
            upstream: URL(string: "http://127.0.0.1:\(upstreamPort)")!, pipeline: Gateway.pipeline(client: client, storage: MemoryStorage()))
        let front = Task {
            try await HTTPServer().serve(host: "127.0.0.1", port: 0, ready: { gatewayReady.yield($0) }) { head, body in
                await gateway.answer(head, body: body)
            }
        }
        defer { front.cancel() }
        guard let gatewayPort = await gatewayPorts.first(where: { _ in true }) else { throw CancellationError() }
        do {
            try await body("http://127.0.0.1:\(gatewayPort)", client, counts)
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    /// A GET of `url` as `user` (`nil`: anonymous): the status and the body.
    static func get(_ url: String, as user: String?, _ client: HTTPClient) async throws -> (status: UInt, body: String, age: String?) {
        var request = HTTPClientRequest(url: url)
        if let user { request.headers.add(name: "Authorization", value: "Bearer \(user)") }
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 16 << 20)
        return (response.status.code, String(buffer: body), response.headers.first(name: "Age"))
    }

    @Test(
        "a public answer fetched for one user serves every user, authenticated or not; a private one is never kept; a plain answer to an authenticated request is not kept"
    )
    func sharesWhatTheUpstreamLetsItShare() async throws {
        try await Self.withGateway { gateway, client, counts in
            #expect(try await Self.get(gateway + "/catalog", as: "alice", client).body == "catalog for Bearer alice")
            for user in [nil, "alice", "bob"] {
                let answer = try await Self.get(gateway + "/catalog", as: user, client)
                #expect(answer.status == 200 && answer.body == "catalog for Bearer alice", "\(user ?? "anonymous")")
                #expect(answer.age != nil, "a stored response carries its Age")
            }
            #expect(counts.withLockedValue { $0["/catalog"] } == 1)

            #expect(try await Self.get(gateway + "/account", as: "alice", client).body == "account of Bearer alice")
            #expect(try await Self.get(gateway + "/account", as: "bob", client).body == "account of Bearer bob")
            #expect(try await Self.get(gateway + "/account", as: "alice", client).body == "account of Bearer alice")
            #expect(counts.withLockedValue { $0["/account"] } == 3, "private: every request reaches the upstream")

            #expect(try await Self.get(gateway + "/plain", as: "alice", client).body == "plain for Bearer alice")
            #expect(try await Self.get(gateway + "/plain", as: nil, client).body == "plain for nobody")
            #expect(try await Self.get(gateway + "/plain", as: nil, client).body == "plain for nobody", "the anonymous answer is kept")
            #expect(counts.withLockedValue { $0["/plain"] } == 2)
        }
    }

    @Test("a 4 MiB body streams through the gateway whole, and is served again from the cache")
    func streamsLargeBodies() async throws {
        try await Self.withGateway { gateway, client, counts in
            for _ in 0..<2 {
                let response = try await client.execute(HTTPClientRequest(url: gateway + "/large"), timeout: .seconds(60))
                #expect(response.headers.first(name: "Content-Length") == String(Self.large.count))
                let body = try await response.body.collect(upTo: 8 << 20)
                #expect(Data(buffer: body) == Self.large)
            }
            #expect(counts.withLockedValue { $0["/large"] } == 1)
        }
    }

    @Test("an upstream that cannot be reached is a 502 that says so")
    func unreachableUpstream() async throws {
        let client = Gateway.client()
        // A port nothing listens on (discard, which no test machine serves).
        let gateway = Gateway(upstream: URL(string: "http://127.0.0.1:9")!, pipeline: Gateway.pipeline(client: client, storage: MemoryStorage()))
        let answer = await gateway.answer(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/x"), body: ByteBuffer())
        #expect(answer.status == 502)
        #expect(try await answer.collected().bodyText.contains("could not answer"))
        let bad = await gateway.answer(HTTPRequestHead(version: .http1_1, method: .GET, uri: "http://elsewhere/x"), body: ByteBuffer())
        #expect(bad.status == 400)
        try await client.shutdown()
    }
}
