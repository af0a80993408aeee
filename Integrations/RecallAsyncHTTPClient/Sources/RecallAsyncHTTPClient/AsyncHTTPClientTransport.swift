import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import Recall

/// A Recall ``/Recall/Transport`` over AsyncHTTPClient's `HTTPClient`, for server-side Swift
/// (Vapor, Hummingbird, services calling upstreams).
///
/// ```swift
/// let upstream = Pipeline(transport: AsyncHTTPClientTransport(client: .shared),
///                         hooks: [HTTPCache()], retrierFactory: .exponentialBackoff(maxAttempts: 3))
/// ```
///
/// - **The `HTTPClient` stays yours**: the transport never shuts it down (use `.shared`, or shut
///   down your own after the last request).
/// - The response is handed over as soon as its head is in; its body streams from AHC's body
///   stream as the caller reads it (``/Recall/ResponseBody``), at the caller's pace, with no
///   size limit unless ``maxResponseBodyBytes`` sets one (then a longer body fails with a
///   ``/Recall/TransportError`` of kind `.other` saying so). A body of at most
///   ``/Recall/ResponseBody/collectedUpTo`` bytes by its `Content-Length` arrives whole with the
///   head. A body cut short of its `Content-Length` fails the read with `.connectionLost`. AHC's
///   deadline (the request's `timeoutInterval`) covers the whole exchange, body included.
/// - The request's `timeoutInterval` becomes AHC's deadline for the whole exchange (Recall's
///   per-attempt timeouts and deadline come on top, from the retrier).
/// - Cancelling the calling task cancels the request (AHC stops at once).
/// - AHC retries connecting to a host that refuses until the request's deadline unless its
///   configuration's `connectionPool.retryConnectionEstablishment` is `false`: turn it off for a
///   prompt offline answer from the cache and Recall's own retries.
/// - Every AHC and NIO failure becomes a ``/Recall/TransportError`` of the kind the retrier,
///   the idempotency rule, the circuit breaker and the cache's offline answers understand
///   (``mapError(_:url:)``): connection refused or a connect timeout is `.cannotConnect` and
///   never sent (so even a `POST` may be retried), a connection the server closed is
///   `.connectionLost`, read and deadline timeouts are `.timedOut`, DNS failures `.dnsFailure`,
///   TLS failures `.tls`.
public struct AsyncHTTPClientTransport: Transport {
    /// The client requests go through.
    public let client: HTTPClient
    /// The largest response body passed on, in bytes; nil (the default) for no limit: bodies
    /// stream, so their size costs no memory here.
    public let maxResponseBodyBytes: Int?

    /// A transport over `client`, which stays the caller's, passing on bodies of at most
    /// `maxResponseBodyBytes` (nil: any size).
    public init(client: HTTPClient = .shared, maxResponseBodyBytes: Int? = nil) {
        self.client = client
        self.maxResponseBodyBytes = maxResponseBodyBytes.map { max(0, $0) }
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
            var headers = HeaderFields()
            for field in response.headers { headers.add(field.name, field.value) }
            let status = Int(response.status.code)
            let length = ResponseBody.declaredLength(status: status, headers: headers, requestMethod: request.httpMethod)
            if let limit = maxResponseBodyBytes, let length, length > limit { throw Self.overLimit(limit, url: url) }
            if let length, length <= ResponseBody.collectedUpTo {
                // Small: whole, with the head (a stream would cost more than it saves).
                let bytes = try await response.body.collect(upTo: length)
                guard bytes.readableBytes == length else { throw TransportError.bodyEnded(after: bytes.readableBytes, of: length, url: url) }
                return RecallResponse(status: status, headers: headers, body: Data(bytes.readableBytesView), url: response.url ?? url)
            }
            return RecallResponse(
                status: status, headers: headers, body: body(of: response, expectedLength: length, url: url),
                url: response.url ?? url)
        } catch let error as TransportError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.mapError(error, url: url)
        }
    }

    /// The body of `response` as a Recall stream, read from AHC's body stream as the caller takes
    /// it; the caller leaving cancels the reading, and with it the request.
    private func body(of response: HTTPClientResponse, expectedLength: Int?, url: URL) -> ResponseBody {
        let limit = maxResponseBodyBytes
        return ResponseBody.producing(expectedLength: expectedLength, url: url) { writer in
            var received = 0
            do {
                for try await buffer in response.body {
                    received += buffer.readableBytes
                    if let limit, received > limit { throw Self.overLimit(limit, url: url) }
                    try await writer.write(Data(buffer.readableBytesView))
                }
            } catch let error as TransportError {
                throw error
            } catch  where !(error is CancellationError) {
                throw Self.mapError(error, url: url)
            }
        }
    }

    private static func overLimit(_ limit: Int, url: URL) -> TransportError {
        TransportError(.other, url: url, message: "a response body of more than \(limit) bytes, over the transport's maxResponseBodyBytes")
    }
}
