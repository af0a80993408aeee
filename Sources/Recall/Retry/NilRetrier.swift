import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A retrier that never retries. It is the default of a ``Pipeline``.
public struct NilRetrier: Retrier, Sendable {
    /// Creates the retrier.
    public init() {}

    /// Always `.stop`.
    public func decide(after attempt: Attempt) async throws -> RetryDecision { .stop }
}

/// The factory of ``NilRetrier``; also spelled `.none`.
public struct NilRetrierFactory: RetrierFactory {
    /// Creates the factory.
    public init() {}

    /// A ``NilRetrier``.
    public func makeRetrier(for request: URLRequest) -> any Retrier { NilRetrier() }
}
