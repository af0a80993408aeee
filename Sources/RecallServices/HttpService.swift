import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A description of a remote API, as in Squid: where it lives, the header fields every
/// request carries, and the pipeline parts (transport, hooks, retrier) its requests go through.
///
/// ```swift
/// struct Catalog: HttpService {
///     static let cache = HTTPCache()
///     var apiUrl: String { "api.example.com/v1" }           // https unless you give a scheme
///     var header: HeaderFields { ["Accept": "application/json"] }
///     var hooks: [any ServiceHook] { [Self.cache] }
///     var retrierFactory: any RetrierFactory { .exponentialBackoff() }
/// }
/// ```
///
/// Properties are read on every request: return shared instances (static lets) for hooks,
/// transports and retrier factories, so that a cache or a budget outlives one request.
public protocol HttpService: Sendable {
    /// What an error answer's body decodes into (Decree's `ErrorResponse`), in the endpoint's
    /// output format: ``ServiceError/errorResponse(as:)`` holds it. ``NoErrorResponse`` (the
    /// default) decodes nothing; the status and raw body are reported either way.
    associatedtype ErrorResponse: Decodable & Sendable = NoErrorResponse
    /// The API's base, without a scheme (`api.example.com/v1`); a scheme given here wins.
    var apiUrl: String { get }
    /// The scheme used when `apiUrl` has none: `https` by default.
    var scheme: String { get }
    /// Header fields sent with every request; a request's own fields win (case-insensitively).
    var header: HeaderFields { get }
    /// The configuration of the default transport's session.
    var sessionConfiguration: URLSessionConfiguration { get }
    /// What requests go through: by default a `URLSessionTransport` made once per service
    /// type from ``sessionConfiguration``.
    var transport: any Transport { get }
    /// The retry strategy: none by default.
    var retrierFactory: any RetrierFactory { get }
    /// The service hooks (cache, logging…), outermost first.
    var hooks: [any ServiceHook] { get }
    /// The clock retries wait on.
    var clock: any Clock<Duration> { get }
    /// Credentials for endpoints that ask for them.
    var authorization: Authorization? { get }
    /// Encodes JSON bodies.
    var encoder: JSONEncoder { get }
    /// Decodes JSON bodies.
    var decoder: JSONDecoder { get }
    /// The longest response body an endpoint collects to decode, in bytes; a longer one fails
    /// the call with ``/Recall/ResponseBodyError`` `tooLarge`.
    var maxResponseBodyBytes: Int { get }
    /// Called with every failure of a request against this service (transport errors,
    /// non-2xx statuses, decoding errors), before the error is thrown to the caller.
    func process(_ error: any Error)
}

extension HttpService {
    /// `https`.
    public var scheme: String { "https" }
    /// No fields.
    public var header: HeaderFields { [:] }
    /// `.ephemeral`.
    public var sessionConfiguration: URLSessionConfiguration { .ephemeral }
    /// A `URLSessionTransport` shared by every request to this service type.
    public var transport: any Transport {
        ServiceTransports.transport(for: Self.self) { URLSessionTransport(configuration: sessionConfiguration) }
    }
    /// No retries.
    public var retrierFactory: any RetrierFactory { NilRetrierFactory() }
    /// No hooks.
    public var hooks: [any ServiceHook] { [] }
    /// `ContinuousClock()`.
    public var clock: any Clock<Duration> { ContinuousClock() }
    /// None.
    public var authorization: Authorization? { nil }
    /// A JSON encoder.
    public var encoder: JSONEncoder { JSONEncoder() }
    /// A JSON decoder.
    public var decoder: JSONDecoder { JSONDecoder() }
    /// 32 MiB.
    public var maxResponseBodyBytes: Int { 32 << 20 }
    /// Does nothing.
    public func process(_ error: any Error) {}

    /// The pipeline requests to this service go through.
    public var pipeline: Pipeline {
        Pipeline(transport: transport, hooks: hooks, retrierFactory: retrierFactory, clock: clock)
    }

    /// The URL of `path` (and query items) on this service; `scheme` overrides the service's.
    public func url(path: String, query: [URLQueryItem] = [], scheme: String? = nil) throws -> URL {
        var base = apiUrl.trimmingOWS
        if !base.contains("://") {
            base = "\(scheme ?? self.scheme)://" + base
        } else if let scheme, let range = base.range(of: "://") {
            base = scheme + base[range.lowerBound...]
        }
        while base.hasSuffix("/") { base.removeLast() }
        let trimmedPath = path.drop { $0 == "/" }
        guard var components = URLComponents(string: trimmedPath.isEmpty ? base : base + "/" + trimmedPath),
            components.host?.isEmpty == false
        else {
            throw ServiceError.invalidURL(base + "/" + trimmedPath)
        }
        if !query.isEmpty { components.percentEncodedQuery = QueryEncoding.encode(query) }
        guard let url = components.url else { throw ServiceError.invalidURL(base + "/" + trimmedPath) }
        return url
    }

    /// A request to `path` with the service's header fields merged under `header`.
    public func makeRequest(
        method: RequestMethod, path: String, query: [URLQueryItem] = [], header: HeaderFields = [:],
        body: Data? = nil, scheme: String? = nil
    ) throws -> URLRequest {
        var request = URLRequest(url: try url(path: path, query: query, scheme: scheme))
        request.httpMethod = method.rawValue
        request.httpBody = body
        var merged = self.header
        for field in header { merged[field.name] = nil }
        for field in header { merged.add(field.name, field.value) }
        for field in merged { request.addValue(field.value, forHTTPHeaderField: field.name) }
        return request
    }

    /// Sends `request` through the service's pipeline and returns its answer whatever the
    /// status, its body collected (at most ``maxResponseBodyBytes``). Failures go to
    /// ``process(_:)`` and are rethrown; an answer outside 200–299 goes to ``process(_:)`` as
    /// ``ServiceError`` `.badStatus` (as endpoints report it) and is returned.
    public func send(_ request: URLRequest) async throws -> RecallResponse {
        do {
            let response = try await pipeline.send(request).collected(upTo: maxResponseBodyBytes)
            if !response.isSuccess { process(ServiceError.badStatus(response.status, body: response.body.bytes ?? Data())) }
            return response
        } catch {
            process(error)
            throw error
        }
    }
}

/// The default transports of service types, made once per type.
enum ServiceTransports {
    private static let transports = Locked<[ObjectIdentifier: any Transport]>([:])

    static func transport(for type: Any.Type, make: () -> any Transport) -> any Transport {
        transports.withLock { transports in
            if let existing = transports[ObjectIdentifier(type)] { return existing }
            let transport = make()
            transports[ObjectIdentifier(type)] = transport
            return transport
        }
    }
}
