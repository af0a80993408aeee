import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Puts a ``Pipeline`` — cache, retrier, hooks — under any `URLSession` whose configuration
/// lists this class, with no change at the call sites: code written against `URLSession`, and
/// clients built on it (Alamofire, Get, Nuke, Moya, the OpenAPI URLSession transport), get
/// Recall's cache and retries without knowing it.
///
/// ```swift
/// let configuration = URLSessionConfiguration.default
/// try configuration.sendThroughRecall(pipeline)                 // the one line
/// let session = URLSession(configuration: configuration)        // any client built on it
/// ```
///
/// How it behaves:
/// - Requests go through the first route of ``routes`` that matches their host
///   (``URLProtocolRoutes``); a request no route takes, or one that is not `http(s)`, goes to
///   the session's other protocols untouched.
/// - The pipeline's transport must not send through a session that lists this class, or the
///   requests would come back here: its default `URLSessionTransport()` has a session of its
///   own. ``URLProtocolRoutes/add(_:hosts:)`` refuses the visible case.
/// - A request's body is read from `httpBody` or, where Foundation hands it over as a stream
///   (Apple's platforms), from `httpBodyStream`, up to ``maxRequestBodyBytes``.
/// - Stopping the load (a cancelled task, a cancelled `async` call) cancels the pipeline's work:
///   the session reports `URLError(.cancelled)` as usual.
/// - Every status arrives as a response, as from the network; errors that outlast the retrier
///   arrive as the session's error (a ``TransportError`` carrying the `URLError` it came from
///   when there was one). Foundation's own `URLCache` is not written: Recall caches.
/// - swift-corelibs-foundation (Linux) does not show an upload task's body to a `URLProtocol`:
///   such a task fails with ``RecallURLProtocolError/uploadBodyUnavailable`` rather than being
///   sent without its body. Use a data task with `httpBody` there.
///
/// Two sessions of one process that need different pipelines for the same host use subclasses,
/// each with its own routes:
///
/// ```swift
/// final class BillingRecall: RecallURLProtocol {
///     static let billing = URLProtocolRoutes()
///     override class var routes: URLProtocolRoutes { billing }
/// }
/// ```
open class RecallURLProtocol: URLProtocol {
    /// Where this class finds its pipelines: ``URLProtocolRoutes/shared`` unless a subclass
    /// overrides it.
    open class var routes: URLProtocolRoutes { .shared }

    /// The largest request body read from a stream (64 MiB); a larger one fails the request
    /// with `URLError(.dataLengthExceedsMaximum)`.
    open class var maxRequestBodyBytes: Int { 64 << 20 }

    /// The work of one load, cancelled by `stopLoading` — also when that comes first.
    private let work = Locked((task: Task<Void, Never>?.none, stopped: false))

    /// Takes `http` and `https` requests a route matches.
    override open class func canInit(with request: URLRequest) -> Bool {
        routes.route(for: request) != nil
    }

    /// The request as it is (Recall canonicalizes its cache keys itself).
    override open class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    /// Sends the request through its route's pipeline and hands the answer to the session.
    override open func startLoading() {
        let client = UncheckedClient(protocol: self, client: self.client)
        guard let route = Self.routes.route(for: request) else {
            client.fail(URLError(.unsupportedURL))
            return
        }
        let prepared: URLRequest
        do {
            prepared = try Self.withBody(request, isUpload: task is URLSessionUploadTask)
        } catch {
            client.fail(error)
            return
        }
        let fallbackURL = request.url
        let pipeline = route.pipeline
        let task = Task {
            do {
                let response = try await pipeline.send(prepared)
                try Task.checkCancellation()
                client.deliver(response, fallbackURL: fallbackURL)
            } catch {
                // After stopLoading the session wants nothing more from this protocol.
                if !Task.isCancelled { client.fail(error) }
            }
        }
        let stopped = work.withLock { work in
            work.task = task
            return work.stopped
        }
        if stopped { task.cancel() }
    }

    /// Cancels the pipeline's work for this load.
    override open func stopLoading() {
        let task = work.withLock { work in
            work.stopped = true
            return work.task
        }
        task?.cancel()
    }

    /// `request` with its body in `httpBody`, read from `httpBodyStream` when Foundation put it
    /// there.
    static func withBody(_ request: URLRequest, isUpload: Bool) throws -> URLRequest {
        var prepared = request
        if let stream = request.httpBodyStream {
            prepared.httpBodyStream = nil
            prepared.httpBody = try read(stream, limit: maxRequestBodyBytes)
        } else if isUpload, request.httpBody == nil {
            throw RecallURLProtocolError.uploadBodyUnavailable
        }
        return prepared
    }

    /// Every byte of `stream`, at most `limit`.
    static func read(_ stream: InputStream, limit: Int) throws -> Data {
        stream.open()
        defer { stream.close() }
        var body = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBufferPointer { stream.read($0.baseAddress!, maxLength: $0.count) }
            if count < 0 { throw stream.streamError ?? URLError(.cannotDecodeRawData) }
            if count == 0 { return body }
            guard body.count + count <= limit else { throw URLError(.dataLengthExceedsMaximum) }
            body.append(buffer, count: count)
        }
    }
}

/// The protocol object and its client, handed to the task that runs the pipeline. URLProtocol
/// is not `Sendable`; its client may be called from any thread, and nothing else of the
/// protocol is touched from there.
private struct UncheckedClient: @unchecked Sendable {
    let `protocol`: URLProtocol
    let client: (any URLProtocolClient)?

    func deliver(_ response: Response, fallbackURL: URL?) {
        client?.urlProtocol(self.protocol, didReceive: response.httpURLResponse(fallbackURL: fallbackURL), cacheStoragePolicy: .notAllowed)
        if !response.body.isEmpty { client?.urlProtocol(self.protocol, didLoad: response.body) }
        client?.urlProtocolDidFinishLoading(self.protocol)
    }

    func fail(_ error: any Error) {
        client?.urlProtocol(self.protocol, didFailWithError: error)
    }
}
