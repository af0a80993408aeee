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
/// is done by ``HTTPCache`` alike on every platform. Every HTTP status is a ``RecallResponse``;
/// failures without a response throw ``TransportError``.
///
/// - **Redirects** are a choice (``Redirects``): followed by default, as URLSession does, in
///   which case ``RecallResponse/url`` is the URL that answered and ``HTTPCache`` stores the
///   response under that URL, never under the one that redirected; or returned as they are
///   (`.doNotFollow`), so the caller or the cache sees the 3xx itself.
/// - **Cancellation** is safe on every toolchain: each request is a data task driven by the
///   session's delegate, and a cancelled call cancels its task asynchronously, off the task's
///   cancellation handler. (swift-corelibs-foundation's own `data(for:)` cancels synchronously
///   inside the handler and can deadlock against the session's queue; Recall's per-attempt
///   timeouts cancel often, so they would freeze the process.)
///
/// - **Body size** may be limited (``maxResponseBodyBytes``): a larger body fails the request
///   with ``TransportError`` (kind `other`, not retried) as soon as its `Content-Length` or
///   the bytes received pass the limit, and its task is cancelled, so the transport never
///   holds more than the limit.
///
/// - **Large bodies on Linux** stream in bounded memory: swift-corelibs-foundation cannot pause a
///   transfer, so the session the transport makes holds libcurl while 256 chunks wait for its
///   delegate, and what the body's reader has not taken beyond 2 MiB waits in an unlinked temporary
///   file. A body the reader takes more slowly than the network brings it is thus written to disk
///   once more; `AsyncHTTPClientTransport` paces its download by the reader instead (see the
///   README's figures).
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
    /// What happens to redirects (for a session given to ``init(session:)``, its delegate decides).
    public let redirects: Redirects
    /// The largest response body accepted, in bytes; nil for no limit. A larger body fails the
    /// request as it arrives. Always nil for a session given to ``init(session:)`` (its
    /// completion handler gets the body whole).
    public let maxResponseBodyBytes: Int?
    /// The delegate of a session the transport made; nil for a session it was given.
    private let delegate: SessionDelegate?

    /// Creates a transport with its own session made from `configuration` (ephemeral by
    /// default; never with a cookie jar, which would share one caller's cookies with the next)
    /// that follows redirects or not, and accepts response bodies of at most
    /// `maxResponseBodyBytes` bytes (nil, the default: any size).
    public init(
        configuration: URLSessionConfiguration = .ephemeral, redirects: Redirects = .follow,
        maxResponseBodyBytes: Int? = nil
    ) {
        let configuration = configuration.copy() as! URLSessionConfiguration
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // No cookie jar: one transport serves many callers, and a jar would send one caller's
        // cookie with another's request, below the cache. Cookies are the caller's to send.
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        self.redirects = redirects
        self.maxResponseBodyBytes = maxResponseBodyBytes.map { max(0, $0) }
        delegate = SessionDelegate(followsRedirects: redirects == .follow, maxBodyBytes: self.maxResponseBodyBytes)
        #if canImport(Darwin)
            session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        #else
            let delegateQueue = PacedDelegateQueue()
            session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: delegateQueue)
            if let transferQueue = SessionTransferQueues.transferQueue(of: session) {
                delegateQueue.adopt(transferQueue: transferQueue)
                delegate?.transfer = (transferQueue, delegateQueue.mailbox)
            }
        #endif
    }

    /// Creates a transport over a session you made (`URLSession.shared`, or one whose
    /// configuration lists protocol classes): its configuration and delegate apply, redirects
    /// included, and it stays yours (the transport never invalidates it). Its `URLCache` is not
    /// used: every request is sent with `.reloadIgnoringLocalCacheData`.
    public init(session: URLSession) {
        self.session = session
        self.redirects = .follow
        self.maxResponseBodyBytes = nil
        self.delegate = nil
    }

    deinit {
        if delegate != nil { session.finishTasksAndInvalidate() }
    }

    /// `true`: a cancelled call answers at once with `CancellationError` (the data task is
    /// cancelled on the side).
    public var respondsToCancellation: Bool { true }

    /// Sends `request` through the session. Returns as soon as the head is in: the body
    /// streams as it arrives (``ResponseBody``) for a session the transport made; a session given
    /// to ``init(session:)`` delivers it whole.
    public func send(_ request: URLRequest) async throws -> RecallResponse {
        var request = request
        // Recall's cache decides; never let Foundation answer from or write to its own.
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let handle = TaskHandle()
        let (head, body) = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(URLResponse, ResponseBody), any Error>) in
                let task: URLSessionTask
                if let delegate {
                    task = session.dataTask(with: request)
                    delegate.register(task, continuation)
                } else {
                    // A session of the caller's: its own delegate stays in charge; the answer comes
                    // to a completion handler, once, through the handle (a cancelled call has answered).
                    task = session.dataTask(with: request) { data, response, error in
                        handle.finish(data: data, response: response, error: error)
                    }
                    handle.await(continuation)
                }
                if handle.start(task) {
                    task.resume()
                } else {
                    fail(task, handle: handle, with: CancellationError())
                }
            }
        } onCancel: {
            // Answer the caller now; the data task is cancelled on the side and its late
            // completion finds nobody waiting.
            if let task = handle.cancel() { fail(task, handle: handle, with: CancellationError()) }
        }
        // (The body was made on the session's delegate queue; taking the lock it took after making
        // it orders what it wrote before what this task reads, also for ThreadSanitizer, which
        // does not see the continuation's hand-over.)
        delegate?.settle()
        guard let http = head as? HTTPURLResponse else {
            body.discard()
            throw TransportError(.other, url: request.url, message: "the response was not HTTP (\(type(of: head)))")
        }
        guard !(100..<200).contains(http.statusCode) || http.statusCode == 101 else {
            // swift-corelibs-foundation takes an interim response (102, 103 Early Hints) for the
            // final one and loses the final status and fields: never hand that over as an answer.
            body.discard()
            throw TransportError(
                .other, url: request.url,
                message: "the session reported the interim response \(http.statusCode) as "
                    + "the answer, without the final status and fields (swift-corelibs-foundation does so for any 1xx before the answer)")
        }
        return RecallResponse(http, body: body)
    }

    /// Answers the call of `task` with `error` (the task's own completion, if any, is dropped).
    private func fail(_ task: URLSessionTask, handle: TaskHandle, with error: any Error) {
        if let delegate { delegate.fail(task, with: error) } else { handle.finish(data: nil, response: nil, error: error) }
    }
}

/// The data task of one call, whether the call was cancelled before it started, and (for a
/// session of the caller's) the continuation its completion handler resumes, once.
private final class TaskHandle: Sendable {
    private let state = Locked<(task: URLSessionTask?, cancelled: Bool)>((nil, false))
    private let waiting = Locked<CheckedContinuation<(URLResponse, ResponseBody), any Error>?>(nil)

    /// Keeps the continuation a completion handler resumes.
    func await(_ continuation: CheckedContinuation<(URLResponse, ResponseBody), any Error>) {
        waiting.withLock { $0 = continuation }
    }

    /// Resumes the continuation with the task's outcome; later calls do nothing.
    func finish(data: Data?, response: URLResponse?, error: (any Error)?) {
        guard
            let continuation = waiting.withLock({ state in
                defer { state = nil }; return state
            })
        else { return }
        let url = state.withLock { $0.task?.originalRequest?.url }
        if let error {
            continuation.resume(throwing: error is CancellationError ? error : SessionDelegate.transportError(error, url: url))
        } else if let response {
            continuation.resume(returning: (response, ResponseBody(data ?? Data())))
        } else {
            continuation.resume(throwing: TransportError(.other, url: url, message: "the task finished without a response"))
        }
    }

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

/// Hands each task's head to its caller as soon as it arrives, then streams its body into the
/// ``ResponseBody`` the caller got, and ends it when the task completes.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private typealias Caller = CheckedContinuation<(URLResponse, ResponseBody), any Error>

    private enum Running {
        /// The caller waits for the head.
        case waiting(Caller)
        /// A body of at most ``ResponseBody/collectedUpTo`` bytes by its `Content-Length`: the caller
        /// gets it whole, with the head, when the task completes (no stream to pay for).
        case collecting(Caller, URLResponse, expected: Int, Data)
        /// The caller has the head; the body streams. (The task is never suspended for a slow
        /// reader: swift-corelibs-foundation's `suspend()` during a transfer traps — seen here — so
        /// what the reader has not taken waits: up to 2 MiB in memory, the rest in a temporary
        /// file, ``SpillingWriter``.)
        case streaming(SpillingWriter, received: Int, expected: Int?)
    }

    private let followsRedirects: Bool
    private let maxBodyBytes: Int?
    private let running = Locked<[Int: Running]>([:])
    #if !canImport(Darwin)
        /// The queue the session's transfers run on and the calls they run between two chunks
        /// (``TransferMailbox``), told to ``SessionTransferQueues`` while a body streams (set once,
        /// before the first task).
        nonisolated(unsafe) var transfer: (queue: DispatchQueue, mailbox: TransferMailbox)?
    #endif

    init(followsRedirects: Bool, maxBodyBytes: Int?) {
        self.followsRedirects = followsRedirects
        self.maxBodyBytes = maxBodyBytes
    }

    /// A body began to stream (`true`) or ended.
    private func streaming(_ began: Bool) {
        #if !canImport(Darwin)
            guard let transfer else { return }
            if began {
                SessionTransferQueues.shared.began(transfer.queue, mailbox: transfer.mailbox)
            } else {
                SessionTransferQueues.shared.ended(transfer.queue)
            }
        #endif
    }

    func register(_ task: URLSessionTask, _ continuation: CheckedContinuation<(URLResponse, ResponseBody), any Error>) {
        running.withLock { $0[task.taskIdentifier] = .waiting(continuation) }
    }

    /// Takes and lets go of the lock the delegate takes after making a caller's body (see ``send(_:)``).
    func settle() {
        running.withLock { _ in }
    }

    /// Answers the caller of `task` with `error` when it still waits for its answer (a task
    /// never started, or a call cancelled); a body already streaming is left to its reader.
    func fail(_ task: URLSessionTask, with error: any Error) {
        let caller = running.withLock { running -> Caller? in
            switch running[task.taskIdentifier] {
            case .waiting(let continuation)?, .collecting(let continuation, _, _, _)?:
                running.removeValue(forKey: task.taskIdentifier)
                return continuation
            default:
                return nil
            }
        }
        caller?.resume(throwing: error)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let url = dataTask.originalRequest?.url
        var expected: Int?
        if let http = response as? HTTPURLResponse {
            expected = ResponseBody.declaredLength(
                status: http.statusCode, headers: RecallResponse(http, body: Data()).headers,
                requestMethod: dataTask.originalRequest?.httpMethod)
        }
        if let limit = maxBodyBytes, response.expectedContentLength > Int64(limit) {
            guard case .waiting(let continuation)? = running.withLock({ $0.removeValue(forKey: dataTask.taskIdentifier) }) else {
                return completionHandler(.cancel)
            }
            completionHandler(.cancel)
            continuation.resume(throwing: Self.overLimit("of \(response.expectedContentLength) bytes", limit: limit, url: url))
            return
        }
        if let expected, expected <= ResponseBody.collectedUpTo {
            let collecting = running.withLock { running -> Bool in
                guard case .waiting(let continuation)? = running[dataTask.taskIdentifier] else { return false }
                running[dataTask.taskIdentifier] = .collecting(continuation, response, expected: expected, Data(capacity: expected))
                return true
            }
            return completionHandler(collecting ? .allow : .cancel)
        }
        let (body, writer) = ResponseBody.makeStream(expectedLength: expected, url: url)
        let caller = running.withLock { running -> Caller? in
            guard case .waiting(let continuation)? = running[dataTask.taskIdentifier] else { return nil }
            running[dataTask.taskIdentifier] = .streaming(SpillingWriter(writer), received: 0, expected: expected)
            return continuation
        }
        guard let caller else { return completionHandler(.cancel) }
        streaming(true)
        // The reader left (cancelled, or dropped the body): stop the download, off this callback.
        let task = UncheckedTask(task: dataTask)
        writer.onTermination { DispatchQueue.global().async { task.task.cancel() } }
        completionHandler(.allow)
        caller.resume(returning: (response, body))
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let limit = maxBodyBytes
        enum Next { case none, yield(SpillingWriter), refuse(SpillingWriter) }
        let next = running.withLock { running -> Next in
            switch running[dataTask.taskIdentifier] {
            case .collecting(let caller, let response, let expected, var body)?:
                running[dataTask.taskIdentifier] = nil  // (no copy of the bytes while they are appended)
                body.append(data)
                running[dataTask.taskIdentifier] = .collecting(caller, response, expected: expected, body)
                return .none
            case .streaming(let writer, let received, let expected)?:
                if let limit, received + data.count > limit {
                    running.removeValue(forKey: dataTask.taskIdentifier)
                    return .refuse(writer)
                }
                running[dataTask.taskIdentifier] = .streaming(writer, received: received + data.count, expected: expected)
                return .yield(writer)
            default:
                return .none
            }
        }
        switch next {
        case .none:
            break
        case .yield(let writer):
            writer.yield(data)
        case .refuse(let writer):
            streaming(false)
            writer.finish(throwing: Self.overLimit("of more than \(limit ?? 0) bytes", limit: limit ?? 0, url: dataTask.originalRequest?.url))
            // Off this delegate callback, as for a cancelled call.
            DispatchQueue.global().async { dataTask.cancel() }
        }
    }

    private static func overLimit(_ size: String, limit: Int, url: URL?) -> TransportError {
        TransportError(.other, url: url, message: "a response body \(size), over the transport's maxResponseBodyBytes of \(limit)")
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(followsRedirects ? request : nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let url = task.originalRequest?.url
        switch running.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) {
        case .waiting(let continuation)?:
            if let error {
                continuation.resume(throwing: Self.transportError(error, url: url))
            } else if let response = task.response {
                let body = Self.bodyNeverDelivered(response, task: task)
                // Made after the lock above was let go: taking it again orders the making before
                // the caller's settle() (see send(_:)), also for ThreadSanitizer.
                settle()
                continuation.resume(returning: (response, body))
            } else {
                continuation.resume(throwing: TransportError(.other, url: url, message: "the task finished without a response"))
            }
        case .collecting(let continuation, let response, let expected, let body)?:
            if let error {
                continuation.resume(throwing: Self.failure(error, received: body.count, promised: Int64(expected), url: url))
            } else if body.count < expected {
                continuation.resume(throwing: TransportError.bodyEnded(after: body.count, of: expected, url: url))
            } else {
                continuation.resume(returning: (response, ResponseBody(body)))
            }
        case .streaming(let writer, let received, let expected)?:
            streaming(false)
            guard let error else { return writer.finish() }  // (checked against its Content-Length there)
            // (The length the body must reach by its head — none under a content coding, which
            // corelibs decodes: a decoding failure is not a short body.)
            writer.finish(throwing: Self.failure(error, received: received, promised: Int64(expected ?? -1), url: url))
        case nil:
            break
        }
    }

    /// The body of a task that finished without telling its delegate of its response: none —
    /// unless it is a `301`–`308` (to anything but `HEAD`) that may have had one, which corelibs
    /// then dropped (it keeps such a body aside for a redirect and loses it when there is none: a
    /// 3xx without `Location`). Only a declared length of 0 says there was nothing to lose; any
    /// other — a length, chunked, a content coding — gives a body that fails when read, so nobody
    /// mistakes it for an empty one and the cache does not store it. The status and fields still
    /// reach the caller.
    private static func bodyNeverDelivered(_ response: URLResponse, task: URLSessionTask) -> ResponseBody {
        guard let http = response as? HTTPURLResponse, (301...308).contains(http.statusCode),
            task.originalRequest?.httpMethod?.uppercased() != "HEAD"
        else { return ResponseBody() }
        let declared = ResponseBody.declaredLength(
            status: http.statusCode, headers: RecallResponse(http, body: Data()).headers,
            requestMethod: task.originalRequest?.httpMethod)
        if declared == 0 { return ResponseBody() }
        let url = task.originalRequest?.url
        let (body, writer) = ResponseBody.makeStream(expectedLength: declared, url: url)
        writer.finish(
            throwing: TransportError(
                .other, url: url,
                message: "corelibs Foundation did not deliver the body of this "
                    + "\(http.statusCode) response (it drops the body of a 3xx without Location)"))
        return body
    }

    /// `error`, which ended a task after `received` body bytes of the `promised` (-1: unknown),
    /// as the caller gets it: a body short of its `Content-Length` is a lost connection
    /// (corelibs reports an unknown error, "transfer closed with n bytes remaining").
    private static func failure(_ error: any Error, received: Int, promised: Int64, url: URL?) -> any Error {
        guard promised > Int64(received), !error.isCancellation else { return transportError(error, url: url) }
        return TransportError.bodyEnded(after: received, of: Int(promised), url: url)
    }

    static func transportError(_ error: any Error, url: URL?) -> any Error {
        guard let error = error as? URLError else { return TransportError(.other, url: url, message: "\(error)") }
        if error.code == .cancelled { return CancellationError() }
        return TransportError(error, url: url)
    }
}

/// A data task handed to the code that cancels it when its body's reader leaves.
private struct UncheckedTask: @unchecked Sendable {
    let task: URLSessionTask
}
