import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Makes a fresh ``Retrier`` for each logical request. Factories are shared and Sendable;
/// state shared across requests (a retry budget, a circuit breaker) lives in the factory.
public protocol RetrierFactory: Sendable {
    /// A new retrier for `request`.
    func makeRetrier(for request: URLRequest) -> any Retrier
}

extension RetrierFactory where Self == NilRetrierFactory {
    /// Never retries: every attempt's outcome goes straight back to the caller.
    public static var none: NilRetrierFactory { NilRetrierFactory() }
}
