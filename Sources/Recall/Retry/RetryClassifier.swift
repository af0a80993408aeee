import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Decides whether an attempt's outcome is a failure that a retry may fix.
///
/// By default, transport failures that a new attempt can fix (timed out, cannot connect,
/// connection lost, DNS — from any transport, see ``TransportError/classify(_:)``) and the
/// statuses 408, 429, 500, 502, 503 and 504 are retryable; every other status, every success,
/// TLS failures and cancellation are not.
///
/// ```swift
/// var policy = RetryPolicy()
/// policy.classifier = .default.retrying(statuses: 425)   // the defaults and 425 Too Early
/// let factory: BackoffRetrierFactory = .policy(policy)   // or .exponentialBackoff().retrying(statuses: 425)
/// ```
public struct RetryClassifier: Sendable {
    /// Statuses worth another attempt.
    public var retryableStatuses: Set<Int>
    /// Transport error kinds worth another attempt. `cancelled` is never retried, even if listed.
    public var retryableErrors: Set<TransportError.Code>
    /// Consulted first; return a reason to retry, `.some(nil)` to refuse, or `nil` to fall
    /// back to the sets above.
    public var custom: (@Sendable (Attempt) -> RetryReason??)?

    /// The statuses retried by default: 408, 429, 500, 502, 503, 504.
    public static let defaultStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]
    /// The transport failures retried by default: timed out, cannot connect, connection lost, DNS.
    public static let defaultErrors: Set<TransportError.Code> = [.timedOut, .cannotConnect, .connectionLost, .dnsFailure]

    /// Creates a classifier; the defaults are the ones described on the type.
    public init(
        retryableStatuses: Set<Int> = RetryClassifier.defaultStatuses,
        retryableErrors: Set<TransportError.Code> = RetryClassifier.defaultErrors,
        custom: (@Sendable (Attempt) -> RetryReason??)? = nil
    ) {
        self.retryableStatuses = retryableStatuses
        self.retryableErrors = retryableErrors
        self.custom = custom
    }

    /// The default classifier.
    public static let `default` = RetryClassifier()

    /// This classifier, also retrying `statuses`.
    public func retrying(statuses: Int...) -> RetryClassifier {
        var classifier = self
        classifier.retryableStatuses.formUnion(statuses)
        return classifier
    }

    /// This classifier, no longer retrying `statuses`.
    public func notRetrying(statuses: Int...) -> RetryClassifier {
        var classifier = self
        classifier.retryableStatuses.subtract(statuses)
        return classifier
    }

    /// Why `attempt` may be retried, or `nil` when it must not be (success, permanent failure,
    /// cancellation).
    public func retryReason(for attempt: Attempt) -> RetryReason? {
        if let error = attempt.error, error.isCancellation { return nil }
        if let custom, let verdict = custom(attempt) { return verdict }
        switch attempt.outcome {
        case .success(let response):
            return retryableStatuses.contains(response.status) ? .status(response.status) : nil
        case .failure(let error):
            // Any transport's errors: URLError, POSIX codes, TransportErrorConvertible (see TransportError.classify).
            guard let kind = TransportError.classify(error)?.code, kind != .cancelled else { return nil }
            return retryableErrors.contains(kind) ? .transport(kind) : nil
        }
    }
}
