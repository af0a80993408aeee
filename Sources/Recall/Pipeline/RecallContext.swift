import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A key for a value that hooks attach to a ``RecallContext``.
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
public final class RecallContext: Sendable {
    private struct State {
        var attempts = 0
        var lastSentRequest: URLRequest?
        /// The first event, kept inline: a cache hit records one event and allocates no array.
        var firstEvent: RecallEvent?
        /// The events after the first.
        var laterEvents: [RecallEvent] = []
        /// Values filed under ``ContextKey`` types and ``ContextSlot``s. The first is kept
        /// inline: a request through one stateful hook (a cache's miss) allocates no table.
        var firstValue: (id: ObjectIdentifier, value: any Sendable)?
        var values: [ObjectIdentifier: any Sendable] = [:]

        func value(_ id: ObjectIdentifier) -> (any Sendable)? {
            // (The inline value's key compared in place: `if let firstValue` copied the pair,
            // its existential with it, on every read — and a miss reads a context it never wrote.)
            if firstValue?.id == id { return firstValue?.value }
            return values.isEmpty ? nil : values[id]
        }

        mutating func setValue(_ value: (any Sendable)?, _ id: ObjectIdentifier) {
            let inline = firstValue.map { $0.id == id } ?? (values.isEmpty || values[id] == nil)
            if inline {
                firstValue = value.map { (id, $0) }
            } else {
                values[id] = value
            }
        }

        mutating func append(_ event: RecallEvent) {
            guard firstEvent != nil else {
                firstEvent = event
                return
            }
            // (Room for a miss's events at once — its attempt, its store, an eviction — not
            // one allocation per event as the array grows.)
            if laterEvents.isEmpty { laterEvents.reserveCapacity(4) }
            laterEvents.append(event)
        }
    }

    private let state = Locked(State())

    /// The request as the caller gave it, before any hook rewrote it.
    public let originalRequest: URLRequest

    /// Called with every event as it is recorded.
    public let observer: (@Sendable (RecallEvent, RecallContext) -> Void)?

    /// Whether this is a background request (a `stale-while-revalidate` refresh) started on
    /// behalf of another after that one was answered: hooks outside the one that started it saw
    /// its `onSchedule` under the other request's context and see no `onSuccess` for it, so an
    /// observer must not tie what it records here to the other request's state.
    public let isBackground: Bool

    /// Creates a context for `request`; `observer` sees each event as it is recorded.
    public convenience init(originalRequest: URLRequest, observer: (@Sendable (RecallEvent, RecallContext) -> Void)? = nil) {
        self.init(originalRequest: originalRequest, observer: observer, isBackground: false)
    }

    private init(originalRequest: URLRequest, observer: (@Sendable (RecallEvent, RecallContext) -> Void)?, isBackground: Bool) {
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

    /// A context for a background request started on behalf of this one, with the same
    /// hook values and observer.
    func derived(for request: URLRequest) -> RecallContext {
        let child = RecallContext(originalRequest: request, observer: observer, isBackground: true)
        let (first, values) = state.withLock { ($0.firstValue, $0.values) }
        child.state.withLock { ($0.firstValue, $0.values) = (first, values) }
        return child
    }

    /// The value stored under `key`, if any.
    public subscript<Key: ContextKey>(key: Key.Type) -> Key.Value? {
        // (Cast only what is there: `nil as? Value` still calls the runtime's dynamic cast.)
        get { state.withLock { $0.value(ObjectIdentifier(key)) }.flatMap { $0 as? Key.Value } }
        set { state.withLock { $0.setValue(newValue, ObjectIdentifier(key)) } }
    }

    /// The value one hook instance keeps in `slot` for this request, if any.
    public subscript<Value>(slot: ContextSlot<Value>) -> Value? {
        get { state.withLock { $0.value(slot.id) }.flatMap { $0 as? Value } }
        set { state.withLock { $0.setValue(newValue, slot.id) } }
    }

    /// The value in `slot`, removed from it.
    public func take<Value>(_ slot: ContextSlot<Value>) -> Value? {
        state.withLock { state in
            let value = state.value(slot.id).flatMap { $0 as? Value }
            if value != nil { state.setValue(nil, slot.id) }
            return value
        }
    }
}
