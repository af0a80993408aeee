import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A limit on retries shared by many requests, so that an outage is not made worse by a
/// storm of retries. A budget is a reference type shared by every retrier of a factory.
public protocol RetryBudget: Sendable {
    /// A logical request to `partition` started (the first attempt only).
    func requestStarted(partition: String)
    /// Takes the budget for one retry to `partition`; `false` when it is spent.
    func withdraw(partition: String) -> Bool
    /// An attempt to `partition` succeeded.
    func recordSuccess(partition: String)
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
