import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A circuit breaker per host, on resilience4j's model: while **closed** it counts the outcomes
/// of recent attempts in a sliding window; when at least `minimumCalls` are counted and the share
/// of failures reaches `failureRatio` (or the share of slow calls reaches `slowCallRatio`), it
/// **opens** and refuses attempts at once with ``CircuitOpenError``; after `breakDuration` it is
/// **half-open** and lets `probes` attempts through; when they have all answered, their failure
/// (or slow) share decides: open again, or closed with an empty window.
///
/// - An attempt cut by Recall's own per-attempt timeout or deadline is a failure the moment it
///   is cut: a host that hangs opens the circuit even if its connections never return.
/// - Only the probes decide half-open: an attempt let through before the circuit opened that
///   answers late changes nothing.
/// - By default a failure is what a retry could fix — 5xx (500, 502, 503, 504), 408 and transport
///   failures — except `429`: a client being rate-limited says nothing about the host's health.
/// - Bookkeeping is O(1) per call (bucketed windows) and hosts never wait for one another.
///
/// Use it by wrapping a transport, so it sees every attempt: `transport.withCircuitBreaker(breaker)`.
public final class CircuitBreaker: Sendable {
    /// The state of one partition's circuit.
    public enum State: Sendable, Hashable {
        /// Attempts pass.
        case closed
        /// Attempts are refused until the break ends.
        case open
        /// The probes may pass; their outcomes decide.
        case halfOpen
    }

    /// Which recent attempts a closed circuit counts.
    public enum Window: Sendable, Hashable {
        /// The attempts of the last `duration`, counted in one-second buckets (at most 1,000
        /// buckets; longer windows use longer buckets).
        case time(Duration)
        /// The last `n` attempts.
        case count(Int)
    }

    /// The share of failed attempts in the window that opens the circuit (0.5 = half).
    public let failureRatio: Double
    /// The share of slow attempts in the window that opens the circuit (1 = all; ignored when
    /// ``slowCallDuration`` is `nil`).
    public let slowCallRatio: Double
    /// An attempt that takes longer than this is slow, whatever its outcome; `nil`: none is.
    public let slowCallDuration: Duration?
    /// The fewest attempts in the window before the shares count.
    public let minimumCalls: Int
    /// Which recent attempts count.
    public let window: Window
    /// How long the circuit stays open before probes.
    public let breakDuration: Duration
    /// How many probes a half-open circuit lets through; their outcomes decide.
    public let probes: Int
    /// How attempts share circuits.
    public let partitioning: Partitioning
    /// Which outcomes count as failures.
    public let classifier: RetryClassifier

    /// The default failure classification: the retryable outcomes of ``RetryClassifier/default``
    /// without `429`.
    public static let defaultClassifier = RetryClassifier.default.notRetrying(statuses: 429)

    private let time: TimeSource
    private let circuits: PartitionTable<Circuit>

    /// Creates a breaker; time is measured on `clock`. Values are held to sensible ranges:
    /// ratios to `0...1`, where 0 means "any failure" (NaN: the default); `minimumCalls` and
    /// `probes` to at least 1, and `minimumCalls` to at most the size of a count window;
    /// durations to at least 1 ms.
    public init(
        failureRatio: Double = 0.5, minimumCalls: Int = 10, window: Window = .time(.seconds(30)),
        breakDuration: Duration = .seconds(30), probes: Int = 5, slowCallDuration: Duration? = nil,
        slowCallRatio: Double = 1, partitioning: Partitioning = .perHost,
        classifier: RetryClassifier = CircuitBreaker.defaultClassifier, clock: any Clock<Duration> = ContinuousClock()
    ) {
        // A ratio of 0 would open the circuit on successes alone: the least share is "any".
        func ratio(_ value: Double, _ fallback: Double) -> Double {
            value.isNaN ? fallback : min(max(value, .leastNonzeroMagnitude), 1)
        }
        self.failureRatio = ratio(failureRatio, 0.5)
        self.slowCallRatio = ratio(slowCallRatio, 1)
        self.slowCallDuration = slowCallDuration.map { max(.milliseconds(1), $0) }
        self.window =
            switch window {
            case .time(let duration): .time(max(.milliseconds(1), duration))
            case .count(let n): .count(min(max(1, n), 1_000_000))
            }
        // A count window never holds more than its size: a larger minimum could never be met.
        self.minimumCalls =
            switch self.window {
            case .time: max(1, minimumCalls)
            case .count(let n): min(max(1, minimumCalls), n)
            }
        self.breakDuration = max(.milliseconds(1), breakDuration)
        self.probes = min(max(1, probes), 1_000)
        self.partitioning = partitioning
        self.classifier = classifier
        let time = TimeSource(clock)
        self.time = time
        let kind: SlidingWindow<Outcomes>.Kind =
            switch self.window {
            case .time(let duration): .time(duration, slices: Int(min(1_000, max(1, duration.seconds.rounded(.up)))))
            case .count(let n): .count(n)
            }
        // A closed circuit without failures or slow calls is as good as a new one: forgotten
        // first when the table is full.
        circuits = PartitionTable(isIdle: { circuit in
            let now = time.now()
            return circuit.state.withLock { state in
                guard state.phase == .closed else { return false }
                let counted = state.window.total(at: now)
                return counted.failures == 0 && counted.slow == 0
            }
        }) { _ in Circuit(window: kind) }
    }

    /// The state of `partition`'s circuit now.
    public func state(of partition: String) -> State {
        guard let circuit = circuits.existing(partition) else { return .closed }
        let now = time.now()
        return circuit.state.withLock { state in
            advance(&state, now: now)
            return state.phase
        }
    }

    // MARK: Attempts

    /// Leave to send one attempt, as the circuit gave it (outcomes of attempts let through in an
    /// earlier phase of the circuit change nothing).
    struct Permit: Sendable {
        let partition: String
        let generation: UInt64
        let isProbe: Bool
        let startedAt: Duration
    }

    /// Asks to send an attempt to `partition`: a permit, or the error that refuses it.
    func acquire(_ partition: String) -> Result<Permit, CircuitOpenError> {
        let now = time.now()
        return circuits.value(for: partition).state.withLock { state in
            advance(&state, now: now)
            switch state.phase {
            case .closed:
                return .success(Permit(partition: partition, generation: state.generation, isProbe: false, startedAt: now))
            case .open:
                return .failure(CircuitOpenError(partition: partition, retryIn: state.openedAt + breakDuration - now))
            case .halfOpen:
                guard state.probesAdmitted < probes else {
                    // Every probe is out: the circuit reopens or closes when they answer, not at a known time.
                    return .failure(CircuitOpenError(partition: partition, retryIn: nil))
                }
                state.probesAdmitted += 1
                return .success(Permit(partition: partition, generation: state.generation, isProbe: true, startedAt: now))
            }
        }
    }

    /// Records the outcome of the attempt `permit` let through: `failed == nil` for an attempt
    /// that says nothing about the host (cancelled by its caller).
    func record(_ permit: Permit, failed: Bool?) {
        let now = time.now()
        let slow = slowCallDuration.map { now - permit.startedAt > $0 } ?? false
        guard let circuit = circuits.existing(permit.partition) else { return }
        circuit.state.withLock { state in
            advance(&state, now: now)
            guard permit.generation == state.generation else { return }  // from an earlier phase: no say
            switch state.phase {
            case .closed:
                guard let failed else { return }
                state.window.add(Outcomes(calls: 1, failures: failed ? 1 : 0, slow: slow ? 1 : 0), at: now)
                let counted = state.window.total(at: now)
                if counted.calls >= minimumCalls, trips(counted) { open(&state, now: now) }
            case .halfOpen:
                guard permit.isProbe else { return }
                guard let failed else {
                    state.probesAdmitted -= 1  // a cancelled probe: let another one go
                    return
                }
                state.probeOutcomes.add(Outcomes(calls: 1, failures: failed ? 1 : 0, slow: slow ? 1 : 0))
                guard state.probeOutcomes.calls >= probes else { return }
                if trips(state.probeOutcomes) {
                    open(&state, now: now)
                } else {
                    close(&state)
                }
            case .open:
                break
            }
        }
    }

    /// Whether `outcomes` open the circuit: their failure share or slow share reached its ratio.
    private func trips(_ outcomes: Outcomes) -> Bool {
        let calls = Double(outcomes.calls)
        if Double(outcomes.failures) / calls >= failureRatio { return true }
        return slowCallDuration != nil && Double(outcomes.slow) / calls >= slowCallRatio
    }

    private func open(_ state: inout CircuitState, now: Duration) {
        state.phase = .open
        state.openedAt = now
        state.generation += 1
        state.window.reset()
    }

    private func close(_ state: inout CircuitState) {
        state.phase = .closed
        state.generation += 1
        state.window.reset()
    }

    /// An open circuit becomes half-open once its break is over.
    private func advance(_ state: inout CircuitState, now: Duration) {
        guard state.phase == .open, now >= state.openedAt + breakDuration else { return }
        state.phase = .halfOpen
        state.generation += 1
        state.probesAdmitted = 0
        state.probeOutcomes = .zero
    }

    // MARK: State

    struct Outcomes: WindowTally {
        var calls = 0
        var failures = 0
        var slow = 0
        static let zero = Outcomes()
        mutating func add(_ other: Outcomes) { calls += other.calls; failures += other.failures; slow += other.slow }
        mutating func subtract(_ other: Outcomes) { calls -= other.calls; failures -= other.failures; slow -= other.slow }
    }

    struct CircuitState: Sendable {
        var phase = State.closed
        /// Changes at every transition: permits of an earlier phase are recognised by it.
        var generation: UInt64 = 0
        var window: SlidingWindow<Outcomes>
        var openedAt: Duration = .zero
        var probesAdmitted = 0
        var probeOutcomes = Outcomes.zero
    }

    private final class Circuit: Sendable {
        let state: Locked<CircuitState>
        init(window: SlidingWindow<Outcomes>.Kind) { state = Locked(CircuitState(window: SlidingWindow(window))) }
    }
}

/// A transport whose attempts pass through a ``CircuitBreaker``.
public struct CircuitBreakerTransport: Transport {
    /// The transport attempts go to while the circuit lets them.
    public let base: any Transport
    /// The breaker deciding.
    public let breaker: CircuitBreaker

    /// Creates the wrapper.
    public init(base: any Transport, breaker: CircuitBreaker) {
        self.base = base
        self.breaker = breaker
    }

    /// As the transport underneath.
    public var respondsToCancellation: Bool { base.respondsToCancellation }

    /// As the transport underneath.
    public var allowsBackgroundRequests: Bool { base.allowsBackgroundRequests }

    /// Refuses at once while the circuit is open; otherwise sends and records the outcome —
    /// a failure as soon as Recall cuts the attempt (timeout, deadline), however late the
    /// transport returns; nothing (the permit handed back) as soon as the caller cancels.
    public func send(_ request: URLRequest) async throws -> RecallResponse {
        let partition = breaker.partitioning.partition(of: request)
        let permit = try breaker.acquire(partition).get()
        let once = Locked(false)  // the first of "cut" and "answered" is recorded
        let breaker = self.breaker
        @Sendable func record(_ failed: Bool?) {
            guard
                once.withLock({ recorded in
                    defer { recorded = true }; return !recorded
                })
            else { return }
            breaker.record(permit, failed: failed)
        }
        AttemptCut.current?.onCut { reason in record(reason == .timedOut ? true : nil) }
        let context = RecallContext(originalRequest: request)
        do {
            let response = try await base.send(request)
            let attempt = Attempt(request: request, outcome: .success(response), number: 1, elapsed: .zero, context: context)
            record(breaker.classifier.retryReason(for: attempt) != nil)
            return response
        } catch {
            let attempt = Attempt(request: request, outcome: .failure(error), number: 1, elapsed: .zero, context: context)
            record(error.isCancellation ? nil : breaker.classifier.retryReason(for: attempt) != nil)
            throw error
        }
    }
}

/// The error of an attempt refused by an open circuit. It is not retryable: the retrier
/// stops at once, and a cache may serve a stored response instead (an offline answer).
public struct CircuitOpenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The partition (host) whose circuit is open.
    public var partition: String
    /// How long until the circuit lets probes through; `nil` while it is half-open with every
    /// probe out (it reopens or closes when they answer, not at a known time).
    public var retryIn: Duration?

    /// What happened and what to do.
    public var description: String {
        guard let retryIn else {
            return "the circuit for \(partition) is half-open and its probes are still out; try again when they have answered"
        }
        return "the circuit for \(partition) is open after repeated failures; probes are allowed in \(retryIn.formatted)"
    }
}

extension Transport {
    /// This transport behind `breaker`.
    public func withCircuitBreaker(_ breaker: CircuitBreaker) -> CircuitBreakerTransport {
        CircuitBreakerTransport(base: self, breaker: breaker)
    }
}
