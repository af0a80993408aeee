import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which requests may be sent again. Retrying a request that is not idempotent can apply it
/// twice (two payments), so by default only idempotent methods are retried.
public struct IdempotencyPolicy: Sendable, Hashable {
    /// Methods retried without further proof (RFC 9110 §9.2.2): GET, HEAD, OPTIONS, TRACE, PUT, DELETE.
    public var idempotentMethods: Set<String>
    /// A request carrying this header field (with a non-empty value) is retried whatever its
    /// method; `nil` to ignore such keys.
    public var keyField: String?
    /// Retry every method, for callers who know their endpoints are safe to repeat.
    public var retryAllMethods: Bool

    /// Creates a policy; the defaults are the safe ones described on each property.
    public init(
        idempotentMethods: Set<String> = Set(RequestMethod.idempotentMethods.map(\.rawValue)),
        keyField: String? = "Idempotency-Key", retryAllMethods: Bool = false
    ) {
        self.idempotentMethods = Set(idempotentMethods.map { $0.uppercased() })
        self.keyField = keyField
        self.retryAllMethods = retryAllMethods
    }

    /// The default policy.
    public static let `default` = IdempotencyPolicy()

    /// Whether `request` may be sent again after failing with `error` (nil for a response).
    /// A failure proving that the request never left the client (connection refused, DNS — from
    /// any transport, see ``TransportError/classify(_:)``) allows a retry of any method.
    public func allowsRetry(of request: URLRequest, after error: (any Error)?) -> Bool {
        if retryAllMethods { return true }
        if idempotentMethods.contains(RequestMethod(request).rawValue) { return true }
        if let keyField, let key = request.value(forHTTPHeaderField: keyField), !key.trimmingOWS.isEmpty { return true }
        if let error, TransportError.classify(error)?.requestNeverSent == true { return true }
        return false
    }
}
