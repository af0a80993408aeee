import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``Transport`` over `URLSession`.
///
/// The transport owns its session, created from the configuration you pass with
/// `urlCache = nil` and `requestCachePolicy = .reloadIgnoringLocalCacheData`, so that
/// Foundation's cache (which on Linux never stores anyway) stays out of the way and caching
/// is done by ``HTTPCache`` alike on every platform. Every HTTP status is a ``Response``;
/// failures without a response throw ``TransportError``.
///
/// - **Redirects** are a choice (``Redirects``): followed by default, as URLSession does, in
///   which case ``Response/url`` is the URL that answered and ``HTTPCache`` stores the
///   response under that URL, never under the one that redirected; or returned as they are
///   (`.doNotFollow`), so the caller or the cache sees the 3xx itself.
/// - **Cancellation** is safe on every toolchain: each request is a data task driven by the
///   session's delegate, and a cancelled call cancels its task asynchronously, off the task's
///   cancellation handler. (swift-corelibs-foundation's own `data(for:)` cancels synchronously
///   inside the handler and can deadlock against the session's queue; Recall's per-attempt
///   timeouts cancel often, so they would freeze the process.)
///
/// Per-attempt timeouts belong in Recall's retry layer, not in `timeoutInterval`
/// (swift-corelibs-foundation truncates it to whole seconds).
public final class URLSessionTransport: Transport {
    /// What the transport does with a redirect (3xx with `Location`).
    public enum Redirects: Sendable, Hashable {
        /// Follow it, as URLSession does by default; the response is the target's.
        case follow
        /// Return the 3xx response itself.
        case doNotFollow
    }

    /// The session requests go through.
    public let session: URLSession
    /// What happens to redirects.
    public let redirects: Redirects
    private let delegate: SessionDelegate

    /// Creates a transport with its own session made from `configuration` (ephemeral by
    /// default) that follows redirects or not.
    public init(configuration: URLSessionConfiguration = .ephemeral, redirects: Redirects = .follow) {
        let configuration = configuration.copy() as! URLSessionConfiguration
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        self.redirects = redirects
        delegate = SessionDelegate(followsRedirects: redirects == .follow)
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// `true`: a cancelled call answers at once with `CancellationError` (the data task is
    /// cancelled on the side).
    public var respondsToCancellation: Bool { true }

    /// Sends `request` through the session.
    public func send(_ request: URLRequest) async throws -> Response {
        var request = request
        // Recall's cache decides; never let Foundation answer from or write to its own.
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let handle = TaskHandle()
        let (data, response) = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                let task = session.dataTask(with: request)
                delegate.register(task, continuation)
                if handle.start(task) {
                    task.resume()
                } else {
                    delegate.fail(task, with: CancellationError())
                }
            }
        } onCancel: {
            // Answer the caller now; the data task is cancelled on the side and its late
            // completion finds nobody waiting.
            if let task = handle.cancel() { delegate.fail(task, with: CancellationError()) }
        }
        guard let http = response as? HTTPURLResponse else {
            throw TransportError(.other, url: request.url, message: "the response was not HTTP (\(type(of: response)))")
        }
        return Response(http, body: data)
    }
}

/// The data task of one call, and whether the call was cancelled before it started.
private final class TaskHandle: Sendable {
    private let state = Locked<(task: URLSessionTask?, cancelled: Bool)>((nil, false))

    /// Records `task`; `false` when the call was cancelled already (the task must not start).
    func start(_ task: URLSessionTask) -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.task = task
            return true
        }
    }

    /// Cancels the task, asynchronously: never from inside the cancellation handler, where
    /// corelibs' `cancel()` may wait on a queue that is waiting on this task's status lock.
    /// Returns the task, when it had started.
    @discardableResult
    func cancel() -> URLSessionTask? {
        let task = state.withLock { state -> URLSessionTask? in
            state.cancelled = true
            return state.task
        }
        guard let task else { return nil }
        DispatchQueue.global().async { task.cancel() }
        return task
    }
}

/// Collects each task's body and resumes its caller when the task completes.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Running {
        var continuation: CheckedContinuation<(Data, URLResponse), any Error>
        var body = Data()
    }

    private let followsRedirects: Bool
    private let running = Locked<[Int: Running]>([:])

    init(followsRedirects: Bool) {
        self.followsRedirects = followsRedirects
    }

    func register(_ task: URLSessionTask, _ continuation: CheckedContinuation<(Data, URLResponse), any Error>) {
        running.withLock { $0[task.taskIdentifier] = Running(continuation: continuation) }
    }

    /// Ends a task that was never started.
    func fail(_ task: URLSessionTask, with error: any Error) {
        running.withLock { $0.removeValue(forKey: task.taskIdentifier) }?.continuation.resume(throwing: error)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        running.withLock { $0[dataTask.taskIdentifier]?.body.append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(followsRedirects ? request : nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let finished = running.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            let url = task.originalRequest?.url
            if let response = task.response, response.expectedContentLength > Int64(finished.body.count), !(error.isCancellation) {
                // The body stopped short of its Content-Length: corelibs reports an unknown error
                // ("transfer closed with n bytes remaining"), but the connection was lost.
                let message = "the connection closed after \(finished.body.count) of \(response.expectedContentLength) body bytes"
                finished.continuation.resume(throwing: TransportError(.connectionLost, url: url,
                                                                      urlErrorCode: (error as? URLError)?.errorCode, message: message))
                return
            }
            finished.continuation.resume(throwing: Self.transportError(error, url: url))
        } else if let response = task.response {
            finished.continuation.resume(returning: (finished.body, response))
        } else {
            finished.continuation.resume(throwing: TransportError(.other, url: task.originalRequest?.url,
                                                                  message: "the task finished without a response"))
        }
    }

    private static func transportError(_ error: any Error, url: URL?) -> any Error {
        guard let error = error as? URLError else { return TransportError(.other, url: url, message: "\(error)") }
        if error.code == .cancelled { return CancellationError() }
        return TransportError(error, url: url)
    }
}
