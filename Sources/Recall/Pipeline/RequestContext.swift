import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A key for a value that hooks attach to a ``RequestContext``.
///
/// Declare a type per piece of state: `enum StartTime: ContextKey { typealias Value = ContinuousClock.Instant }`.
public protocol ContextKey {
    /// The type of the value stored under this key.
    associatedtype Value: Sendable
}

/// What the pipeline knows about one logical request while it runs: how many attempts were
/// made, and values that hooks attach to carry state from `onSchedule` to `onSuccess`.
///
/// One context lives for one call of ``Pipeline/send(_:)``; it is safe to use from any task.
public final class RequestContext: Sendable {
    private struct State {
        var attempts = 0
        var lastSentRequest: URLRequest?
        var stage: Stage?
        /// The first event, kept inline: a cache hit records one event and allocates no array.
        var firstEvent: RecallEvent?
        /// The events after the first.
        var laterEvents: [RecallEvent] = []
        var values: [ObjectIdentifier: any Sendable] = [:]
        /// The HTTP cache's state, typed and beside `values`: every miss writes and reads it,
        /// and a dictionary entry would cost a box, a table and a cast each time. An object,
        /// so that a context that never holds one (a hit's) stays small.
        var cacheState: HTTPCache.State?

        mutating func append(_ event: RecallEvent) {
            if firstEvent == nil { firstEvent = event } else { laterEvents.append(event) }
        }
    }

    private let state = Locked(State())

    /// The request as the caller gave it, before any hook rewrote it.
    public let originalRequest: URLRequest

    /// Called with every event as it is recorded.
    public let observer: (@Sendable (RecallEvent, RequestContext) -> Void)?

    /// Whether this is a background request (a `stale-while-revalidate` refresh) started on
    /// behalf of another after that one was answered: hooks outside the one that started it saw
    /// its `onSchedule` under the other request's context and see no `onSuccess` for it, so an
    /// observer must not tie what it records here to the other request's state.
    public let isBackground: Bool

    /// Creates a context for `request`; `observer` sees each event as it is recorded.
    public convenience init(originalRequest: URLRequest, observer: (@Sendable (RecallEvent, RequestContext) -> Void)? = nil) {
        self.init(originalRequest: originalRequest, observer: observer, isBackground: false)
    }

    private init(originalRequest: URLRequest, observer: (@Sendable (RecallEvent, RequestContext) -> Void)?, isBackground: Bool) {
        self.originalRequest = originalRequest
        self.observer = observer
        self.isBackground = isBackground
    }

    /// Every event recorded for this request so far, in order.
    public var events: [RecallEvent] {
        state.withLock { state in state.firstEvent.map { [$0] + state.laterEvents } ?? [] }
    }

    /// Records `event` and tells the observer.
    public func record(_ event: RecallEvent) {
        state.withLock { $0.append(event) }
        observer?(event, self)
    }

    /// How many times the transport was called for this request so far (0 when a hook answered).
    public var attempts: Int { state.withLock { $0.attempts } }

    /// The number of retries made so far (attempts beyond the first).
    public var retries: Int { max(0, attempts - 1) }

    /// The request of the latest transport attempt, as it went out after every hook and the
    /// retrier changed it (a refreshed credential, a rewritten URL); `nil` before the first
    /// attempt and when a hook answered. The HTTP cache stores a response for this request.
    public var lastSentRequest: URLRequest? { state.withLock { $0.lastSentRequest } }

    /// Counts one more transport attempt with `request`; the pipeline calls this before each attempt.
    @discardableResult
    func recordAttempt(_ request: URLRequest) -> Int {
        let number = state.withLock { state in
            state.attempts += 1
            state.lastSentRequest = request
            state.append(.attemptStarted(number: state.attempts))
            return state.attempts
        }
        observer?(.attemptStarted(number: number), self)
        return number
    }

    /// The pipeline and the index of the hook whose `onSuccess` or `onFailure` is running.
    struct Stage: Sendable {
        let pipeline: Pipeline
        let index: Int
    }

    /// Set by the pipeline around a hook's `onSuccess` and `onFailure` (a struct: no allocation).
    var stage: Stage? {
        get { state.withLock { $0.stage } }
        set { state.withLock { $0.stage = newValue } }
    }

    /// Sends a request again through the stages inside the hook whose `onSuccess` or
    /// `onFailure` is running (its inner hooks, the retrier, the transport). The cache uses it
    /// to fetch a response in full when a 304 does not match what it stored.
    var innerStage: (@Sendable (URLRequest) async throws -> Response)? {
        guard let stage else { return nil }
        return { [self] request in try await stage.pipeline.run(after: stage.index, request, context: self) }
    }

    /// A context for a background request started on behalf of this one, with the same
    /// hook values and observer.
    func derived(for request: URLRequest) -> RequestContext {
        let child = RequestContext(originalRequest: request, observer: observer, isBackground: true)
        let (values, cacheState) = state.withLock { ($0.values, $0.cacheState) }
        child.state.withLock { ($0.values, $0.cacheState) = (values, cacheState) }
        return child
    }

    /// What ``HTTPCache`` remembers about the request between `onSchedule` and its answer.
    var cacheState: HTTPCache.State? {
        get { state.withLock { $0.cacheState } }
        set { state.withLock { $0.cacheState = newValue } }
    }

    /// ``cacheState`` and ``lastSentRequest`` under one lock: every answer the cache sees reads both.
    var cacheStateAndLastSentRequest: (HTTPCache.State?, URLRequest?) {
        state.withLock { ($0.cacheState, $0.lastSentRequest) }
    }

    /// The value stored under `key`, if any.
    public subscript<Key: ContextKey>(key: Key.Type) -> Key.Value? {
        get { state.withLock { $0.values[ObjectIdentifier(key)] as? Key.Value } }
        set { state.withLock { $0.values[ObjectIdentifier(key)] = newValue } }
    }
}
