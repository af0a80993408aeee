import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A retry strategy for one logical request: it sees each attempt's outcome and decides
/// whether to try again, after what delay and with which request.
///
/// A ``RetrierFactory`` makes a fresh retrier for each request, so a retrier may keep state
/// (attempt counts, the previous delay, whether a credential was already refreshed). The
/// pipeline calls it from one task, one attempt at a time.
public protocol Retrier {
    /// Decides what follows `attempt`. Throwing ends the request with that error.
    mutating func decide(after attempt: Attempt) async throws -> RetryDecision

    /// How long the next attempt may take before Recall cuts it (it then fails with
    /// `TransportError.Code.timedOut`), given the time since the first attempt started;
    /// `nil` for no limit. The default is `nil`.
    func attemptTimeout(elapsed: Duration) -> Duration?

    /// How much of the logical request's deadline is left, given the time since the first
    /// attempt started; `nil` when there is no deadline (the default). Retriers composed around
    /// this one bound their own waits by it — ``AuthRefreshRetrier``'s credential refresh does.
    func remainingTime(elapsed: Duration) -> Duration?

    /// Decides whether `attempt` may be followed by one more attempt that a retrier composed
    /// around this one asks for — a credential refresh after `401`, say — for `reason`, after
    /// `delay`, within this retrier's limits (attempts, deadline, budget, which it charges as for
    /// any retry). Composing retriers call it so their extra attempts count like any other;
    /// ``AuthRefreshRetrier`` does. The default allows it: a retrier without limits has none to apply.
    mutating func admit(extraAttemptAfter attempt: Attempt, reason: RetryReason, delay: Duration) async throws -> RetryDecision
}

extension Retrier {
    /// No per-attempt timeout.
    public func attemptTimeout(elapsed: Duration) -> Duration? { nil }

    /// No deadline.
    public func remainingTime(elapsed: Duration) -> Duration? { nil }

    /// Allows the extra attempt (no limits to apply).
    public mutating func admit(extraAttemptAfter attempt: Attempt, reason: RetryReason, delay: Duration) async throws -> RetryDecision {
        .retry(after: delay)
    }
}

/// The outcome of one transport attempt, as a ``Retrier`` sees it.
public struct Attempt: Sendable {
    /// The request that was sent.
    public var request: URLRequest
    /// The response, or the error the transport threw.
    public var outcome: Result<RecallResponse, any Error>
    /// 1 for the first attempt, 2 for the first retry, and so on.
    public var number: Int
    /// Time since the first attempt started, on the pipeline's clock.
    public var elapsed: Duration
    /// The context of the logical request, to record events or read hook state.
    public var context: RecallContext
    /// The pipeline's clock, for retriers that bound their own work by the deadline (`nil`
    /// for an attempt made outside a pipeline: such work is not bounded).
    var time: TimeSource?

    /// Creates an attempt record.
    public init(
        request: URLRequest, outcome: Result<RecallResponse, any Error>, number: Int, elapsed: Duration,
        context: RecallContext
    ) {
        self.request = request
        self.outcome = outcome
        self.number = number
        self.elapsed = elapsed
        self.context = context
    }

    /// The response, when the attempt produced one.
    public var response: RecallResponse? { try? outcome.get() }

    /// The error, when the attempt failed without a response.
    public var error: (any Error)? {
        if case .failure(let error) = outcome { return error }
        return nil
    }
}

/// What a ``Retrier`` answers after an attempt.
public enum RetryDecision: Sendable {
    /// Return the attempt's outcome to the caller.
    case stop
    /// Wait `delay` on the pipeline's clock, then send `request` (or the same request when nil).
    case retry(after: Duration, request: URLRequest? = nil)
    /// End the request with this error instead of the attempt's outcome (for example a
    /// deadline that a `Retry-After` hint cannot fit in).
    case fail(any Error)
}
