import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A retrier that answers a `401 Unauthorized` by refreshing the credential once and
/// retrying at once with the new request, and hands every other outcome to an inner retrier
/// (usually backoff). The attempt after the refresh stays inside the inner retrier's limits: it
/// counts against `maxAttempts`, the deadline and the retry budget
/// (``Retrier/admit(extraAttemptAfter:reason:delay:)``), and when they leave no room the `401`
/// is returned without refreshing. The refresh itself is cut at what is left of the deadline
/// (``Retrier/remainingTime(elapsed:)``), however long it would wait: then the `401` is returned.
public struct AuthRefreshRetrier: Retrier {
    private var inner: any Retrier
    private let statuses: Set<Int>
    private let refresh: @Sendable (URLRequest) async throws -> URLRequest
    private var refreshed = false

    /// Creates a retrier around `inner`.
    public init(
        inner: any Retrier, statuses: Set<Int> = [401],
        refresh: @escaping @Sendable (URLRequest) async throws -> URLRequest
    ) {
        self.inner = inner
        self.statuses = statuses
        self.refresh = refresh
    }

    /// The inner retrier's per-attempt timeout.
    public func attemptTimeout(elapsed: Duration) -> Duration? { inner.attemptTimeout(elapsed: elapsed) }

    /// Refreshes once on an auth failure when the inner retrier's limits admit one more
    /// attempt; otherwise asks the inner retrier.
    public mutating func decide(after attempt: Attempt) async throws -> RetryDecision {
        if let status = attempt.response?.status, statuses.contains(status), !refreshed {
            let reason = RetryReason.custom("credential refreshed after \(status)")
            let verdict = try await inner.admit(extraAttemptAfter: attempt, reason: reason, delay: .zero)
            guard case .retry(let delay, _) = verdict else { return verdict }
            refreshed = true
            let next: URLRequest
            do {
                next = try await refreshWithinDeadline(after: attempt)
            } catch is AttemptRace.TimedOut {
                // The deadline passed while the credential was refreshed: the 401 is the answer.
                attempt.context.record(.gaveUp(attempts: attempt.number, reason: .deadline))
                return .stop
            }
            attempt.context.record(.retryScheduled(attempt: attempt.number, delay: delay, reason: reason, usedRetryAfter: false))
            return .retry(after: delay, request: next)
        }
        return try await inner.decide(after: attempt)
    }

    /// Refreshes the credential, cut at what is left of the inner retrier's deadline — however
    /// long the refresh itself would wait (a token server that does not answer).
    private func refreshWithinDeadline(after attempt: Attempt) async throws -> URLRequest {
        let request = attempt.request
        guard let time = attempt.time, let left = inner.remainingTime(elapsed: attempt.elapsed) else {
            return try await refresh(request)
        }
        return try await AttemptRace.run(timeout: left, time: time) { [refresh] in try await refresh(request) }
    }

    /// What is left of the inner retrier's deadline.
    public func remainingTime(elapsed: Duration) -> Duration? { inner.remainingTime(elapsed: elapsed) }

    /// Asks the inner retrier (so retriers composed around this one stay inside its limits too).
    public mutating func admit(extraAttemptAfter attempt: Attempt, reason: RetryReason, delay: Duration) async throws -> RetryDecision {
        try await inner.admit(extraAttemptAfter: attempt, reason: reason, delay: delay)
    }
}

/// Makes ``AuthRefreshRetrier``s around another factory's retriers.
public struct AuthRefreshRetrierFactory: RetrierFactory {
    /// The factory of the retriers that handle everything but auth failures.
    public let inner: any RetrierFactory
    /// The statuses that trigger a refresh (401 by default).
    public let statuses: Set<Int>
    /// Returns the request with a fresh credential (for example a new `Authorization` field).
    public let refresh: @Sendable (URLRequest) async throws -> URLRequest

    /// Creates a factory.
    public init(
        inner: any RetrierFactory, statuses: Set<Int> = [401],
        refresh: @escaping @Sendable (URLRequest) async throws -> URLRequest
    ) {
        self.inner = inner
        self.statuses = statuses
        self.refresh = refresh
    }

    /// A refreshing retrier around a new inner retrier.
    public func makeRetrier(for request: URLRequest) -> any Retrier {
        AuthRefreshRetrier(inner: inner.makeRetrier(for: request), statuses: statuses, refresh: refresh)
    }
}

extension RetrierFactory {
    /// This strategy, plus one credential refresh and immediate retry on `401`.
    ///
    /// ```swift
    /// .exponentialBackoff(maxAttempts: 4).refreshingAuth { request in
    ///     var request = request
    ///     request.setValue("Bearer \(try await tokens.refresh())", forHTTPHeaderField: "Authorization")
    ///     return request
    /// }
    /// ```
    public func refreshingAuth(
        on statuses: Set<Int> = [401],
        _ refresh: @escaping @Sendable (URLRequest) async throws -> URLRequest
    ) -> AuthRefreshRetrierFactory {
        AuthRefreshRetrierFactory(inner: self, statuses: statuses, refresh: refresh)
    }
}
