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
/// - The session's `httpAdditionalHeaders` are added to requests that do not set those fields,
///   and its `timeoutIntervalForRequest`/`timeoutIntervalForResource` bound the load as its own
///   protocol would: the head by the shorter, from the start; then each silence of the body by
///   the request limit and the whole load by the resource limit. It then fails with
///   `URLError(.timedOut)`.
/// - Stopping the load (a cancelled task, a cancelled `async` call) cancels the pipeline's work:
///   the session reports `URLError(.cancelled)` as usual.
/// - Every status arrives as a response, as from the network. Errors that outlast the retrier
///   arrive as the session's error **as a `URLError`**, so code that checks `URLError` codes
///   keeps working: a `URLError` as it was; a ``TransportError`` with the code it came from, or
///   the code of its kind (a timeout `.timedOut`, a refused connection `.cannotConnectToHost`,
///   DNS `.cannotFindHost`, a lost connection `.networkConnectionLost`, TLS
///   `.secureConnectionFailed`); a deadline (``RetryError``) `.timedOut`; an open circuit
///   `.cannotConnectToHost`; anything else `.unknown`. Recall's own error is kept in the
///   `userInfo` under `NSUnderlyingErrorKey`. Foundation's own `URLCache` is not written:
///   Recall caches.
/// - The session's client is called on the thread that started the load (through its run loop)
///   on Apple's platforms, as `URLProtocol` requires there; swift-corelibs-foundation's client
///   may be called from any thread. Nothing reaches the client after ``stopLoading()``.
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

    /// The work of one load, cancelled by `stopLoading` — also when that comes first — and
    /// whether the session still wants to hear from it.
    private let work = Locked(Work())
    /// Held while the answer goes to the client and while the load stops: a stop waits for a
    /// delivery under way, and a delivery never begins after a stop. (Recursive, in case a
    /// client stops the load from within a callback.)
    private let delivery = RecursiveLock()

    fileprivate struct Work {
        var task: Task<Void, Never>?
        /// `stopLoading` was called: the client hears nothing more.
        var stopped = false
        /// The answer's head went to the client.
        var started = false
        /// The answer (or the failure) went to the client: it hears nothing more either.
        var finished = false
    }

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
            client.failNow(URLError(.unsupportedURL), work, delivery)  // (on the loading thread already)
            return
        }
        let request = UncheckedRequest(request: request, isUpload: task is URLSessionUploadTask)
        let fallbackURL = request.request.url
        let pipeline = route.pipeline
        let (work, delivery) = (self.work, self.delivery)
        let limit = Self.maxRequestBodyBytes
        let facts = client.facts
        let task = Task {
            var client = client
            do {
                // A streamed body is read off the loading thread (its writer may need that thread).
                let prepared = facts.applied(to: try await RecallURLProtocol.withBodyOffThread(request, limit: limit))
                // The session's time limits, as its own protocol would apply them: to the head, then
                // the request limit to each silence of the body and the resource limit to it all.
                let time = TimeSource(ContinuousClock())
                let started = time.now()
                var response: RecallResponse
                do {
                    response = try await AttemptRace.run(timeout: facts.limit(for: prepared), time: time) {
                        try await pipeline.send(prepared)
                    }
                } catch is AttemptRace.TimedOut {
                    throw URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: "The session's time limit passed."])
                }
                let limits = facts.bodyLimits(for: prepared)
                response.body = TimedBody.body(
                    response.body, silence: limits.silence, remaining: limits.total.map { $0 - (time.now() - started) },
                    time: time, url: fallbackURL)
                try Task.checkCancellation()
                client = client.joiningTransfers()
                try await client.deliver(response, fallbackURL: fallbackURL, work, delivery)
            } catch {
                // After stopLoading the session wants nothing more from this protocol.
                guard !Task.isCancelled else { return }
                await client.fail(RecallURLProtocol.sessionError(error, url: fallbackURL), work, delivery)
            }
        }
        let stopped = work.withLock { work in
            work.task = task
            return work.stopped
        }
        if stopped { task.cancel() }
    }

    /// Whether the answer's head may still go to the client (not stopped, nothing sent yet);
    /// marks it sent. Called with the delivery lock held.
    fileprivate static func claimStart(_ work: Locked<Work>) -> Bool {
        work.withLock { work in
            guard !work.stopped, !work.started, !work.finished else { return false }
            work.started = true
            return true
        }
    }

    /// Whether the client still hears from the load (not stopped, not ended). Called with the
    /// delivery lock held.
    fileprivate static func isOpen(_ work: Locked<Work>) -> Bool {
        work.withLock { !$0.stopped && !$0.finished }
    }

    /// Whether the load may still end at the client (not stopped, not ended already); marks it
    /// ended. Called with the delivery lock held.
    fileprivate static func claimFinish(_ work: Locked<Work>) -> Bool {
        work.withLock { work in
            guard !work.stopped, !work.finished else { return false }
            work.finished = true
            return true
        }
    }

    /// Cancels the pipeline's work for this load. It waits for a delivery to the client under
    /// way: once it returns, the client hears nothing more from this load.
    override open func stopLoading() {
        let task = delivery.withLock {
            work.withLock { work in
                work.stopped = true
                return work.task
            }
        }
        task?.cancel()
    }

    #if !canImport(Darwin)
        /// The session's client, until the load has answered it: swift-corelibs-foundation's
        /// `URLSessionTask.cancel()` stops the load and then reports the cancellation to the client
        /// itself, which must not reach a task this load has already completed.
        override open var client: (any URLProtocolClient)? {
            get { work.withLock(\.finished) ? nil : super.client }
            set { super.client = newValue }
        }
    #endif

    /// ``withBody(_:isUpload:limit:)`` on a thread of its own (``BodyStreamReader``): reading a
    /// stream blocks until its writer has written, and a blocked thread of Dispatch's global
    /// pool starves Swift concurrency's executor on Linux. Cancelling the calling task answers at
    /// once and stops the reading at its next chunk (the stream is then closed).
    static func withBodyOffThread(_ request: UncheckedRequest, limit: Int) async throws -> URLRequest {
        guard request.request.httpBodyStream != nil else { return try withBody(request.request, isUpload: request.isUpload, limit: limit) }
        return try await BodyStreamReader.run { shouldStop in
            try withBody(request.request, isUpload: request.isUpload, limit: limit, shouldStop: shouldStop)
        }
    }

    /// `error` as the session reports it to unmodified code: a `URLError` (see the type's notes),
    /// with Recall's error under `NSUnderlyingErrorKey`.
    static func sessionError(_ error: any Error, url: URL?) -> URLError {
        if let error = error as? URLError { return error }
        var userInfo: [String: Any] = [NSUnderlyingErrorKey: error as NSError, NSLocalizedDescriptionKey: "\(error)"]
        if let url { userInfo[NSURLErrorFailingURLErrorKey] = url }
        let code: URLError.Code
        switch error {
        case let error as TransportError:
            if let known = error.urlErrorCode.flatMap({ URLError.Code(rawValue: $0) }) {
                code = known
            } else {
                switch error.code {
                case .timedOut: code = .timedOut
                case .cannotConnect: code = .cannotConnectToHost
                case .dnsFailure: code = .cannotFindHost
                case .connectionLost: code = .networkConnectionLost
                case .tls: code = .secureConnectionFailed
                case .cancelled: code = .cancelled
                default: code = .unknown
                }
            }
        case is RetryError: code = .timedOut
        case is CircuitOpenError: code = .cannotConnectToHost
        case is CancellationError: code = .cancelled
        default: code = .unknown
        }
        return URLError(code, userInfo: userInfo)
    }

    /// `request` with its body in `httpBody`, read from `httpBodyStream` when Foundation put it
    /// there.
    static func withBody(_ request: URLRequest, isUpload: Bool, limit: Int, shouldStop: () -> Bool = { false }) throws -> URLRequest {
        var prepared = request
        if let stream = request.httpBodyStream {
            prepared.httpBodyStream = nil
            prepared.httpBody = try read(stream, limit: limit, shouldStop: shouldStop)
        } else if isUpload, request.httpBody == nil {
            throw RecallURLProtocolError.uploadBodyUnavailable
        }
        return prepared
    }

    /// Every byte of `stream`, at most `limit`; stops with `CancellationError` when
    /// `shouldStop` says so between two reads. The stream is closed either way.
    static func read(_ stream: InputStream, limit: Int, shouldStop: () -> Bool = { false }) throws -> Data {
        stream.open()
        defer { stream.close() }
        var body = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if shouldStop() { throw CancellationError() }
            let count = buffer.withUnsafeMutableBufferPointer { stream.read($0.baseAddress!, maxLength: $0.count) }
            if count < 0 { throw stream.streamError ?? URLError(.cannotDecodeRawData) }
            if count == 0 { return body }
            guard body.count + count <= limit else { throw URLError(.dataLengthExceedsMaximum) }
            body.append(buffer, count: count)
        }
    }
}

/// The request of a load and whether it is an upload task's, handed to the task that reads its
/// body (`URLRequest` holds a non-`Sendable` stream; only that task reads it).
struct UncheckedRequest: @unchecked Sendable {
    let request: URLRequest
    let isUpload: Bool
}

/// The protocol object and its client, handed to the task that runs the pipeline. URLProtocol
/// is not `Sendable`; its client is called on the loading thread's run loop on Apple's
/// platforms, from any thread with swift-corelibs-foundation, and nothing else of the protocol
/// is touched from there.
private struct UncheckedClient: @unchecked Sendable {
    let `protocol`: URLProtocol
    let client: (any URLProtocolClient)?
    #if canImport(Darwin)
        /// The run loop of the thread that called `startLoading`.
        let runLoop: CFRunLoop = CFRunLoopGetCurrent()
    #else
        /// The session's work queue, which called `startLoading` (``SessionWorkQueue``), joined by
        /// the queues of streaming transfers once the answer begins (``joiningTransfers()``).
        private(set) var queue = SessionWorkQueue.current()
    #endif
    /// What the task and its session say (read in `startLoading`, on the session's work queue).
    let facts: SessionTaskFacts

    init(protocol: URLProtocol, client: (any URLProtocolClient)?) {
        self.protocol = `protocol`
        self.client = client
        self.facts = SessionTaskFacts(task: `protocol`.task)
    }

    /// This client, calling the session where a streaming transfer of ``URLSessionTransport``
    /// runs as well as on its work queue — whichever comes first — so that its calls do not wait
    /// behind that transfer (``SessionTransferQueues``). (On Apple's platforms, itself.)
    func joiningTransfers() -> UncheckedClient {
        #if canImport(Darwin)
            return self
        #else
            var joined = self
            let current = SessionTransferQueues.shared.current
            joined.queue = queue?.joined(with: current.queues, mailboxes: current.mailboxes)
            return joined
        #endif
    }

    /// Hands `response` to the client, unless the load was stopped (then, and once it has
    /// begun, the client hears nothing more from this load): the head, then the body — whole, or
    /// each chunk of a streamed body as it arrives, read while the chunks before it are delivered
    /// but with at most ``deliveredAhead`` bytes on their way to the client (a transport that paces
    /// its download by its reader, as AsyncHTTPClient's does, then goes at the client's pace) —
    /// then the end. With swift-corelibs-foundation a chunk is on its way until the session's
    /// (serial) delegate queue has run it: the client only queues it there. On
    /// Apple's platforms all of it on the loading thread's run loop, where `stopLoading` comes
    /// too. With swift-corelibs-foundation on the session's work queue, which its client calls must
    /// share with the session's task registry — but for the end of a task that completes inline
    /// (see below). A streamed body that fails after its head fails the load with its error.
    func deliver(_ response: RecallResponse, fallbackURL: URL?, _ work: Locked<RecallURLProtocol.Work>, _ delivery: RecursiveLock) async throws {
        let head = UncheckedResponse(response: response.httpURLResponse(fallbackURL: fallbackURL))
        // A client that keeps only the last chunk (see ``SessionTaskFacts/takesChunks``) gets the
        // body whole, as its session would have held it anyway.
        let whole = facts.takesChunks ? response.body.bytes : try await response.body.collect(upTo: Int.max)
        let start: @Sendable () -> Bool = {
            delivery.withLock {
                guard RecallURLProtocol.claimStart(work) else { return false }
                client?.urlProtocol(self.protocol, didReceive: head.response, cacheStoragePolicy: .notAllowed)
                if let whole, !whole.isEmpty { client?.urlProtocol(self.protocol, didLoad: whole) }
                return true
            }
        }
        if whole != nil {
            guard await onClientThreadAndWait(start) else { return }
        } else {
            // The first chunk is read while the head is on its way: read before the head's turn on the
            // client's thread comes, it goes with the head in that turn (on corelibs, every turn may
            // wait behind a streaming transfer's work: one fewer before the first byte); else it
            // follows the head on the same thread, and finds the load closed if the head found it
            // stopped. Reading the next chunk overlaps the delivery of the last ones, at most
            // `deliveredAhead` bytes of them on their way.
            let window = DeliveryWindow(limit: Self.deliveredAhead)
            let delegateQueue = facts.delegateQueue
            let load: @Sendable (Data) -> Void = { chunk in
                let delivered = delivery.withLock {
                    guard RecallURLProtocol.isOpen(work) else { return false }
                    client?.urlProtocol(self.protocol, didLoad: chunk)
                    return true
                }
                guard delivered else { return window.close() }
                // The client queues the chunk for the delegate: it counts as delivered once the
                // delegate has had it, so a slow delegate slows the reading (and with it a
                // transport that paces its download) instead of queueing the body.
                if let delegateQueue {
                    delegateQueue.queue.addOperation { window.release(chunk.count) }
                } else {
                    window.release(chunk.count)
                }
            }
            let rider = Locked(FirstChunk.waiting)
            onClientThread(soonest: true) {
                let riding = rider.withLock { state -> Data? in
                    defer { state = .gone }
                    guard case .riding(let chunk) = state else { return nil }
                    return chunk
                }
                guard start() else { return window.close() }
                if let riding { load(riding) }
            }
            var isFirst = true
            for try await chunk in response.body {
                guard await window.reserve(chunk.count) else { return }  // (the body is dropped: its download stops)
                let rides =
                    isFirst
                    && rider.withLock { state -> Bool in
                        guard case .waiting = state else { return false }
                        state = .riding(chunk)
                        return true
                    }
                if !rides { onClientThread(soonest: isFirst) { load(chunk) } }
                isFirst = false
            }
            await window.drain()
            guard !window.isClosed else { return }
        }
        await end(ending(work, delivery) { client?.urlProtocolDidFinishLoading(self.protocol) })
    }

    /// How many bytes of a streamed body may be on their way to the client (1 MiB; a larger
    /// chunk goes alone) while the next chunk is read.
    static let deliveredAhead = 1 << 20

    /// A streamed body's first chunk, and the head's turn on the client's thread: still to come
    /// (the chunk goes with the head if it is read before), the chunk waiting for the head's turn,
    /// or the turn taken.
    private enum FirstChunk {
        case waiting
        case riding(Data)
        case gone
    }

    /// Runs `call` where the client is called, and returns what it returned.
    private func onClientThreadAndWait(_ call: @escaping @Sendable () -> Bool) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            onClientThread(soonest: true) { continuation.resume(returning: call()) }
        }
    }

    /// Runs `report`, which ends the load at the client (and so reads the session's task
    /// registry), where corelibs allows it: on the work queue, or — for a task that completes
    /// inline (corelibs' `async` `data(for:)` family: it resumes a continuation there) — from
    /// another thread while the queue is held (the registry read is then alone). Not on the
    /// queue: a cancellation of the caller's Swift task holds that task's lock while it waits for
    /// the work queue, and the continuation's resumption needs the lock; the hold lets go after
    /// a while for it.
    /// (On Apple's platforms, on the loading thread's run loop.)
    private func end(_ report: @escaping @Sendable () -> Void) async {
        #if canImport(Darwin)
            onClientThread(report)
        #else
            if facts.completesInline, let queue {
                await queue.whileHeld(report)
            } else if facts.completesInline {
                report()
            } else {
                onClientThread(report)
            }
        #endif
    }

    /// `call`, which ends the load at the client, made to run under the delivery lock and only
    /// if the load was neither stopped nor ended already.
    private func ending(
        _ work: Locked<RecallURLProtocol.Work>, _ delivery: RecursiveLock,
        _ call: @escaping @Sendable () -> Void
    ) -> @Sendable () -> Void {
        {
            delivery.withLock {
                guard RecallURLProtocol.claimFinish(work) else { return }
                call()
            }
        }
    }

    /// Reports `error` to the client as the end of the load (where ends go: ``end(_:)``),
    /// unless the load was stopped or has ended.
    func fail(_ error: any Error, _ work: Locked<RecallURLProtocol.Work>, _ delivery: RecursiveLock) async {
        await end(failure(error, work, delivery))
    }

    /// ``fail(_:_:_:)`` from the thread that started the load (on corelibs, the work queue).
    func failNow(_ error: any Error, _ work: Locked<RecallURLProtocol.Work>, _ delivery: RecursiveLock) {
        failure(error, work, delivery)()
    }

    private func failure(_ error: any Error, _ work: Locked<RecallURLProtocol.Work>, _ delivery: RecursiveLock) -> @Sendable () -> Void {
        let error = UncheckedError(error: error)
        return ending(work, delivery) { client?.urlProtocol(self.protocol, didFailWithError: error.error) }
    }

    /// Runs `body` where the client is called: `soonest` for a call the first byte waits for
    /// (the head, the first chunk), which a streaming transfer on corelibs may run between two of
    /// its own chunks (``SessionWorkQueue/async(soonest:_:)``).
    private func onClientThread(soonest: Bool = false, _ body: @escaping @Sendable () -> Void) {
        #if canImport(Darwin)
            CFRunLoopPerformBlock(runLoop, CFRunLoopMode.commonModes.rawValue, body)
            CFRunLoopWakeUp(runLoop)
        #else
            if let queue { queue.async(soonest: soonest, body) } else { body() }
        #endif
    }
}

/// A response built for the client, handed to the thread that calls it.
private struct UncheckedResponse: @unchecked Sendable {
    let response: HTTPURLResponse
}

/// An error for the client, handed to the thread that calls it.
private struct UncheckedError: @unchecked Sendable {
    let error: any Error
}
