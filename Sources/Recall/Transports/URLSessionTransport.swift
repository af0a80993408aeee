import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``Transport`` over `URLSession`.
///
/// The transport owns its session, created from the configuration you pass with
/// `urlCache = nil` and `requestCachePolicy = .reloadIgnoringLocalCacheData`, so that
/// Foundation's cache (which on Linux never stores anyway) stays out of the way and caching
/// is done by ``HTTPCache`` alike on every platform. Every HTTP status is a ``Response``;
/// failures without a response throw ``TransportError``.
///
/// Per-attempt timeouts belong in Recall's retry layer, not in `timeoutInterval`
/// (swift-corelibs-foundation truncates it to whole seconds).
public final class URLSessionTransport: Transport {
    /// The session requests go through.
    public let session: URLSession

    /// Creates a transport with its own session made from `configuration`
    /// (ephemeral by default).
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        let configuration = configuration.copy() as! URLSessionConfiguration
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Sends `request` through the session.
    public func send(_ request: URLRequest) async throws -> Response {
        var request = request
        // Recall's cache decides; never let Foundation answer from or write to its own.
        request.cachePolicy = .reloadIgnoringLocalCacheData
        do {
            let (data, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse else {
                throw TransportError(.other, url: request.url, message: "the response was not HTTP (\(type(of: response)))")
            }
            return Response(http, body: data)
        } catch let error as URLError {
            if error.code == .cancelled || Task.isCancelled { throw CancellationError() }
            throw TransportError(error, url: request.url)
        }
    }
}
