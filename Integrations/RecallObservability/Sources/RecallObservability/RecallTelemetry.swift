import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Logging
import Metrics
import Recall
import Synchronization
import Tracing

/// Recall's whole story of each request — cache results, attempts, retries, the breaker — as
/// swift-log records, swift-metrics counters, timers and gauges, and swift-distributed-tracing
/// spans. Put it **first** among the pipeline's hooks and give the pipeline its observer:
///
/// ```swift
/// let telemetry = RecallTelemetry(logger: Logger(label: "upstream"), cache: cache, breaker: breaker)
/// let pipeline = Pipeline(transport: transport, hooks: [telemetry, cache],
///                         retrierFactory: .exponentialBackoff(), observer: telemetry.observe)
/// ```
///
/// **Logs** (the injected `Logger`): cache results, attempts and retries at `.debug`; a request
/// that fails at `.notice`, as do giving up, a deadline and an open circuit; a spent retry budget
/// at `.warning`. A production log at `.info` stays quiet while things work.
///
/// **Metrics** (the injected factory, `MetricsSystem.factory` by default), labels under `prefix`:
/// - `recall.cache.requests{result}` (once per request): `hit`, `miss`, `revalidated`,
///   `changed`, `stale`, `bypassed`, `gatewayTimeout`; `recall.cache.coalesced` (requests that
///   waited for another's fetch, then counted by their own result); `recall.cache.stale{reason}`;
///   `recall.cache.writes{kind}`: `stored`, `invalidated`; `recall.cache.evictions` (records the
///   storage evicted to stay within its limits);
/// - `recall.attempts`, `recall.retries{reason}`, `recall.retry.gave_up{reason}`,
///   `recall.retry.budget_exhausted`, `recall.retry.deadline_exceeded`, `recall.circuit.refused`;
/// - `recall.request.duration{method, outcome}` (a timer; outcome `success` or `failure`);
/// - gauges: `recall.cache.storage.bytes` and `recall.cache.storage.records` (with `cache`),
///   `recall.circuit.state{partition}` (with `breaker`: 0 closed, 1 half-open, 2 open).
///
/// **Traces** (the injected tracer, `InstrumentationSystem.tracer` by default): one span
/// `recall.request` per logical request (kind client; `http.request.method`, `url.full`,
/// `http.response.status_code`, `recall.cache.result`, `recall.response.source`, `recall.attempts`)
/// with a child span `recall.attempt` per attempt (`recall.attempt.number`; a timed-out attempt
/// records the error; `recall.retry.reason` when a retry follows). A cache hit has no attempt span.
public final class RecallTelemetry: ServiceHook, Sendable {
    /// Where records go.
    public let logger: Logger
    /// The cache whose storage the gauges read, if any.
    public let cache: HTTPCache?
    /// The breaker whose states the gauge reports, if any.
    public let breaker: CircuitBreaker?
    /// The first part of every metric label (`recall`).
    public let prefix: String
    private let metrics: any MetricsFactory
    private let tracer: (any Tracer)?
    /// Each request's telemetry, in its context: a slot of this instance, so two telemetry
    /// hooks in one pipeline keep theirs apart.
    private let telemetry = ContextSlot<RequestTelemetry>()

    /// Creates the telemetry. `metrics` and `tracer` default to the process's bootstrapped
    /// systems; pass `tracer: nil` for no spans.
    public init(
        logger: Logger, metrics: (any MetricsFactory)? = nil, tracer: (any Tracer)? = InstrumentationSystem.tracer,
        cache: HTTPCache? = nil, breaker: CircuitBreaker? = nil, prefix: String = "recall"
    ) {
        self.logger = logger
        self.metrics = metrics ?? MetricsSystem.factory
        self.tracer = tracer
        self.cache = cache
        self.breaker = breaker
        self.prefix = prefix
    }

    // MARK: The request: a span and a timer from the first hook to the answer

    /// Opens the request's span.
    public func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        let state = RequestTelemetry(start: ContinuousClock.now)
        if let tracer {
            let span = tracer.startSpan("recall.request", context: InstrumentationContext.current ?? .topLevel, ofKind: .client)
            span.attributes["http.request.method"] = request.httpMethod ?? "GET"
            span.attributes["url.full"] = Self.redacted(request.url)
            state.state.withLock { $0.span = span }
        }
        context[telemetry] = state
        return .proceed(request)
    }

    /// Closes the spans, times the request, logs it at `.debug`.
    public func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        finish(request, context: context, status: response.status, source: response.source, error: nil)
        return response
    }

    /// Closes the spans with the error, times the request, logs it at `.notice`.
    public func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse? {
        finish(request, context: context, status: nil, source: nil, error: error)
        return nil
    }

    private func finish(_ request: URLRequest, context: RecallContext, status: Int?, source: RecallResponse.Source?, error: (any Error)?) {
        guard let telemetry = context[self.telemetry] else { return }
        let (span, attempt, result, start) = telemetry.state.withLock { state in
            defer { state.span = nil; state.attempt = nil }
            return (state.span, state.attempt, state.cacheResult, telemetry.start)
        }
        let elapsed = ContinuousClock.now - start
        let method = request.httpMethod ?? "GET"
        let outcome = error == nil ? "success" : "failure"
        Timer(label: label("request.duration"), dimensions: [("method", method), ("outcome", outcome)], factory: metrics)
            .recordNanoseconds(elapsed.nanoseconds)
        if let error { attempt?.recordError(error) }
        attempt?.end()
        if let span {
            if let status { span.attributes["http.response.status_code"] = status }
            span.attributes["recall.cache.result"] = result ?? "none"
            if let source { span.attributes["recall.response.source"] = "\(source)" }
            span.attributes["recall.attempts"] = context.attempts
            if let error {
                span.recordError(error)
                span.setStatus(SpanStatus(code: .error))
            }
            span.end()
        }
        // Redacted only when a record is written: the hit path pays nothing for a quiet log.
        let url = request.url
        if let error, error.isCancellation {
            logger.debug("\(method) \(Self.redacted(url)) cancelled", metadata: ["recall.attempts": "\(context.attempts)"])
        } else if let error {
            logger.notice("\(method) \(Self.redacted(url)) failed: \(error)", metadata: ["recall.attempts": "\(context.attempts)"])
        } else {
            logger.debug(
                "\(method) \(Self.redacted(url)) → \(status ?? 0)",
                metadata: [
                    "recall.cache.result": "\(result ?? "none")", "recall.attempts": "\(context.attempts)",
                    "recall.duration_ms": "\(elapsed.nanoseconds / 1_000_000)"
                ])
        }
        updateGauges(request)
    }

    private func updateGauges(_ request: URLRequest) {
        if let cache {
            let storage = cache.statistics.storage
            Gauge(label: label("cache.storage.bytes"), factory: metrics).record(storage.bytes)
            Gauge(label: label("cache.storage.records"), factory: metrics).record(storage.count)
        }
        if let breaker {
            let partition = breaker.partitioning.partition(of: request)
            let value =
                switch breaker.state(of: partition) {
                case .closed: 0
                case .halfOpen: 1
                case .open: 2
                }
            Gauge(label: label("circuit.state"), dimensions: [("partition", partition)], factory: metrics).record(value)
        }
    }

    /// `url` for spans and logs: without user information, and with the values of secret
    /// query parameters (``/Recall/CacheConfiguration/defaultSecretQueryParameters``) replaced.
    static func redacted(_ url: URL?) -> String {
        guard let url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "?" }
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
        }
        if let items = components.percentEncodedQueryItems {
            let secret = Set(CacheConfiguration.defaultSecretQueryParameters.map { $0.lowercased() })
            components.percentEncodedQueryItems = items.map { item in
                secret.contains(item.name.lowercased()) && item.value != nil ? URLQueryItem(name: item.name, value: "REDACTED") : item
            }
        }
        return components.string ?? "?"
    }

    // MARK: Events

    /// The pipeline's observer: give it as `Pipeline(…, observer: telemetry.observe)`.
    public func observe(_ event: RecallEvent, _ context: RecallContext) {
        // A background refresh shares the values of the request that started it, which may be
        // answered already: it gets metrics and debug logs, never that request's spans.
        let telemetry = context.isBackground ? nil : context[self.telemetry]
        switch event {
        case .cache(let cacheEvent):
            switch cacheEvent {
            case .stored, .invalidated, .notStored:
                counter("cache.writes", [("kind", cacheEvent.name)])
            case .evicted(let count):
                Counter(label: label("cache.evictions"), factory: metrics).increment(by: count)
            case .coalesced:
                // Waiting for another request's fetch, then a hit or a miss of its own: counted
                // apart, so `cache.requests` counts each request once.
                counter("cache.coalesced")
            case .stale(let reason):
                counter("cache.requests", [("result", cacheEvent.name)])
                counter("cache.stale", [("reason", reason.rawValue)])
                telemetry?.state.withLock { $0.cacheResult = cacheEvent.name }
            default:
                counter("cache.requests", [("result", cacheEvent.name)])
                telemetry?.state.withLock { $0.cacheResult = cacheEvent.name }
            }
            logger.debug("\(cacheEvent)", metadata: ["url": "\(Self.redacted(context.originalRequest.url))"])
        case .attemptStarted(let number):
            counter("attempts")
            if let tracer, let telemetry {
                telemetry.state.withLock { state in
                    state.attempt?.end()
                    let parent = state.span?.context ?? InstrumentationContext.current ?? .topLevel
                    let span = tracer.startSpan("recall.attempt", context: parent, ofKind: .client)
                    span.attributes["recall.attempt.number"] = number
                    state.attempt = span
                }
            }
            logger.debug("attempt #\(number)", metadata: ["url": "\(Self.redacted(context.originalRequest.url))"])
        case .attemptTimedOut(let number, let after):
            telemetry?.state.withLock { $0.attempt?.recordError(AttemptTimedOut(number: number, after: after)) }
            logger.debug("\(event)")
        case .retryScheduled(_, _, let reason, _):
            counter("retries", [("reason", "\(reason)")])
            telemetry?.state.withLock { state in
                state.attempt?.attributes["recall.retry.reason"] = "\(reason)"
                state.attempt?.end()
                state.attempt = nil
            }
            logger.debug("\(event)", metadata: ["url": "\(Self.redacted(context.originalRequest.url))"])
        case .retryBudgetExhausted(let host):
            counter("retry.budget_exhausted")
            logger.warning("\(event)", metadata: ["host": "\(host)"])
        case .deadlineExceeded:
            counter("retry.deadline_exceeded")
            logger.notice("\(event)", metadata: ["url": "\(Self.redacted(context.originalRequest.url))"])
        case .gaveUp(_, let reason):
            counter("retry.gave_up", [("reason", reason.rawValue)])
            // A 404 is not worth a notice: giving up on what no retry can fix is routine.
            if reason == .notRetryable { logger.debug("\(event)") } else { logger.notice("\(event)") }
        case .circuitOpen(let host):
            counter("circuit.refused")
            logger.notice("\(event)", metadata: ["host": "\(host)"])
        @unknown default:
            logger.debug("\(event)")
        }
    }

    private func label(_ name: String) -> String { "\(prefix).\(name)" }

    private func counter(_ name: String, _ dimensions: [(String, String)] = []) {
        Counter(label: label(name), dimensions: dimensions, factory: metrics).increment()
    }
}

/// The error an attempt span records when Recall's per-attempt timeout cut it.
struct AttemptTimedOut: Error, CustomStringConvertible {
    let number: Int
    let after: Duration
    var description: String { "attempt #\(number) timed out after \(after)" }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product &+ attoseconds / 1_000_000_000
    }
}
