import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import Recall

extension AsyncHTTPClientTransport {
    /// `error`, thrown by AHC or NIO for a request to `url`, as a ``/Recall/TransportError``.
    public static func mapError(_ error: any Error, url: URL?) -> TransportError {
        let message = String(describing: error)
        func make(_ kind: TransportError.Code, neverSent: Bool? = nil) -> TransportError {
            TransportError(kind, url: url, message: message, requestNeverSent: neverSent)
        }
        /// A socket's `errno` (from NIO's POSIX sockets or from Network.framework).
        func make(errno code: Int32) -> TransportError {
            switch code {
            case ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, ENETDOWN: return make(.cannotConnect, neverSent: true)
            case ECONNRESET, EPIPE, ECONNABORTED, ENOTCONN: return make(.connectionLost)
            case ETIMEDOUT: return make(.timedOut)
            default: return make(.other)
            }
        }
        switch error {
        case let error as TransportError:
            return error
        case is CancellationError:
            return make(.cancelled)
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout, .getConnectionFromPoolTimeout, .socksHandshakeTimeout, .httpProxyHandshakeTimeout:
                return make(.cannotConnect, neverSent: true)
            case .tlsHandshakeTimeout:
                return make(.timedOut, neverSent: true)
            case .remoteConnectionClosed:
                return make(.connectionLost)
            case .readTimeout, .writeTimeout, .deadlineExceeded:
                return make(.timedOut)
            case .cancelled, .requestStreamCancelled:
                return make(.cancelled)
            default:
                return make(.other)
            }
        case let error as NIOConnectionError:
            // Every address refused or timed out: nothing was sent. No address at all: DNS.
            return error.connectionErrors.isEmpty && (error.dnsAError != nil || error.dnsAAAAError != nil)
                ? make(.dnsFailure) : make(.cannotConnect, neverSent: true)
        case let error as ChannelError:
            switch error {
            case .connectTimeout, .connectPending:
                return make(.cannotConnect, neverSent: true)
            case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed, .inputClosed:
                return make(.connectionLost)
            default:
                return make(.other)
            }
        case let error as IOError:
            return make(errno: error.errnoCode)
        #if canImport(Network)
            // Apple's platforms: HTTPClient.shared runs on Network.framework (NIOTransportServices).
            case let error as HTTPClient.NWPOSIXError:
                return make(errno: error.errorCode.rawValue)
            case is HTTPClient.NWTLSError:
                return make(.tls)
        #endif
        case is NIOTooManyBytesError:
            return TransportError(.other, url: url, message: "the response body is larger than the transport's maxResponseBodyBytes")
        default:
            let name = String(reflecting: type(of: error))
            if name.contains("NIOSSL") || name.contains("TLS") { return make(.tls) }
            if name.contains("DNS") || name.contains("Resolution") { return make(.dnsFailure) }
            return TransportError.classify(error) ?? make(.other)
        }
    }
}
