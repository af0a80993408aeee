import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Decides whether an attempt's outcome is a failure that a retry may fix.
///
/// By default, transport failures that a new attempt can fix (timed out, cannot connect,
/// connection lost, DNS) and the statuses 408, 429, 500, 502, 503 and 504 are retryable;
/// every other status, every success, TLS failures and cancellation are not.
public struct RetryClassifier: Sendable {
    /// Statuses worth another attempt.
    public var retryableStatuses: Set<Int>
    /// Transport error kinds worth another attempt. `cancelled` is never retried, even if listed.
    public var retryableErrors: Set<TransportError.Kind>
    /// Consulted first; return a reason to retry, `.some(nil)` to refuse, or `nil` to fall
    /// back to the sets above.
    public var custom: (@Sendable (Attempt) -> RetryReason??)?

    /// Creates a classifier; the defaults are the ones described on the type.
    public init(
        retryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504],
        retryableErrors: Set<TransportError.Kind> = [.timedOut, .cannotConnect, .connectionLost, .dnsFailure],
        custom: (@Sendable (Attempt) -> RetryReason??)? = nil
    ) {
        self.retryableStatuses = retryableStatuses
        self.retryableErrors = retryableErrors
        self.custom = custom
    }

    /// The default classifier.
    public static let `default` = RetryClassifier()

    /// Why `attempt` may be retried, or `nil` when it must not be (success, permanent failure,
    /// cancellation).
    public func retryReason(for attempt: Attempt) -> RetryReason? {
        if let error = attempt.error, error.isCancellation { return nil }
        if let custom, let verdict = custom(attempt) { return verdict }
        switch attempt.outcome {
        case .success(let response):
            return retryableStatuses.contains(response.status) ? .status(response.status) : nil
        case .failure(let error as TransportError):
            return retryableErrors.contains(error.kind) ? .transport(error.kind) : nil
        case .failure(let error as URLError):
            let kind = TransportError(error).kind
            return retryableErrors.contains(kind) ? .transport(kind) : nil
        case .failure:
            return nil
        }
    }
}
