import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How an endpoint's input travels.
public enum InputFormat: Sendable, Hashable {
    /// A JSON body.
    case json
    /// Query items on the URL.
    case urlQuery
    /// An `application/x-www-form-urlencoded` body.
    case formURLEncoded
}

/// How an endpoint's output is decoded. An `Output` of `Data` or `String` is always the raw
/// body (a `String` decoded with the answer's charset, UTF-8 by default), whatever the format.
public enum OutputFormat: Sendable, Hashable {
    /// JSON, with the service's decoder.
    case json
    /// XML, with ``XMLElementDecoder`` (elements and attributes by name).
    case xml
}

/// An endpoint of an ``HttpService``, as in Decree: bound to its service by `Service`, with a
/// static method and an instance path. Adopt one of ``EmptyEndpoint``, ``InEndpoint``,
/// ``OutEndpoint`` or ``InOutEndpoint`` and call it with `call(on:)`.
///
/// ```swift
/// struct GetItem: OutEndpoint {
///     typealias Service = Catalog
///     typealias Output = Item
///     let id: Int
///     var path: String { "items/\(id)" }          // GET by default
/// }
/// let item = try await GetItem(id: 1).call(on: Catalog())
/// ```
///
/// Everything an endpoint can declare is below, each with its default; every one of them is
/// used (a `method` or `header` of another type than these is accepted, not ignored).
public protocol Endpoint: Sendable {
    /// The service the endpoint belongs to.
    associatedtype Service: HttpService
    /// What ``method`` is written as: ``/Recall/RequestMethod`` (`.post`) or a `String` (`"POST"`).
    associatedtype MethodName: RequestMethodConvertible = RequestMethod
    /// What ``header`` is written as: ``/Recall/HeaderFields`` or `[String: String]`.
    associatedtype Header: HeaderFieldsConvertible = HeaderFields

    /// The HTTP method: `GET` unless declared.
    static var method: MethodName { get }
    /// The path below the service's `apiUrl`.
    var path: String { get }
    /// Header fields of this endpoint's requests (none by default). They win over the service's
    /// fields and over what Recall sets itself (`Content-Type`, `Accept`, the credential).
    var header: Header { get }
    /// Query items sent with every call, before any `.urlQuery` input: a query beside a body.
    var queryItems: [URLQueryItem] { get }
    /// Whether the service's authorization is sent: `.optional` by default (sent when the
    /// service has one), as in Decree.
    static var authorizationRequirement: AuthorizationRequirement { get }
    /// How the input travels (`.json` by default).
    static var inputFormat: InputFormat { get }
    /// How the output, and an error answer, are decoded (`.json` by default).
    static var outputFormat: OutputFormat { get }
    /// A scheme for this endpoint only (`http` for a local test server); nil to use the service's.
    static var scheme: String? { get }
    /// The statuses that are an answer (`200...299` by default); any other throws
    /// ``ServiceError`` with code `.badStatus`.
    static var acceptedStatuses: StatusSet { get }
    /// The cache policy of this endpoint's requests (`.useProtocolCachePolicy` by default), as
    /// an ``/Recall/HTTPCache`` in the service's pipeline reads it: `.reloadIgnoringLocalCacheData`
    /// always asks the origin, `.returnCacheDataElseLoad` takes a stored answer however old…
    static var cachePolicy: URLRequest.CachePolicy { get }
    /// How long an answer stays fresh in an ``/Recall/HTTPCache`` when the origin says nothing about
    /// freshness (no `max-age`, `s-maxage` or `Expires`); nil (the default) leaves it to the
    /// cache's configuration. Never overrides `no-store`, `no-cache` or `private`.
    static var cacheLifetime: Duration? { get }
}

extension Endpoint where MethodName == RequestMethod {
    /// `GET`.
    public static var method: RequestMethod { .get }
}

extension Endpoint where Header == HeaderFields {
    /// No fields.
    public var header: HeaderFields { [:] }
}

extension Endpoint {
    /// Decree's name for the method type, so `static let method: Method = .post` compiles.
    public typealias Method = RequestMethod

    /// None.
    public var queryItems: [URLQueryItem] { [] }
    /// `.optional`.
    public static var authorizationRequirement: AuthorizationRequirement { .optional }
    /// `.json`.
    public static var inputFormat: InputFormat { .json }
    /// `.json`.
    public static var outputFormat: OutputFormat { .json }
    /// The service's scheme.
    public static var scheme: String? { nil }
    /// `200...299`.
    public static var acceptedStatuses: StatusSet { .success }
    /// `.useProtocolCachePolicy`.
    public static var cachePolicy: URLRequest.CachePolicy { .useProtocolCachePolicy }
    /// None: the cache's configuration decides.
    public static var cacheLifetime: Duration? { nil }

    /// The request this endpoint sends for `input`, as calling the endpoint sends it.
    public func request<Input: Encodable>(on service: Service, input: Input?) throws -> URLRequest {
        var fields: HeaderFields = [:]
        switch Self.authorizationRequirement {
        case .none:
            break
        case .optional:
            if let field = service.authorization?.field { fields.add(field.name, field.value) }
        case .required:
            guard let field = service.authorization?.field else {
                throw ServiceError.authorizationRequired(endpoint: "\(Self.self)")
            }
            fields.add(field.name, field.value)
        }
        var query = queryItems
        var body: Data?
        if let input {
            if let raw = input as? Data {
                body = raw
                fields["Content-Type"] = "application/octet-stream"
            } else {
                switch Self.inputFormat {
                case .json:
                    do { body = try service.encoder.encode(input) } catch {
                        throw ServiceError.coding("\(Self.self): the input could not be encoded: \(error)")
                    }
                    fields["Content-Type"] = "application/json"
                case .urlQuery:
                    query += try QueryEncoding.items(from: input, encoder: service.encoder)
                case .formURLEncoded:
                    body = Data(QueryEncoding.encode(try QueryEncoding.items(from: input, encoder: service.encoder)).utf8)
                    fields["Content-Type"] = "application/x-www-form-urlencoded"
                }
            }
        }
        if Self.outputFormat == .xml { fields["Accept"] = "application/xml" }
        let own = header.asHeaderFields
        for field in own { fields[field.name] = nil }
        for field in own { fields.add(field.name, field.value) }
        var request = try service.makeRequest(
            method: Self.method.asRequestMethod, path: path, query: query,
            header: fields, body: body, scheme: Self.scheme)
        request.cachePolicy = Self.cachePolicy
        return request
    }

    /// Sends the endpoint's request with `input` encoded as its ``inputFormat`` says and
    /// returns the answer if its status is accepted; otherwise throws ``ServiceError`` with
    /// code `.badStatus` (the body decoded as the service's `ErrorResponse` when it declares
    /// one). Every failure reaches the service's `process(_:)` first.
    func perform<Input: Encodable>(on service: Service, input: Input?) async throws -> RecallResponse {
        do {
            let request = try request(on: service, input: input)
            let context = RecallContext(originalRequest: request)
            if let lifetime = Self.cacheLifetime { context[HTTPCache.RequestLifetime.self] = lifetime }
            // A credential in a field of the service's choosing partitions the cache like `Authorization`.
            let credentialFields: Set<String> =
                switch service.authorization {
                case .header(let name, _)? where Self.authorizationRequirement != .none: [name]
                default: []
                }
            let response: RecallResponse
            do {
                response = try await HTTPCache.$credentialFieldsInScope.withValue(HTTPCache.credentialFieldsInScope.union(credentialFields)) {
                    try await service.pipeline.send(request, context: context).collected(upTo: service.maxResponseBodyBytes)
                }
            } catch let refused as UnacceptableStatusError {
                // A StatusValidator in the service's hooks refused it: the same error as our own check.
                throw badStatus(refused.response, service: service)
            }
            guard Self.acceptedStatuses.contains(response.status) else { throw badStatus(response, service: service) }
            return response
        } catch {
            service.process(error)
            throw error
        }
    }

    /// The error for an answer with a status that is not accepted: its body decoded as the
    /// service's `ErrorResponse` in the endpoint's output format when it can be.
    private func badStatus(_ response: RecallResponse, service: Service) -> ServiceError {
        let body = response.body.bytes ?? Data()
        guard Service.ErrorResponse.self != NoErrorResponse.self, !body.isEmpty,
            let decoded = try? decodeBody(Service.ErrorResponse.self, from: response, service: service)
        else {
            return .badStatus(response.status, body: body)
        }
        return .badStatus(response.status, body: body, errorResponse: decoded)
    }

    /// Decodes `response` as the endpoint's ``outputFormat`` says; `Data` and `String` are the
    /// raw body.
    func decode<Output: Decodable>(_ type: Output.Type, from response: RecallResponse, service: Service) throws -> Output {
        do {
            return try decodeBody(type, from: response, service: service)
        } catch {
            let wrapped = ServiceError.coding("\(Self.self) (\(Self.method.asRequestMethod) \(path)): \(DecodingFailure.describe(error))")
            service.process(wrapped)
            throw wrapped
        }
    }

    private func decodeBody<Output: Decodable>(_ type: Output.Type, from response: RecallResponse, service: Service) throws -> Output {
        let body = response.body.bytes ?? Data()  // (collected by ``perform(on:input:)``)
        if let raw = body as? Output { return raw }
        if Output.self == String.self {
            guard let text = response.text as? Output else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "the body is not text in its charset"))
            }
            return text
        }
        switch Self.outputFormat {
        case .json: return try service.decoder.decode(type, from: body)
        case .xml: return try XMLElementDecoder().decode(type, from: body)
        }
    }
}

/// An endpoint with no input and no output.
public protocol EmptyEndpoint: Endpoint {}

/// An endpoint that sends an input and expects no output. An `Input` of `Data` is sent as
/// the raw body.
public protocol InEndpoint: Endpoint {
    /// The input type.
    associatedtype Input: Encodable & Sendable
}

/// An endpoint that returns an output.
public protocol OutEndpoint: Endpoint {
    /// The output type.
    associatedtype Output: Decodable
}

/// An endpoint with an input and an output.
public protocol InOutEndpoint: Endpoint {
    /// The input type.
    associatedtype Input: Encodable & Sendable
    /// The output type.
    associatedtype Output: Decodable
}

/// Stands for "no input".
private struct NoInput: Encodable, Sendable {}

extension EmptyEndpoint {
    /// Calls the endpoint; throws on a status it does not accept.
    public func call(on service: Service) async throws {
        _ = try await perform(on: service, input: NoInput?.none)
    }
}

extension InEndpoint {
    /// Calls the endpoint with `input`; throws on a status it does not accept.
    public func call(on service: Service, with input: Input) async throws {
        _ = try await perform(on: service, input: input)
    }
}

extension OutEndpoint {
    /// Calls the endpoint and decodes its output.
    public func call(on service: Service) async throws -> Output {
        try decode(Output.self, from: try await perform(on: service, input: NoInput?.none), service: service)
    }
}

extension InOutEndpoint {
    /// Calls the endpoint with `input` and decodes its output.
    public func call(on service: Service, with input: Input) async throws -> Output {
        try decode(Output.self, from: try await perform(on: service, input: input), service: service)
    }
}
