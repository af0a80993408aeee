import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A circuit breaker per host: when too many recent attempts failed it opens and refuses
/// attempts at once with ``CircuitOpenError``, then after `breakDuration` lets one probe
/// through (half-open); the probe's success closes it, its failure opens it again.
///
/// Use it by wrapping a transport, so it sees every attempt: `transport.withCircuitBreaker(breaker)`.
public final class CircuitBreaker: Sendable {
    /// The state of one partition's circuit.
    public enum State: Sendable, Hashable {
        /// Attempts pass.
        case closed
        /// Attempts are refused until the break ends.
        case open
        /// One probe may pass; its outcome decides.
        case halfOpen
    }

    /// The share of failed attempts in the window that opens the circuit (0.5 = half).
    public let failureRatio: Double
    /// The fewest attempts in the window before the ratio counts.
    public let minimumThroughput: Int
    /// How far back attempts count.
    public let samplingWindow: Duration
    /// How long the circuit stays open before a probe.
    public let breakDuration: Duration
    /// How attempts share circuits.
    public let partitioning: Partitioning
    /// Which outcomes count as failures (by default, the retryable ones: 5xx, 408, 429, transport failures).
    public let classifier: RetryClassifier

    private struct Circuit {
        var state: State = .closed
        var samples: [(at: Duration, failed: Bool)] = []
        var openedAt: Duration = .zero
        var probeInFlight = false
    }

    private let time: TimeSource
    private let circuits = Locked<[String: Circuit]>([:])

    /// Creates a breaker; time is measured on `clock`.
    public init(failureRatio: Double = 0.5, minimumThroughput: Int = 10, samplingWindow: Duration = .seconds(30),
                breakDuration: Duration = .seconds(30), partitioning: Partitioning = .perHost,
                classifier: RetryClassifier = .default, clock: any Clock<Duration> = ContinuousClock()) {
        self.failureRatio = min(max(failureRatio, 0), 1)
        self.minimumThroughput = max(1, minimumThroughput)
        self.samplingWindow = samplingWindow
        self.breakDuration = breakDuration
        self.partitioning = partitioning
        self.classifier = classifier
        self.time = TimeSource(clock)
    }

    /// The state of `partition`'s circuit now.
    public func state(of partition: String) -> State {
        circuits.withLock { circuits in
            guard var circuit = circuits[partition] else { return .closed }
            advance(&circuit, now: time.now())
            circuits[partition] = circuit
            return circuit.state
        }
    }

    /// Asks to send an attempt to `partition`: `nil` when it may go, else how long the circuit
    /// stays open.
    func acquire(_ partition: String) -> Duration? {
        let now = time.now()
        return circuits.withLock { circuits in
            var circuit = circuits[partition, default: Circuit()]
            advance(&circuit, now: now)
            defer { circuits[partition] = circuit }
            switch circuit.state {
            case .closed:
                return nil
            case .open:
                return circuit.openedAt + breakDuration - now
            case .halfOpen:
                if circuit.probeInFlight { return breakDuration }
                circuit.probeInFlight = true
                return nil
            }
        }
    }

    /// Records the outcome of an attempt to `partition`; `failed == nil` for an attempt that
    /// says nothing about the host (cancelled).
    func record(_ partition: String, failed: Bool?) {
        let now = time.now()
        circuits.withLock { circuits in
            var circuit = circuits[partition, default: Circuit()]
            defer { circuits[partition] = circuit }
            if circuit.state == .halfOpen {
                circuit.probeInFlight = false
                guard let failed else { return }
                if failed {
                    circuit.state = .open
                    circuit.openedAt = now
                } else {
                    circuit = Circuit()
                }
                return
            }
            guard let failed else { return }
            circuit.samples.append((now, failed))
            circuit.samples.removeAll { $0.at <= now - samplingWindow }
            let failures = circuit.samples.filter(\.failed).count
            if circuit.state == .closed, circuit.samples.count >= minimumThroughput,
               Double(failures) / Double(circuit.samples.count) >= failureRatio {
                circuit.state = .open
                circuit.openedAt = now
                circuit.samples.removeAll()
            }
        }
    }

    private func advance(_ circuit: inout Circuit, now: Duration) {
        if circuit.state == .open, now >= circuit.openedAt + breakDuration {
            circuit.state = .halfOpen
            circuit.probeInFlight = false
        }
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

    /// Refuses at once while the circuit is open; otherwise sends and records the outcome.
    public func send(_ request: URLRequest) async throws -> Response {
        let partition = breaker.partitioning.partition(of: request)
        if let remaining = breaker.acquire(partition) {
            throw CircuitOpenError(partition: partition, retryIn: remaining)
        }
        let context = RequestContext(originalRequest: request)
        do {
            let response = try await base.send(request)
            let attempt = Attempt(request: request, outcome: .success(response), number: 1, elapsed: .zero, context: context)
            breaker.record(partition, failed: breaker.classifier.retryReason(for: attempt) != nil)
            return response
        } catch {
            let attempt = Attempt(request: request, outcome: .failure(error), number: 1, elapsed: .zero, context: context)
            breaker.record(partition, failed: error.isCancellation ? nil : breaker.classifier.retryReason(for: attempt) != nil)
            throw error
        }
    }
}

/// The error of an attempt refused by an open circuit. It is not retryable: the retrier
/// stops at once, and a cache with `stale-if-error` may serve a stale entry instead.
public struct CircuitOpenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The partition (host) whose circuit is open.
    public var partition: String
    /// How long until the circuit lets a probe through.
    public var retryIn: Duration

    /// What happened and what to do.
    public var description: String {
        "the circuit for \(partition) is open after repeated failures; a probe is allowed in \(retryIn.formatted)"
    }
}

extension Transport {
    /// This transport behind `breaker`.
    public func withCircuitBreaker(_ breaker: CircuitBreaker) -> CircuitBreakerTransport {
        CircuitBreakerTransport(base: self, breaker: breaker)
    }
}
