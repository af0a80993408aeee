import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A limit on retries shared by many requests, so that an outage is not made worse by a
/// storm of retries. A budget is a reference type shared by every retrier of a factory (and,
/// with ``RetryQuota/shared``, the default, by every factory of the process that uses it).
///
/// A retrier tells its budget what happens to each logical request, in this order:
/// ``requestStarted(partition:)`` once; for each attempt that failed in a way a retry could fix,
/// ``attemptFailed(partition:reason:)`` and — when the retrier's own limits allow another
/// attempt — ``withdraw(partition:reason:)``; for an attempt answered below 400,
/// ``attemptSucceeded(partition:lastWithdrawal:)``. A non-retryable answer (404, 401) is neither
/// a failure nor a success. Recall ships three budgets, each faithful to its reference:
/// ``RetryQuota`` (the AWS SDKs' standard retry quota, the default), ``RetryThrottle`` (gRPC's
/// retry throttling, gRFC A6) and ``PercentageBudget`` (Finagle's `RetryBudget`).
public protocol RetryBudget: Sendable {
    /// A logical request to `partition` started. The default does nothing.
    func requestStarted(partition: String)
    /// An attempt to `partition` failed for `reason`, a failure a retry could fix (counted
    /// whether or not a retry follows). The default does nothing.
    func attemptFailed(partition: String, reason: RetryReason)
    /// Asks to retry a request to `partition` after a failure for `reason`: the tokens the retry
    /// takes (`0` for a budget that charges nothing), or `nil` when the budget refuses.
    func withdraw(partition: String, reason: RetryReason) -> Double?
    /// An attempt to `partition` was answered with a status below 400; `lastWithdrawal` is what
    /// the request's latest retry took (`nil` when it did not retry). The default does nothing.
    func attemptSucceeded(partition: String, lastWithdrawal: Double?)
}

extension RetryBudget {
    /// Nothing to count.
    public func requestStarted(partition: String) {}
    /// Nothing to count.
    public func attemptFailed(partition: String, reason: RetryReason) {}
    /// Nothing to count.
    public func attemptSucceeded(partition: String, lastWithdrawal: Double?) {}
}

/// How requests share a budget or a circuit breaker.
public enum Partitioning: Sendable, Hashable {
    /// One per host (and port): an outage of one host does not spend another's budget.
    case perHost
    /// One for all requests.
    case global

    /// The partition of `request`.
    public func partition(of request: URLRequest) -> String {
        switch self {
        case .global:
            return "*"
        case .perHost:
            guard let url = request.url else { return "" }
            let host = url.host?.lowercased() ?? ""
            return url.port.map { "\(host):\($0)" } ?? host
        }
    }
}
