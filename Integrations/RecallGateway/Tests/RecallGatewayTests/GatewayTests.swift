import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
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
        counts.withLockedValue {
            $0[path, default: 0] += 1
            if head.headers.contains(name: "X-Secret-Hop") { $0["X-Secret-Hop", default: 0] += 1 }
        }
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

    @Test("a HEAD carries the representation's Content-Length, from the upstream and from the cache; fields a Connection field names are not passed on")
    func headAndConnectionFields() async throws {
        try await Self.withGateway { gateway, client, counts in
            var first = HTTPClientRequest(url: gateway + "/catalog")
            first.headers.add(name: "Connection", value: "X-Secret-Hop")
            first.headers.add(name: "X-Secret-Hop", value: "1")
            _ = try await client.execute(first, timeout: .seconds(30)).body.collect(upTo: 1 << 20)
            #expect(counts.withLockedValue { $0["/catalog"] } == 1 && counts.withLockedValue { $0["X-Secret-Hop"] } == nil)
            var head = HTTPClientRequest(url: gateway + "/catalog")
            head.method = .HEAD
            head.headers.add(name: "Connection", value: "X-Secret-Hop")
            head.headers.add(name: "X-Secret-Hop", value: "1")
            let response = try await client.execute(head, timeout: .seconds(30))
            #expect(response.status == .ok)
            #expect(response.headers.first(name: "Content-Length") == String("catalog for nobody".utf8.count))
        }
    }

    @Test("a request target that would climb out of the upstream's path is refused, spelled out or percent-encoded")
    func targetsStayUnderTheUpstream() {
        let gateway = Gateway(upstream: URL(string: "https://api.example.com/v1")!, pipeline: Pipeline(transport: MockUnused()))
        #expect(gateway.target(of: "/items?page=2")?.absoluteString == "https://api.example.com/v1/items?page=2")
        for escape in ["/../admin", "/%2e%2e/admin", "/a/%2E%2E/%2e%2e/admin", "/./x", "//evil.example/x", "/a%2F..%2Fb", "http://elsewhere/x"] {
            #expect(gateway.target(of: escape) == nil, "\(escape)")
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

/// A transport no test sends through.
private struct MockUnused: Transport {
    func send(_ request: URLRequest) async throws -> RecallResponse { throw CancellationError() }
}
