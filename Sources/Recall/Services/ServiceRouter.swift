import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``Transport`` that answers requests from in-process services, addressed as
/// `http://<host>/<identifier>/<path>` (the host is `pmapi` unless you choose another).
///
/// ```swift
/// let router = ServiceRouter()
/// try await router.register(WeatherService(), as: "weather")
/// let pipeline = Pipeline(transport: router, hooks: [cache])
/// let answer = try await pipeline.send(URLRequest(url: URL(string: "http://pmapi/weather/today")!))
/// ```
///
/// An unknown identifier answers `501 Not Implemented`, a service that throws answers `500`
/// with the error as text, and a request for another host throws
/// ``ServiceRouterError/wrongHost(_:expected:)``.
public final class ServiceRouter: Transport {
    /// The host name requests must be addressed to (compared case-insensitively).
    public let host: String

    private let services = Locked<[String: any ServiceProtocol]>([:])

    /// Creates a router answering for `host`.
    public init(host: String = "pmapi") {
        self.host = host
    }

    /// The base URL of the service registered as `identifier`: `http://<host>/<identifier>`.
    public func url(for identifier: String) -> URL {
        URL(string: "http://\(host)/\(identifier)")!
    }

    /// The identifiers currently registered, sorted.
    public var identifiers: [String] {
        services.withLock { $0.keys.sorted() }
    }

    /// Registers `service` under `identifier` and calls its `registered(as:)`.
    /// - Throws: ``ServiceRouterError/invalidIdentifier(_:)`` for an empty identifier or one
    ///   containing `/`; ``ServiceRouterError/alreadyRegistered(_:)`` if the identifier is taken.
    public func register(_ service: some ServiceProtocol, as identifier: String) async throws {
        guard !identifier.isEmpty, !identifier.contains("/") else {
            throw ServiceRouterError.invalidIdentifier(identifier)
        }
        let inserted = services.withLock { services in
            guard services[identifier] == nil else { return false }
            services[identifier] = service
            return true
        }
        guard inserted else { throw ServiceRouterError.alreadyRegistered(identifier) }
        await service.registered(as: identifier)
    }

    /// Registers a closure as a service under `identifier`.
    public func register(as identifier: String,
                         handler: @escaping @Sendable (ServiceRequest) async throws -> Response) async throws {
        try await register(ClosureService(handler: handler), as: identifier)
    }

    /// Removes the service under `identifier` and calls its `unregistered(from:)`.
    /// Returns whether a service was registered there.
    @discardableResult
    public func unregister(_ identifier: String) async -> Bool {
        guard let removed = services.withLock({ $0.removeValue(forKey: identifier) }) else { return false }
        await removed.unregistered(from: identifier)
        return true
    }

    /// Routes `request` to its service.
    public func send(_ request: URLRequest) async throws -> Response {
        guard let url = request.url, let requestHost = url.host, requestHost.caseInsensitiveCompare(host) == .orderedSame else {
            throw ServiceRouterError.wrongHost(request.url, expected: host)
        }
        let segments = url.path.split(separator: "/", omittingEmptySubsequences: true)
        guard let first = segments.first else {
            return Self.errorResponse(501, text: "No service identifier in \(url.absoluteString)", url: url)
        }
        let identifier = String(first)
        guard let service = services.withLock({ $0[identifier] }) else {
            return Self.errorResponse(501, text: "No service registered as '\(identifier)'", url: url)
        }
        let rest = "/" + segments.dropFirst().joined(separator: "/")
        var response: Response
        do {
            response = try await service.handle(ServiceRequest(request: request, identifier: identifier, path: rest))
        } catch {
            if Task.isCancelled || error.isCancellation { throw CancellationError() }
            response = Self.errorResponse(500, text: "Service '\(identifier)' failed: \(error)", url: url)
        }
        if response.url == nil { response.url = url }
        response.source = .network
        return response
    }

    /// The error answer behind ``ServiceProtocol/respondWithErrorStatus(_:text:headers:)``.
    static func errorResponse(_ status: Int, text: String?, headers: HTTPHeaders = [:], url: URL? = nil) -> Response {
        var headers = headers
        guard let text else {
            headers["Content-Length"] = "0"
            return Response(status: status, headers: headers, url: url)
        }
        var response = Response.text(text, status: status, headers: headers, url: url)
        response.headers["Content-Length"] = String(response.body.count)
        return response
    }
}

/// A service made of one closure.
struct ClosureService: ServiceProtocol {
    let handler: @Sendable (ServiceRequest) async throws -> Response

    func handle(_ request: ServiceRequest) async throws -> Response {
        try await handler(request)
    }
}
