import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why a transport could not produce a response. HTTP error statuses are not transport
/// errors: they arrive as a ``RecallResponse``.
///
/// Any error a transport throws is read as one of these by the retrier, the idempotency rule,
/// the circuit breaker and the cache's offline answers (``classify(_:)``): `URLError`s, POSIX
/// errors (`ECONNREFUSED`, `ECONNRESET`, `ETIMEDOUT`, `EPIPE`…), and the errors of any type that
/// adopts ``TransportErrorConvertible``.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, which decides whether a retry can help: an open set, like every
    /// Recall error's code (compare with `==`, or `switch` with a `default:` case).
    public typealias Code = ErrorCode<TransportError>

    /// The kind of failure.
    public var code: Code
    /// The URL of the request that failed, if known.
    public var url: URL?
    /// The underlying `URLError` code, when the failure came from URLSession.
    public var urlErrorCode: Int?
    /// A human-readable account of the failure.
    public var message: String
    /// Whether the request certainly never reached the server, so even a non-idempotent request
    /// (a `POST`) may be sent again. By default true for `cannotConnect` and `dnsFailure`; a
    /// transport that knows better says so when it makes the error.
    public var requestNeverSent: Bool

    /// Creates an error. `requestNeverSent` defaults to what `code` implies (see ``requestNeverSent``).
    public init(_ code: Code, url: URL? = nil, urlErrorCode: Int? = nil, message: String? = nil, requestNeverSent: Bool? = nil) {
        self.code = code
        self.url = url
        self.urlErrorCode = urlErrorCode
        self.message = message ?? Self.defaultMessage(for: code)
        self.requestNeverSent = requestNeverSent ?? (code == .cannotConnect || code == .dnsFailure)
    }

    /// Maps a `URLError` to its kind: timeouts, connection failures, DNS, TLS, cancellation. On
    /// Linux, `badServerResponse` — swift-corelibs-foundation's error for a connection closed
    /// without an answer — is a lost connection.
    public init(_ error: URLError, url: URL? = nil) {
        let kind: Code
        switch error.code {
        case .timedOut:
            kind = .timedOut
        case .cannotConnectToHost, .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff, .callIsActive:
            kind = .cannotConnect
        case .networkConnectionLost, .resourceUnavailable:
            kind = .connectionLost
        #if canImport(FoundationNetworking)
            case .badServerResponse:
                // swift-corelibs-foundation gives this, for HTTP, only when the server closed the
                // connection without an answer (libcurl's "Empty reply from server"): a lost
                // connection, as Apple's Foundation and AsyncHTTPClient report it.
                kind = .connectionLost
        #endif
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
        self.init(
            kind, url: url ?? error.failingURL, urlErrorCode: error.errorCode,
            message: "\(Self.defaultMessage(for: kind)) (URLError \(error.errorCode): \(error.localizedDescription))")
    }

    /// Maps a POSIX error code from a socket call to its kind, or `nil` when the code says
    /// nothing about the connection: refused, unreachable or down → `cannotConnect` (never
    /// sent); reset, broken pipe, aborted → `connectionLost`; `ETIMEDOUT` → `timedOut`;
    /// `ECANCELED` → `cancelled`.
    public init?(posixCode code: Int32, url: URL? = nil) {
        let kind: Code
        switch code {
        case ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN, EADDRNOTAVAIL:
            kind = .cannotConnect
        case ECONNRESET, EPIPE, ECONNABORTED, ENETRESET, ENOTCONN:
            kind = .connectionLost
        case ETIMEDOUT:
            kind = .timedOut
        case ECANCELED:
            kind = .cancelled
        default:
            return nil
        }
        self.init(kind, url: url, message: "\(Self.defaultMessage(for: kind)) (POSIX \(code): \(String(cString: strerror(code))))")
    }

    /// `error` as a transport error, whatever transport threw it: a ``TransportError`` as it is,
    /// a ``TransportErrorConvertible`` as it says, a `URLError` or a POSIX error (`POSIXError`, or
    /// an `NSError` in the POSIX or URL error domain) by its code; `nil` for anything else
    /// (which no retry rule treats as a transport failure).
    public static func classify(_ error: any Error) -> TransportError? {
        switch error {
        case let error as TransportError:
            return error
        case let error as any TransportErrorConvertible:
            return error.transportError
        case let error as URLError:
            return TransportError(error)
        case let error as POSIXError:
            return TransportError(posixCode: error.code.rawValue)
        default:
            let error = error as NSError
            if error.domain == NSPOSIXErrorDomain { return TransportError(posixCode: Int32(truncatingIfNeeded: error.code)) }
            if error.domain == NSURLErrorDomain { return TransportError(URLError(URLError.Code(rawValue: error.code) ?? .unknown)) }
            return nil
        }
    }

    /// A body that ended after `received` of the `expected` bytes its `Content-Length` promised:
    /// the connection was lost (``ErrorCode/connectionLost``; a session reports
    /// `URLError(.networkConnectionLost)`). For transports of your own, as Recall's use it.
    public static func bodyEnded(after received: Int, of expected: Int, url: URL?) -> TransportError {
        TransportError(
            .connectionLost, url: url, urlErrorCode: URLError.Code.networkConnectionLost.rawValue,
            message: "the body ended after \(received) of its \(expected) bytes")
    }

    /// The kind, the URL and what happened.
    public var description: String {
        "TransportError.\(code.name)\(url.map { " for \($0.absoluteString)" } ?? ""): \(message)"
    }

    private static func defaultMessage(for code: Code) -> String {
        switch code {
        case .timedOut: "the attempt timed out; retry, or raise the per-attempt timeout"
        case .cannotConnect: "could not connect to the host; check that it is up and the port is right"
        case .connectionLost: "the connection was lost before a full response arrived"
        case .dnsFailure: "the host name could not be resolved"
        case .tls: "the TLS handshake or certificate check failed"
        case .cancelled: "the request was cancelled"
        default: "the transport failed (\(code.name))"
        }
    }
}

extension ErrorCode where Owner == TransportError {
    /// The attempt took longer than its timeout.
    public static let timedOut = Self("timedOut")
    /// No connection could be opened (refused, unreachable); the request never left.
    public static let cannotConnect = Self("cannotConnect")
    /// The connection broke after it was opened; the request may have been processed.
    public static let connectionLost = Self("connectionLost")
    /// The host name could not be resolved.
    public static let dnsFailure = Self("dnsFailure")
    /// The TLS handshake or certificate check failed.
    public static let tls = Self("tls")
    /// The attempt was cancelled.
    public static let cancelled = Self("cancelled")
    /// Anything else (malformed URL, bad response, file errors…).
    public static let other = Self("other")

    /// The codes Recall itself produces, in a stable order.
    public static let known: [Self] = [.timedOut, .cannotConnect, .connectionLost, .dnsFailure, .tls, .cancelled, .other]
}

/// An error type that says what it means for retries, by giving its ``TransportError``: adopt it
/// in a transport's own errors (or in an integration, for a client library's errors), and the
/// retrier, the idempotency rule, the circuit breaker and the cache's offline answers read it
/// like a `URLError`.
///
/// ```swift
/// extension MyClientError: TransportErrorConvertible {
///     var transportError: TransportError {
///         switch self {
///         case .connectRefused: TransportError(.cannotConnect)                    // never sent: any method may retry
///         case .resetByPeer: TransportError(.connectionLost)                      // maybe sent: idempotent methods only
///         case .badCertificate: TransportError(.tls)                              // not retried
///         }
///     }
/// }
/// ```
public protocol TransportErrorConvertible: Error {
    /// This error in Recall's terms: its ``TransportError/code`` decides whether a retry may
    /// help, its ``TransportError/requestNeverSent`` whether a non-idempotent request may be repeated.
    var transportError: TransportError { get }
}

extension Error {
    /// Whether this error means "cancelled", in any of the spellings Foundation and Recall use
    /// (`CancellationError`, `URLError(.cancelled)`, a cancelled ``TransportError``, `ECANCELED`):
    /// routine, not a failure worth reporting.
    public var isCancellation: Bool {
        switch self {
        case is CancellationError: true
        case let error as URLError: error.code == .cancelled
        case let error as TransportError: error.code == .cancelled
        case let error as POSIXError: error.code == .ECANCELED
        case let error as any TransportErrorConvertible: error.transportError.code == .cancelled
        default: false
        }
    }
}
