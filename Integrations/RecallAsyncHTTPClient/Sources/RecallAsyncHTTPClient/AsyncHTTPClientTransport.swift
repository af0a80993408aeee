import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import Recall

/// A Recall ``Recall/Transport`` over AsyncHTTPClient's `HTTPClient`, for server-side Swift
/// (Vapor, Hummingbird, services calling upstreams).
///
/// ```swift
/// let upstream = Pipeline(transport: AsyncHTTPClientTransport(client: .shared),
///                         hooks: [HTTPCache()], retrierFactory: .exponentialBackoff(maxAttempts: 3))
/// ```
///
/// - **The `HTTPClient` stays yours**: the transport never shuts it down (use `.shared`, or shut
///   down your own after the last request).
/// - The response body is collected up to ``maxResponseBodyBytes``; a larger one fails the
///   attempt with a ``Recall/TransportError`` of kind `.other` saying so.
/// - The request's `timeoutInterval` becomes AHC's deadline for the whole exchange (Recall's
///   per-attempt timeouts and deadline come on top, from the retrier).
/// - Cancelling the calling task cancels the request (AHC stops at once).
/// - AHC retries connecting to a host that refuses until the request's deadline unless its
///   configuration's `connectionPool.retryConnectionEstablishment` is `false`: turn it off for a
///   prompt offline answer from the cache and Recall's own retries.
/// - Every AHC and NIO failure becomes a ``Recall/TransportError`` of the kind the retrier,
///   the idempotency rule, the circuit breaker and the cache's offline answers understand
///   (``mapError(_:url:)``): connection refused or a connect timeout is `.cannotConnect` and
///   never sent (so even a `POST` may be retried), a connection the server closed is
///   `.connectionLost`, read and deadline timeouts are `.timedOut`, DNS failures `.dnsFailure`,
///   TLS failures `.tls`.
public struct AsyncHTTPClientTransport: Transport {
    /// The client requests go through.
    public let client: HTTPClient
    /// The largest response body collected (32 MiB).
    public let maxResponseBodyBytes: Int

    /// A transport over `client`, which stays the caller's.
    public init(client: HTTPClient = .shared, maxResponseBodyBytes: Int = 32 << 20) {
        self.client = client
        self.maxResponseBodyBytes = max(0, maxResponseBodyBytes)
    }

    /// AHC stops a request as soon as its task is cancelled.
    public var respondsToCancellation: Bool { true }

    /// Sends `request` through the client.
    public func send(_ request: URLRequest) async throws -> RecallResponse {
        guard let url = request.url else { throw TransportError(.other, message: "the request has no URL") }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            outgoing.headers.add(name: name, value: value)
        }
        if let body = request.httpBody {
            outgoing.body = .bytes(ByteBuffer(bytes: body))
        }
        let timeout = request.timeoutInterval.isFinite && request.timeoutInterval > 0 ? request.timeoutInterval : 60
        let deadline = NIODeadline.now() + .nanoseconds(Int64(min(timeout, 1e9) * 1e9))
        do {
            let response = try await client.execute(outgoing, deadline: deadline)
            let bytes = try await response.body.collect(upTo: maxResponseBodyBytes)
            var headers = HeaderFields()
            for field in response.headers { headers.add(field.name, field.value) }
            return RecallResponse(status: Int(response.status.code), headers: headers, body: Data(bytes.readableBytesView),
                            url: response.url ?? url)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.mapError(error, url: url)
        }
    }
}
