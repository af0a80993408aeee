import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``/Recall/Transport`` that answers requests from in-process services, addressed as
/// `http://<host>/<identifier>/<path>` (the host is `pmapi` unless you choose another).
///
/// ```swift
/// let router = ServiceRouter()
/// try await router.register(WeatherService(), as: "weather")
/// let pipeline = Pipeline(transport: router, hooks: [cache])
/// let answer = try await pipeline.send(URLRequest(url: URL(string: "http://pmapi/weather/today")!))
/// ```
///
/// Identifiers are matched case-insensitively (`http://pmapi/Weather/…` reaches the service
/// registered as `weather`), as in the Predix Mobile SDK. An unknown identifier answers
/// `501 Not Implemented`, a service that throws answers `500` with the error as text. A
/// request for another host goes to the `fallback` transport, so one pipeline serves
/// `http://pmapi/…` and the real network; without a fallback it throws
/// ``ServiceRouterError/wrongHost(_:expected:)``.
public final class ServiceRouter: Transport {
    /// The host name requests must be addressed to (compared case-insensitively).
    public let host: String
    /// Where requests for other hosts go; nil to refuse them.
    public let fallback: (any Transport)?

    /// Services by lower-cased identifier, with the identifier as registered.
    private let services = Locked<[String: (identifier: String, service: any ServiceProtocol)]>([:])

    /// Creates a router answering for `host`; requests for other hosts go to `fallback`
    /// (such as a `URLSessionTransport`), or throw when there is none.
    public init(host: String = "pmapi", fallback: (any Transport)? = nil) {
        self.host = host
        self.fallback = fallback
    }

    /// The base URL of the service registered as `identifier`: `http://<host>/<identifier>`.
    public func url(for identifier: String) -> URL {
        URL(string: "http://\(host)/\(identifier)")!
    }

    /// The identifiers currently registered (as registered), sorted.
    public var identifiers: [String] {
        services.withLock { $0.values.map(\.identifier).sorted() }
    }

    /// Registers `service` under `identifier` and calls its `registered(as:)`.
    /// - Throws: ``ServiceRouterError/invalidIdentifier(_:)`` for an empty identifier or one
    ///   containing `/`; ``ServiceRouterError/alreadyRegistered(_:)`` if the identifier is taken
    ///   (in any case: `Weather` and `weather` are one identifier).
    public func register(_ service: some ServiceProtocol, as identifier: String) async throws {
        guard !identifier.isEmpty, !identifier.contains("/") else {
            throw ServiceRouterError.invalidIdentifier(identifier)
        }
        let inserted = services.withLock { services in
            guard services[identifier.lowercased()] == nil else { return false }
            services[identifier.lowercased()] = (identifier, service)
            return true
        }
        guard inserted else { throw ServiceRouterError.alreadyRegistered(identifier) }
        await service.registered(as: identifier)
    }

    /// Registers a closure as a service under `identifier`.
    public func register(
        as identifier: String,
        handler: @escaping @Sendable (ServiceRequest) async throws -> RecallResponse
    ) async throws {
        try await register(ClosureService(handler: handler), as: identifier)
    }

    /// Removes the service under `identifier` (in any case) and calls its `unregistered(from:)`
    /// with the identifier it was registered as. Returns whether a service was registered there.
    @discardableResult
    public func unregister(_ identifier: String) async -> Bool {
        guard let removed = services.withLock({ $0.removeValue(forKey: identifier.lowercased()) }) else { return false }
        await removed.service.unregistered(from: removed.identifier)
        return true
    }

    /// Routes `request` to its service, or to the fallback when it is for another host.
    public func send(_ request: URLRequest) async throws -> RecallResponse {
        guard let url = request.url, let requestHost = url.host, requestHost.caseInsensitiveCompare(host) == .orderedSame else {
            if let fallback { return try await fallback.send(request) }
            throw ServiceRouterError.wrongHost(request.url, expected: host)
        }
        let segments = url.path.split(separator: "/", omittingEmptySubsequences: true)
        guard let first = segments.first else {
            return Self.errorResponse(501, text: "No service identifier in \(url.absoluteString)", url: url)
        }
        guard let (identifier, service) = services.withLock({ $0[first.lowercased()] }) else {
            return Self.errorResponse(501, text: "No service registered as '\(first)'", url: url)
        }
        let rest = "/" + segments.dropFirst().joined(separator: "/")
        var response: RecallResponse
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
    static func errorResponse(_ status: Int, text: String?, headers: HeaderFields = [:], url: URL? = nil) -> RecallResponse {
        var headers = headers
        guard let text else {
            headers["Content-Length"] = "0"
            return RecallResponse(status: status, headers: headers, url: url)
        }
        var response = RecallResponse.text(text, status: status, headers: headers, url: url)
        response.headers["Content-Length"] = String(text.utf8.count)
        return response
    }
}

/// A service made of one closure.
struct ClosureService: ServiceProtocol {
    let handler: @Sendable (ServiceRequest) async throws -> RecallResponse

    func handle(_ request: ServiceRequest) async throws -> RecallResponse {
        try await handler(request)
    }
}
