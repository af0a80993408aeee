import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Recall

/// A small HTTP/1.1 server on SwiftNIO that answers each request with a ``RecallResponse`` and
/// streams its body back as it comes: the gateway's front door (and, in the tests, its upstream).
struct HTTPServer: Sendable {
    /// Answers one request: its head and its body (collected, up to `maxRequestBody` bytes).
    typealias Handler = @Sendable (HTTPRequestHead, ByteBuffer) async -> RecallResponse

    /// The largest request body taken; a longer one is answered `413`.
    var maxRequestBody = 8 << 20

    /// Fields of one connection only (RFC 9110 §7.6.1), never passed on — with those a
    /// `Connection` field names (``passedOn(_:)``) — and `Content-Length`, which each side sets
    /// for the body it sends, and `Host`.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "transfer-encoding",
        "upgrade", "trailer", "content-length", "host"
    ]

    /// The fields of `fields` that are passed on: all but ``hopByHop`` and those the
    /// `Connection` fields name.
    static func passedOn(_ fields: [(name: String, value: String)]) -> [(name: String, value: String)] {
        let named = Set(
            fields.filter { $0.name.lowercased() == "connection" }.flatMap { $0.value.split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        return fields.filter { !hopByHop.contains($0.name.lowercased()) && !named.contains($0.name.lowercased()) }
    }

    /// Serves on `host`:`port` (`0`: a free port) until the calling task is cancelled; `ready`
    /// gets the port bound, once listening.
    func serve(host: String, port: Int, ready: @Sendable (Int) -> Void = { _ in }, handler: @escaping Handler) async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                }
            }
        ready(server.channel.localAddress?.port ?? port)
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    group.addTask { try? await self.serve(connection, handler: handler) }
                }
            }
        }
    }

    /// Answers the requests of one connection in turn.
    private func serve(
        _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, handler: Handler
    ) async throws {
        try await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body = ByteBuffer()
            var tooLarge = false
            for try await part in inbound {
                switch part {
                case .head(let received):
                    (head, tooLarge) = (received, false)
                    body.clear()
                case .body(var chunk):
                    if body.readableBytes + chunk.readableBytes > maxRequestBody { tooLarge = true } else { body.writeBuffer(&chunk) }
                case .end:
                    guard let request = head else { continue }
                    let response =
                        tooLarge
                        ? RecallResponse.text("request body over \(maxRequestBody) bytes", status: 413)
                        : await handler(request, body)
                    try await write(response, for: request, to: outbound)
                }
            }
        }
    }

    /// Writes `response` to `request`: its head, then its body as it streams (a `HEAD`, a `204`
    /// and a `304` have none; a body that fails half way cuts the connection, so the client sees
    /// a short body, never a whole one).
    private func write(
        _ response: RecallResponse, for request: HTTPRequestHead, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var headers = HTTPHeaders()
        for field in Self.passedOn(response.headers.map { ($0.name, $0.value) }) { headers.add(name: field.name, value: field.value) }
        let hasBody = request.method != .HEAD && response.status != 204 && response.status != 304 && response.status >= 200
        if hasBody, let length = response.body.expectedLength ?? response.body.bytes?.count {
            headers.replaceOrAdd(name: "Content-Length", value: String(length))
        } else if !hasBody, let length = response.headers["Content-Length"] {
            // (A HEAD's or a 304's length is the representation's, which its head carries.)
            headers.replaceOrAdd(name: "Content-Length", value: length)
        }
        try await outbound.write(.head(HTTPResponseHead(version: request.version, status: .init(statusCode: response.status), headers: headers)))
        if hasBody {
            for try await chunk in response.body where !chunk.isEmpty {
                try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: chunk))))
            }
        } else {
            response.body.discard()
        }
        try await outbound.write(.end(nil))
    }
}
