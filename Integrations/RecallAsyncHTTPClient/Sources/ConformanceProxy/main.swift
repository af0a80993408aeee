import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import Recall
import RecallAsyncHTTPClient

// A caching reverse proxy for measuring Recall against an HTTP-cache conformance suite
// (scripts/cache-tests.sh, docs/conformance.md): every request to 127.0.0.1:LISTEN goes through an
// HTTPCache (in memory, of the audience given) over an AsyncHTTPClientTransport (or a
// URLSessionTransport) to ORIGIN, redirects not followed, and its answer comes back.
//
//     ConformanceProxy LISTEN ORIGIN [one-user|many-users|shared] [ahc|urlsession]
//
// A measuring tool, not a product: it holds each body in memory and keeps no logs but errors.

let arguments = CommandLine.arguments
let listen = arguments.count > 1 ? Int(arguments[1]) ?? 8001 : 8001
let origin = arguments.count > 2 ? arguments[2] : "http://127.0.0.1:8000"
var configuration = CacheConfiguration()
switch arguments.count > 3 ? arguments[3] : "many-users" {
case "one-user": configuration.audience = .oneUser
case "shared": configuration.audience = .shared
case "many-users": configuration.audience = .manyUsers
case let other:
    print("ConformanceProxy: unknown audience \(other) (one-user, many-users or shared)")
    exit(2)
}
let useURLSession = arguments.count > 4 && arguments[4] == "urlsession"

var clientConfiguration = HTTPClient.Configuration()
clientConfiguration.redirectConfiguration = .disallow
clientConfiguration.connectionPool.retryConnectionEstablishment = false
// The test server closes idle connections after 5 s; tests pause about that long.
clientConfiguration.connectionPool.idleTimeout = .seconds(4)
let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
let transport: any Transport = useURLSession ? URLSessionTransport(redirects: .doNotFollow) : AsyncHTTPClientTransport(client: client)

/// Sends again (up to three times in all) when a pooled connection turned out closed before any
/// answer — the test server closes idle connections after 5 s and after answers whose
/// `Connection` field it does not know: the retry a real pipeline's retrier makes, without
/// retrying statuses, which the tests count.
struct AgainOnLostConnection: Transport {
    let inner: any Transport
    func send(_ request: URLRequest) async throws -> RecallResponse {
        for _ in 1..<3 {
            do {
                return try await inner.send(request)
            } catch let error as TransportError where error.code == .connectionLost {
                continue
            }
        }
        return try await inner.send(request)
    }
}

let pipeline = Pipeline(transport: AgainOnLostConnection(inner: transport), hooks: [HTTPCache(configuration: configuration)])

let hopByHop: Set<String> = ["connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "content-length", "host"]

func answer(_ head: HTTPRequestHead, body: ByteBuffer) async -> (HTTPResponseHead, ByteBuffer) {
    guard let url = URL(string: origin + head.uri) else {
        let text = "proxy: not a request target: \(head.uri)"
        return (
            HTTPResponseHead(version: head.version, status: .badRequest, headers: ["Content-Length": String(text.utf8.count)]),
            ByteBuffer(string: text)
        )
    }
    var request = URLRequest(url: url)
    request.httpMethod = head.method == .MSEARCH ? "M-SEARCH" : head.method.rawValue  // (NIO spells it MSEARCH)
    for (name, value) in head.headers where !hopByHop.contains(name.lowercased()) {
        request.addValue(value, forHTTPHeaderField: name)
    }
    if body.readableBytes > 0 { request.httpBody = Data(body.readableBytesView) }
    do {
        let response = try await pipeline.send(request).collected()
        var headers = HTTPHeaders()
        for field in response.headers where !hopByHop.contains(field.name.lowercased()) { headers.add(name: field.name, value: field.value) }
        let bytes = response.body.bytes ?? Data()
        if head.method == .HEAD {
            if let length = response.headers["Content-Length"] { headers.add(name: "Content-Length", value: length) }
        } else if response.status != 304, response.status != 204, response.status >= 200 {
            headers.add(name: "Content-Length", value: String(bytes.count))
        }
        let status = HTTPResponseStatus(statusCode: response.status)
        return (
            HTTPResponseHead(version: head.version, status: status, headers: headers),
            head.method == .HEAD ? ByteBuffer() : ByteBuffer(bytes: bytes)
        )
    } catch {
        let text = "proxy: \(error)"
        FileHandle.standardError.write(Data("\(head.method) \(head.uri): \(error)\n".utf8))
        return (
            HTTPResponseHead(version: head.version, status: .badGateway, headers: ["Content-Length": String(text.utf8.count)]),
            ByteBuffer(string: text)
        )
    }
}

let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .bind(host: "127.0.0.1", port: listen) { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
        }
    }
print("listening on \(listen), origin \(origin), \(configuration.audience), \(useURLSession ? "URLSession" : "AHC")")
try await withThrowingDiscardingTaskGroup { group in
    try await server.executeThenClose { connections in
        for try await connection in connections {
            group.addTask {
                try? await connection.executeThenClose { inbound, outbound in
                    var head: HTTPRequestHead?
                    var body = ByteBuffer()
                    for try await part in inbound {
                        switch part {
                        case .head(let received): head = received; body.clear()
                        case .body(var chunk): body.writeBuffer(&chunk)
                        case .end:
                            guard let request = head else { continue }
                            let (responseHead, responseBody) = await answer(request, body: body)
                            try await outbound.write(.head(responseHead))
                            if responseBody.readableBytes > 0 { try await outbound.write(.body(.byteBuffer(responseBody))) }
                            try await outbound.write(.end(nil))
                        }
                    }
                }
            }
        }
    }
}
