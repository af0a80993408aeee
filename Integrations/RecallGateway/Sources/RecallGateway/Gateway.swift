import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import Recall
import RecallAsyncHTTPClient

/// An API gateway with one shared cache: every request it gets goes to the same path of
/// `upstream` through `pipeline`, and the answer streams back to the caller.
///
/// The pipeline is the part to copy: an ``HTTPCache`` whose audience is
/// ``CacheAudience/shared`` — what the upstream marks `public` or gives an `s-maxage` serves
/// every user, authenticated or not; what it marks `private` is never kept; `Cookie` and API keys
/// still keep users apart — over an `AsyncHTTPClientTransport`, with retries and backoff.
struct Gateway: Sendable {
    /// Where requests go: the scheme, host and port (and a path prefix, if any) of the upstream API.
    let upstream: URL
    /// The cache and the retries in front of the upstream.
    let pipeline: Pipeline

    /// The client a gateway sends with: redirects go back to the caller (a gateway does not
    /// follow them for it), and a connection that cannot be made fails at once — the pipeline's
    /// retrier, with its backoff and budget, decides whether to try again (AsyncHTTPClient's
    /// own retries would keep the caller waiting for its whole connect timeout, three times over).
    static func client() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// The gateway's pipeline over `client` (``client()``): a shared cache over `storage` (coordinating fetches
    /// across the gateway's replicas through `coordinator`, when they share a storage), then
    /// retries with exponential backoff.
    static func pipeline(
        client: HTTPClient, storage: any CacheStorage, coordinator: (any FetchCoordinator)? = nil
    ) -> Pipeline {
        var configuration = CacheConfiguration()
        configuration.audience = .shared
        let cache = HTTPCache(storage: storage, configuration: configuration, coordinator: coordinator)
        return Pipeline(transport: AsyncHTTPClientTransport(client: client), hooks: [cache], retrierFactory: .exponentialBackoff())
    }

    /// The answer to the request `head` with `body`: the upstream's (from the cache or not),
    /// or a `502` saying why it could not be had.
    func answer(_ head: HTTPRequestHead, body: ByteBuffer) async -> RecallResponse {
        guard let url = target(of: head.uri) else {
            return RecallResponse.text("gateway: not a request target: \(head.uri)", status: 400)
        }
        var request = URLRequest(url: url)
        request.httpMethod = head.method.rawValue
        for field in HTTPServer.passedOn(head.headers.map { ($0.name, $0.value) }) {
            request.addValue(field.value, forHTTPHeaderField: field.name)
        }
        if body.readableBytes > 0 || [.POST, .PUT, .PATCH].contains(head.method) { request.httpBody = Data(body.readableBytesView) }
        do {
            return try await pipeline.send(request)
        } catch {
            // (The reason stays here: the caller learns only that the upstream failed.)
            FileHandle.standardError.write(Data("recall-gateway: \(head.method) \(head.uri): \(error)\n".utf8))
            return RecallResponse.text("gateway: the upstream could not answer", status: 502)
        }
    }

    /// The upstream URL of the request target `uri` (an origin-form target: a path and a
    /// query), or `nil` when it is not one or leaves the upstream's path — `..` or `.` segments,
    /// spelled out or percent-encoded, never reach the upstream, where they could climb out of
    /// its path prefix.
    func target(of uri: String) -> URL? {
        guard uri.hasPrefix("/"), !uri.hasPrefix("//") else { return nil }
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { $0.removingPercentEncoding ?? String($0) }
        guard !segments.contains(where: { $0 == ".." || $0 == "." || $0.contains("/") }) else { return nil }
        return URL(string: upstream.absoluteString.trimmingSuffix("/") + uri)
    }
}

extension String {
    /// The string without `suffix` at its end, if it ends so.
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
