import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The request pipeline: service hooks around a retrier around a transport.
///
/// ```swift
/// let pipeline = Pipeline(
///     transport: URLSessionTransport(),
///     hooks: [HTTPCache(storage: MemoryStorage())],
///     retrierFactory: .none
/// )
/// let (data, response) = try await pipeline.data(for: URLRequest(url: url))
/// ```
///
/// `hooks` are listed outermost first; list a hook instance once (an instance keeps one
/// request's state per context). A pipeline is itself a ``Transport``, so pipelines nest. See
/// ``ServiceHook`` for the order of events and ``Retrier`` for retries.
///
/// Cancelling the calling task cancels the attempt in flight (or the wait before a retry)
/// and the call throws `CancellationError`, whatever spelling the transport used.
///
/// Time limits hold against any transport: the caller gets its answer — a timeout error, a
/// deadline error, `CancellationError` — at the per-attempt timeout, the deadline or the
/// cancellation, even when the transport ignores cancellation; the abandoned attempt finishes
/// in the background and its late result is dropped.
public struct Pipeline: Transport {
    /// What the pipeline sends through, innermost.
    public var transport: any Transport { parts.transport }
    /// The hooks, outermost first.
    public var hooks: [any ServiceHook] { parts.hooks }
    /// Makes the retrier for each request.
    public var retrierFactory: any RetrierFactory { parts.retrierFactory }
    /// The clock retries and per-attempt timeouts wait on; inject a manual clock in tests.
    public var clock: any Clock<Duration> { parts.time.clock }
    /// Sees every ``RecallEvent`` of every request, as it happens.
    public var observer: (@Sendable (RecallEvent, RecallContext) -> Void)? { parts.observer }
    private var time: TimeSource { parts.time }
    private let parts: Parts

    /// Whether `other` is this very pipeline (a copy of the same value), not merely alike.
    func isSame(as other: Pipeline) -> Bool {
        parts === other.parts
    }

    /// What a pipeline is made of, in one object: a hook that re-sends gets the pipeline with
    /// each outcome (``InnerStages``), and a copy of one reference costs one count, not one per part.
    private final class Parts: Sendable {
        let transport: any Transport
        let hooks: [any ServiceHook]
        let retrierFactory: any RetrierFactory
        let observer: (@Sendable (RecallEvent, RecallContext) -> Void)?
        let time: TimeSource
        /// Asks the first hook to decide without suspending: an answer it gives there (a hit from
        /// memory) costs no async call (each allocates a frame and checks the task's executor).
        let decider: HookDecider
        /// The same, for the hit path to use without retaining it (``decider`` keeps it alive): a
        /// retain writes a reference count every core shares.
        let unownedDecider: Unmanaged<HookDecider>
        /// Whether the retrier factory is ``NilRetrierFactory``: one attempt, with no retrier
        /// to make, no clock to read and no decision to wait for.
        let singleAttempt: Bool

        init(
            transport: any Transport, hooks: [any ServiceHook], retrierFactory: any RetrierFactory, time: TimeSource,
            observer: (@Sendable (RecallEvent, RecallContext) -> Void)?
        ) {
            self.transport = transport
            self.hooks = hooks
            self.retrierFactory = retrierFactory
            self.time = time
            self.observer = observer
            self.decider = hooks.first.map { HookDecider.for($0) } ?? HookDecider()
            self.unownedDecider = Unmanaged.passUnretained(decider)
            self.singleAttempt = retrierFactory is NilRetrierFactory
        }
    }

    /// Creates a pipeline.
    /// - Parameters:
    ///   - transport: what finally answers requests.
    ///   - hooks: middleware, outermost first.
    ///   - retrierFactory: the retry strategy; `.none` by default.
    ///   - clock: the clock retry delays and attempt timeouts run on; `ContinuousClock()` by default.
    ///   - observer: called with every event (attempts, retries, budget, deadline, giving up).
    public init(
        transport: any Transport,
        hooks: [any ServiceHook] = [],
        retrierFactory: any RetrierFactory = NilRetrierFactory(),
        clock: any Clock<Duration> = ContinuousClock(),
        observer: (@Sendable (RecallEvent, RecallContext) -> Void)? = nil
    ) {
        parts = Parts(transport: transport, hooks: hooks, retrierFactory: retrierFactory, time: TimeSource(clock), observer: observer)
    }

    /// As its transport: a pipeline over a transport valid only during one call is one too.
    public var allowsBackgroundRequests: Bool { transport.allowsBackgroundRequests }

    /// Sends `request` through the hooks, the retrier and the transport.
    @discardableResult
    public func send(_ request: URLRequest) async throws -> RecallResponse {
        try await perform(request, context: RecallContext(originalRequest: request, observer: observer))
    }

    /// Sends `request` with a context the caller created, to read ``RecallContext/attempts``
    /// or hook state afterwards.
    @discardableResult
    public func send(_ request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        try await perform(request, context: context)
    }

    /// Both `send`s, inlined into each so that a hit costs one async frame.
    @inline(__always)
    private func perform(_ request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        do {
            let response: RecallResponse
            switch parts.unownedDecider._withUnsafeGuaranteedRef({ $0.decide(request, context: context) }) {
            case .act(.respond(let answer)): response = answer
            case .act(.proceed(let forwarded)): response = try await forward(forwarded, pastHookAt: 0, context: context)
            case let decided: response = try await run(hookAt: 0, request, context: context, decided: decided)
            }
            try Task.checkCancellation()
            return response
        } catch {
            throw Task.isCancelled || error.isCancellation ? CancellationError() : error
        }
    }

    /// Runs the hook at `index` and the stages inside it. `decided`: what the hook's
    /// ``ServiceHook/decide(_:context:)`` answered, when the caller asked it.
    private func run(
        hookAt index: Int, _ request: URLRequest, context: RecallContext,
        decided: HookDecision? = nil
    ) async throws -> RecallResponse {
        guard index < hooks.count else { return try await attempt(request, context: context) }
        // (The hook read where it is called, not copied first: a hook that decided already, as a
        // cache's miss has, is not called again here.)
        let action: HookAction
        switch decided ?? hooks[index].decide(request, context: context) {
        case .act(let decided): action = decided
        case .suspend(let suspension): action = try await suspension.resume()
        case .callOnSchedule: action = try await hooks[index].onSchedule(request, context: context)
        }
        switch action {
        case .respond(let response):
            return response
        case .respondThenRefresh(let response, let refresh, let followUp):
            let background = context.derived(for: refresh)
            guard transport.allowsBackgroundRequests else {
                // The transport is valid only during this call: refresh now; the stale answer
                // stands in when the refresh fails or the origin answers with a server error.
                let answer = try await self.refresh(
                    refresh, pastHookAt: index, followUp: followUp, context: background, readingToEnd: false)
                return answer.flatMap { $0.status >= 500 ? nil : $0 } ?? response
            }
            // (Read to its end: a streamed body dropped unread is abandoned, a cache keeps nothing of it.)
            TaskCensus.detached { [self] in
                _ = try? await self.refresh(refresh, pastHookAt: index, followUp: followUp, context: background, readingToEnd: true)
            }
            return response
        case .proceed(let forwarded):
            return try await forward(forwarded, pastHookAt: index, context: context)
        case .proceedThen(let forwarded, let followUp):
            return try await forward(forwarded, pastHookAt: index, context: context, followUp: followUp)
        }
    }

    /// Sends the `refresh` the hook at `index` asked for (``HookAction/respondThenRefresh(_:refresh:then:)``,
    /// in `context`, derived from the caller's) through the stages inside that hook, and gives
    /// the hook's `followUp`, or else the hook, the outcome, once: its answer, or `nil` when the
    /// refresh failed (`onFailure` heard of it; what it answers is not used). `readingToEnd`: the
    /// answer's body is read to its end (a body kept in a store needs no reading); an error there,
    /// or from `onSuccess`, makes the answer `nil` too, and is not told again (the hook had its
    /// outcome; a cache's body that broke off is its own to handle). Throws only when the calling
    /// task is cancelled (after `onFailure` heard of it, when the refresh had no answer yet).
    private func refresh(
        _ refresh: URLRequest, pastHookAt index: Int, followUp: HookFollowUp?, context: RecallContext, readingToEnd: Bool
    ) async throws -> RecallResponse? {
        let fresh: RecallResponse
        do {
            fresh = try await run(hookAt: index + 1, refresh, context: context)
        } catch {
            // A cancelled refresh is told too (a cache ends its refresh lead there), then the
            // cancellation goes on.
            let cancelled = Task.isCancelled
            _ = try? await onFailure(of: index, followUp, cancelled ? CancellationError() : error, for: refresh, context: context)
            if cancelled { throw CancellationError() }
            return nil
        }
        do {
            let answer = try await onSuccess(of: index, followUp, fresh, for: refresh, context: context)
            if readingToEnd, !answer.body.isKeptInStore { for try await _ in answer.body {} }
            return answer
        } catch {
            try Task.checkCancellation()
            return nil
        }
    }

    /// Sends `forwarded` (what the hook at `index` passed on) through the stages inside that
    /// hook, then gives the hook's `followUp`, or else the hook, the outcome: `onSuccess`, or
    /// `onFailure` to recover.
    @inline(__always)
    private func forward(
        _ forwarded: URLRequest, pastHookAt index: Int, context: RecallContext, followUp: HookFollowUp? = nil
    ) async throws -> RecallResponse {
        let response: RecallResponse
        do {
            // (The innermost hook calls the retrier at once: one async frame fewer.)
            response =
                index + 1 < hooks.count
                ? try await run(hookAt: index + 1, forwarded, context: context)
                : try await attempt(forwarded, context: context)
        } catch {
            let cancelled = Task.isCancelled || error.isCancellation
            let failure: any Error = cancelled ? CancellationError() : error
            let recovered = try await onFailure(of: index, followUp, failure, for: forwarded, context: context)
            guard let recovered, !cancelled else { throw failure }
            return recovered
        }
        return try await onSuccess(of: index, followUp, response, for: forwarded, context: context)
    }

    /// The outcome's `onSuccess`: the `followUp` the hook at `index` decided with, which gets the
    /// stages inside the hook, or else the hook's.
    @inline(__always)
    private func onSuccess(
        of index: Int, _ followUp: HookFollowUp?, _ response: RecallResponse, for request: URLRequest, context: RecallContext
    ) async throws -> RecallResponse {
        if let followUp {
            return try await followUp.onSuccess(response, for: request, context: context, inner: InnerStages(pipeline: self, index: index))
        }
        return try await hooks[index].onSuccess(response, for: request, context: context)
    }

    /// The outcome's `onFailure`: the `followUp` the hook at `index` decided with, or else the hook's.
    private func onFailure(
        of index: Int, _ followUp: HookFollowUp?, _ error: any Error, for request: URLRequest, context: RecallContext
    ) async throws -> RecallResponse? {
        if let followUp {
            return try await followUp.onFailure(error, for: request, context: context, inner: InnerStages(pipeline: self, index: index))
        }
        return try await hooks[index].onFailure(error, for: request, context: context)
    }

    /// Sends `request` through the stages inside the hook at `index`.
    func run(after index: Int, _ request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        try await run(hookAt: index + 1, request, context: context)
    }

    private func attempt(_ request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        if parts.singleAttempt {  // (the retrier would stop after the first attempt)
            try Task.checkCancellation()
            context.recordAttempt(request)
            return try await send(request, timeout: nil)  // (a cancellation's spelling is mended outside, as every error's)
        }
        var retrier = retrierFactory.makeRetrier(for: request)
        var current = request
        let start = time.now()
        while true {
            try Task.checkCancellation()
            let number = context.recordAttempt(current)
            let timeout = retrier.attemptTimeout(elapsed: time.now() - start)
            let outcome: Result<RecallResponse, any Error>
            do {
                outcome = .success(try await send(current, timeout: timeout))
            } catch {
                if Task.isCancelled || error.isCancellation { throw CancellationError() }
                if let timeout, error is AttemptRace.TimedOut {
                    context.record(.attemptTimedOut(number: number, after: timeout))
                    outcome = .failure(
                        TransportError(
                            .timedOut, url: current.url,
                            message: "the attempt took longer than its \(timeout.formatted) timeout"))
                } else {
                    outcome = .failure(error)
                }
            }
            var record = Attempt(request: current, outcome: outcome, number: number, elapsed: time.now() - start, context: context)
            record.time = time
            switch try await retrier.decide(after: record) {
            case .stop:
                // The body that follows the head stays within the attempt's timeout per silence
                // and the deadline in all (``TimedBody``).
                var response = try outcome.get()
                if response.body.isStreamed {
                    let elapsed = time.now() - start
                    response.body = TimedBody.body(
                        response.body, silence: retrier.attemptTimeout(elapsed: elapsed),
                        remaining: retrier.remainingTime(elapsed: elapsed), time: time, url: current.url)
                }
                return response
            case .fail(let error):
                throw error
            case .retry(let delay, let next):
                try await time.sleep(for: delay)
                current = next ?? current
            }
        }
    }

    /// Sends one attempt, cut after `timeout` on the pipeline's clock when there is one; the
    /// caller's cancellation answers at once too, whatever the transport does (see ``AttemptRace``).
    private func send(_ request: URLRequest, timeout: Duration?) async throws -> RecallResponse {
        guard transport.respondsToCancellation else {
            return try await AttemptRace.run(timeout: timeout, time: time) { [transport] in try await transport.send(request) }
        }
        // A transport that stops when cancelled runs in this task, at no extra cost.
        guard let timeout else { return try await transport.send(request) }
        return try await AttemptRace.runCooperative(timeout: timeout, time: time) { [transport] in try await transport.send(request) }
    }
}
