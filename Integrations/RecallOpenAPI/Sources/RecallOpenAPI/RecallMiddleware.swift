import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import HTTPTypes
import OpenAPIRuntime
import Recall

/// Recall under an OpenAPI-generated client: a `ClientMiddleware` that runs Recall's hooks — an
/// ``/Recall/HTTPCache`` above all — and its retrier around the rest of the client's chain (the
/// middlewares after it, then the transport).
///
/// ```swift
/// let client = Client(serverURL: url, transport: URLSessionTransport(), middlewares: [
///     BearerAuthMiddleware(token: token),   // credentials first: the cache must see them
///     RecallMiddleware(hooks: [HTTPCache()], retrierFactory: .exponentialBackoff(), credentialsMayBeAddedBelow: false),
/// ])
/// ```
///
/// - **Order.** swift-openapi-runtime runs `middlewares[0]` outermost: a middleware after this
///   one changes the request after the cache has looked it up. Put this middleware **after**
///   every middleware that adds credentials (an `Authorization` header, a cookie, an API key),
///   so that the cache sees them and keeps each user's responses apart, and say so with
///   `credentialsMayBeAddedBelow: false`. Until you do (the default, `true`), the cache cannot
///   tell users apart and stores only responses that a shared cache may serve to anyone
///   (`public` or `must-revalidate`, after RFC 9111 §3.5; never `private`, `s-maxage` or
///   `Vary` on a credential field): a `private` answer is never served to another caller,
///   whatever the order.
/// - Requests and responses are converted between swift-http-types' `HTTPRequest`/`HTTPResponse`
///   and Recall's `URLRequest`/``/Recall/RecallResponse``. A request body is collected up to
///   ``maxRequestBodyBytes`` (see below); a response body **streams** from the transport's
///   `HTTPBody` through the hooks (the cache keeps a copy as it passes) to the client's, read
///   once, with no size limit unless ``maxResponseBodyBytes`` sets one.
/// - A request is **retried only when its body can be sent again**: no body, or one whose
///   `iterationBehavior` is `.multiple` and that fits ``maxRequestBodyBytes``. A `.single` body
///   (a stream) is passed on as it is, never buffered, and the request is sent once; the hooks
///   still see it (a successful `POST` still invalidates what the cache holds for its URL).
/// - `next` may be called only while the call lasts, so a `stale-while-revalidate` refresh runs
///   before the answer (the stale response answers if it fails) rather than in the background.
/// - Errors thrown below this middleware reach the retrier as they are; errors of clients that
///   adopt ``/Recall/TransportErrorConvertible`` are classified like `URLError`s.
public struct RecallMiddleware: ClientMiddleware {
    /// The hooks, outermost first.
    public var hooks: [any ServiceHook]
    /// The retry strategy.
    public var retrierFactory: any RetrierFactory
    /// The largest request body collected so that the request can be retried (4 MiB); a larger
    /// one is passed on as it is, and that request is not retried.
    public var maxRequestBodyBytes: Int
    /// The largest response body passed on, in bytes; nil (the default) for no limit: bodies
    /// stream, so their size costs no memory here. A longer body fails its read with a
    /// ``/Recall/TransportError`` of kind `other`.
    public var maxResponseBodyBytes: Int?
    /// The clock retry delays and attempt timeouts run on.
    public var clock: any Clock<Duration>
    /// Called with every event of every request (cache results, attempts, retries).
    public var observer: (@Sendable (RecallEvent, RecallContext) -> Void)?
    /// Whether a middleware after this one may add credentials to the request (`true` unless
    /// you say otherwise): then the hooks' caches keep only what every caller may share (see
    /// ``/Recall/HTTPCache/credentialsMayBeAddedBelow``). Put this middleware after the ones
    /// that add credentials and pass `false`.
    public var credentialsMayBeAddedBelow: Bool

    /// Creates the middleware.
    public init(
        hooks: [any ServiceHook] = [], retrierFactory: any RetrierFactory = NilRetrierFactory(),
        maxRequestBodyBytes: Int = 4 << 20, maxResponseBodyBytes: Int? = nil,
        clock: any Clock<Duration> = ContinuousClock(),
        observer: (@Sendable (RecallEvent, RecallContext) -> Void)? = nil, credentialsMayBeAddedBelow: Bool = true
    ) {
        self.hooks = hooks
        self.retrierFactory = retrierFactory
        self.maxRequestBodyBytes = max(0, maxRequestBodyBytes)
        self.maxResponseBodyBytes = maxResponseBodyBytes.map { max(0, $0) }
        self.clock = clock
        self.observer = observer
        self.credentialsMayBeAddedBelow = credentialsMayBeAddedBelow
    }

    /// Sends the request through the hooks and the retrier, each attempt through `next`.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var outgoing = try URLRequest(request, baseURL: baseURL)
        let (replayable, passedOn) = try await collect(body)
        outgoing.httpBody = replayable
        let retries = passedOn == nil ? retrierFactory : NilRetrierFactory()
        let (hooks, clock, observer, limit) = (hooks, clock, observer, maxResponseBodyBytes)
        let unseen = credentialsMayBeAddedBelow || HTTPCache.credentialsMayBeAddedBelow
        let response = try await withoutActuallyEscaping(next) { next in
            let transport = NextTransport(next: next, baseURL: baseURL, passedOnBody: passedOn, maxResponseBodyBytes: limit)
            let pipeline = Pipeline(transport: transport, hooks: hooks, retrierFactory: retries, clock: clock, observer: observer)
            return try await HTTPCache.$credentialsMayBeAddedBelow.withValue(unseen) { try await pipeline.send(outgoing) }
        }
        return (HTTPResponse(response), Self.httpBody(response.body))
    }

    /// A Recall body as the runtime's: whole bytes as they are; a stream read once, as it comes.
    private static func httpBody(_ body: ResponseBody) -> HTTPBody {
        if let bytes = body.bytes { return HTTPBody(bytes) }
        return HTTPBody(body, length: body.expectedLength.map { .known(Int64($0)) } ?? .unknown, iterationBehavior: .single)
    }

    /// The body as bytes that can be sent again, or — for a body that may be read only once or
    /// is too large — the body to pass on as it is.
    private func collect(_ body: HTTPBody?) async throws -> (Data?, HTTPBody?) {
        guard let body else { return (nil, nil) }
        guard body.iterationBehavior == .multiple else { return (nil, body) }
        if case .known(let length) = body.length, length > Int64(maxRequestBodyBytes) { return (nil, body) }
        do {
            return (try await Data(collecting: body, upTo: maxRequestBodyBytes), nil)
        } catch  where !(error is CancellationError) {
            return (nil, body)  // longer than it said (or than the limit): sent once, as it is
        }
    }
}
