import Foundation
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

/// How an endpoint's output is decoded.
public enum OutputFormat: Sendable, Hashable {
    /// JSON, with the service's decoder.
    case json
    /// XML, with ``XMLDecoder`` (elements and attributes by name).
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
///     static let method = "GET"
///     let id: Int
///     var path: String { "items/\(id)" }
/// }
/// let item = try await GetItem(id: 1).call(on: Catalog())
/// ```
public protocol Endpoint: Sendable {
    /// The service the endpoint belongs to.
    associatedtype Service: HttpService
    /// The HTTP method.
    static var method: String { get }
    /// The path below the service's `apiUrl`.
    var path: String { get }
    /// Whether the service's authorization is sent (`.none` by default).
    static var authorizationRequirement: AuthorizationRequirement { get }
    /// How the input travels (`.json` by default).
    static var inputFormat: InputFormat { get }
    /// How the output is decoded (`.json` by default).
    static var outputFormat: OutputFormat { get }
    /// A scheme for this endpoint only (`http` for a local test server); nil to use the service's.
    static var scheme: String? { get }
}

extension Endpoint {
    /// `.none`.
    public static var authorizationRequirement: AuthorizationRequirement { .none }
    /// `.json`.
    public static var inputFormat: InputFormat { .json }
    /// `.json`.
    public static var outputFormat: OutputFormat { .json }
    /// The service's scheme.
    public static var scheme: String? { nil }

    /// Sends the endpoint's request with `input` encoded as its ``inputFormat`` says and
    /// returns the 2xx response; any other status throws ``ServiceError/badStatus(_:body:)``.
    func perform<Input: Encodable>(on service: Service, input: Input?) async throws -> Response {
        do {
            var header: HTTPHeaders = [:]
            switch Self.authorizationRequirement {
            case .none:
                break
            case .optional:
                if let field = service.authorization?.field { header.add(field.name, field.value) }
            case .required:
                guard let field = service.authorization?.field else {
                    throw ServiceError.authorizationRequired(endpoint: "\(Self.self)")
                }
                header.add(field.name, field.value)
            }
            var query: [URLQueryItem] = []
            var body: Data?
            if let input {
                switch Self.inputFormat {
                case .json:
                    do { body = try service.encoder.encode(input) } catch { throw ServiceError.coding("\(error)") }
                    header["Content-Type"] = "application/json"
                case .urlQuery:
                    query = try QueryEncoding.items(from: input, encoder: service.encoder)
                case .formURLEncoded:
                    body = Data(QueryEncoding.encode(try QueryEncoding.items(from: input, encoder: service.encoder)).utf8)
                    header["Content-Type"] = "application/x-www-form-urlencoded"
                }
            }
            if Self.outputFormat == .xml, !header.contains("Accept") { header["Accept"] = "application/xml" }
            let request = try service.makeRequest(method: Self.method, path: path, query: query, header: header,
                                                  body: body, scheme: Self.scheme)
            // A credential in a field of the service's choosing partitions the cache like `Authorization`.
            let credentialFields: Set<String> = switch service.authorization {
            case .header(let name, _)? where Self.authorizationRequirement != .none: [name]
            default: []
            }
            let response = try await HTTPCache.$credentialFieldsInScope.withValue(HTTPCache.credentialFieldsInScope.union(credentialFields)) {
                try await service.pipeline.send(request)
            }
            guard response.isSuccess else { throw ServiceError.badStatus(response.status, body: response.body) }
            return response
        } catch {
            service.process(error)
            throw error
        }
    }

    /// Decodes `response` as the endpoint's ``outputFormat`` says.
    func decode<Output: Decodable>(_ type: Output.Type, from response: Response, service: Service) throws -> Output {
        do {
            switch Self.outputFormat {
            case .json: return try service.decoder.decode(type, from: response.body)
            case .xml: return try XMLDecoder().decode(type, from: response.body)
            }
        } catch {
            let wrapped = ServiceError.coding("\(error)")
            service.process(wrapped)
            throw wrapped
        }
    }
}

/// An endpoint with no input and no output.
public protocol EmptyEndpoint: Endpoint {}

/// An endpoint that sends an input and expects no output.
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
    /// Calls the endpoint; throws on a non-2xx status.
    public func call(on service: Service) async throws {
        _ = try await perform(on: service, input: NoInput?.none)
    }
}

extension InEndpoint {
    /// Calls the endpoint with `input`; throws on a non-2xx status.
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
