import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why a transport could not produce a response. HTTP error statuses are not transport
/// errors: they arrive as a ``Response``.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, which decides whether a retry can help.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The attempt took longer than its timeout.
        case timedOut
        /// No connection could be opened (refused, unreachable); the request never left.
        case cannotConnect
        /// The connection broke after it was opened; the request may have been processed.
        case connectionLost
        /// The host name could not be resolved.
        case dnsFailure
        /// The TLS handshake or certificate check failed.
        case tls
        /// The attempt was cancelled.
        case cancelled
        /// Anything else (malformed URL, bad response, file errors…).
        case other
    }

    /// The kind of failure.
    public var kind: Kind
    /// The URL of the request that failed, if known.
    public var url: URL?
    /// The underlying `URLError` code, when the failure came from URLSession.
    public var urlErrorCode: Int?
    /// A human-readable account of the failure.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, url: URL? = nil, urlErrorCode: Int? = nil, message: String? = nil) {
        self.kind = kind
        self.url = url
        self.urlErrorCode = urlErrorCode
        self.message = message ?? Self.defaultMessage(for: kind)
    }

    /// Maps a `URLError` to its kind: timeouts, connection failures, DNS, TLS, cancellation.
    public init(_ error: URLError, url: URL? = nil) {
        let kind: Kind
        switch error.code {
        case .timedOut:
            kind = .timedOut
        case .cannotConnectToHost, .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff, .callIsActive:
            kind = .cannotConnect
        case .networkConnectionLost, .resourceUnavailable:
            kind = .connectionLost
        case .cannotFindHost, .dnsLookupFailed:
            kind = .dnsFailure
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
             .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
             .clientCertificateRequired:
            kind = .tls
        case .cancelled:
            kind = .cancelled
        default:
            kind = .other
        }
        self.init(kind, url: url ?? error.failingURL, urlErrorCode: error.errorCode,
                  message: "\(Self.defaultMessage(for: kind)) (URLError \(error.errorCode): \(error.localizedDescription))")
    }

    /// Whether the request certainly never reached the server, so even a non-idempotent
    /// request may be sent again.
    public var requestNeverSent: Bool { kind == .cannotConnect || kind == .dnsFailure }

    /// The kind, the URL and what happened.
    public var description: String {
        "TransportError.\(kind.rawValue)\(url.map { " for \($0.absoluteString)" } ?? ""): \(message)"
    }

    private static func defaultMessage(for kind: Kind) -> String {
        switch kind {
        case .timedOut: "the attempt timed out; retry, or raise the per-attempt timeout"
        case .cannotConnect: "could not connect to the host; check that it is up and the port is right"
        case .connectionLost: "the connection was lost before a full response arrived"
        case .dnsFailure: "the host name could not be resolved"
        case .tls: "the TLS handshake or certificate check failed"
        case .cancelled: "the request was cancelled"
        case .other: "the transport failed"
        }
    }
}

extension Error {
    /// Whether this error means "cancelled", in any of the spellings Foundation and Recall use.
    var isCancellation: Bool {
        if self is CancellationError { return true }
        if let error = self as? URLError { return error.code == .cancelled }
        if let error = self as? TransportError { return error.kind == .cancelled }
        return false
    }
}
