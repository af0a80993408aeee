import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client in the style of Echo's `WebServiceProxy`: `invoke` a method on a path with
/// arguments, through a Recall ``Pipeline`` (so caching, retries and hooks apply).
///
/// ```swift
/// let proxy = WebServiceProxy(baseURL: URL(string: "https://api.example.com")!, pipeline: pipeline)
/// let sum: Int = try await proxy.invoke(.get, path: "math/sum", arguments: ["values": [1, 2, 3]])
/// ```
///
/// Arguments: arrays become repeated names, `Date` becomes epoch milliseconds, `nil` values are
/// skipped, and names and values are percent-encoded (`+` as `%2B`). They go in the query,
/// except for POST without content, where they form an `application/x-www-form-urlencoded`
/// body. JSON bodies encode and decode dates as milliseconds since 1970.
public final class WebServiceProxy: Sendable {
    /// The HTTP methods `invoke` takes.
    public enum Method: String, Sendable {
        /// GET.
        case get = "GET"
        /// POST.
        case post = "POST"
        /// PUT.
        case put = "PUT"
        /// PATCH.
        case patch = "PATCH"
        /// DELETE.
        case delete = "DELETE"
    }

    /// The URL paths are resolved against.
    public let baseURL: URL
    /// The pipeline requests go through.
    public let pipeline: Pipeline
    /// Header fields added to every request.
    public let header: HTTPHeaders

    /// Creates a proxy sending through `pipeline` (by default a plain URLSession pipeline).
    public init(baseURL: URL, pipeline: Pipeline = Pipeline(transport: URLSessionTransport()), header: HTTPHeaders = [:]) {
        self.baseURL = baseURL
        self.pipeline = pipeline
        self.header = header
    }

    /// The JSON encoder of bodies: dates as milliseconds since 1970.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return encoder
    }

    /// The JSON decoder of results: dates as milliseconds since 1970.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }

    // MARK: invoke

    /// Invokes a method that returns nothing.
    public func invoke(_ method: Method, path: String, arguments: [String: (any Sendable)?] = [:],
                       content: Data? = nil, contentType: String? = nil) async throws {
        _ = try await send(method, path: path, arguments: arguments, content: content, contentType: contentType)
    }

    /// Invokes a method and decodes its JSON result.
    public func invoke<Result: Decodable>(_ method: Method, path: String, arguments: [String: (any Sendable)?] = [:],
                                          content: Data? = nil, contentType: String? = nil) async throws -> Result {
        let (data, _) = try await send(method, path: path, arguments: arguments, content: content, contentType: contentType)
        return try Self.decodeJSON(Result.self, from: data)
    }

    /// Invokes a method with a JSON body and no result.
    public func invoke<Body: Encodable>(_ method: Method, path: String, arguments: [String: (any Sendable)?] = [:],
                                        body: Body) async throws {
        _ = try await send(method, path: path, arguments: arguments, content: try Self.encodeJSON(body), contentType: "application/json")
    }

    /// Invokes a method with a JSON body and decodes its JSON result.
    public func invoke<Body: Encodable, Result: Decodable>(_ method: Method, path: String, arguments: [String: (any Sendable)?] = [:],
                                                           body: Body) async throws -> Result {
        let (data, _) = try await send(method, path: path, arguments: arguments, content: try Self.encodeJSON(body),
                                       contentType: "application/json")
        return try Self.decodeJSON(Result.self, from: data)
    }

    /// Invokes a method and hands the raw result and its content type to `responseHandler`.
    public func invoke<Result>(_ method: Method, path: String, arguments: [String: (any Sendable)?] = [:],
                               content: Data? = nil, contentType: String? = nil,
                               responseHandler: (_ content: Data, _ contentType: String?) throws -> Result) async throws -> Result {
        let (data, type) = try await send(method, path: path, arguments: arguments, content: content, contentType: contentType)
        return try responseHandler(data, type)
    }

    // MARK: Building and sending

    /// The query items of `arguments`, sorted by name: arrays repeated, dates in epoch
    /// milliseconds, `nil` skipped.
    public static func queryItems(_ arguments: [String: (any Sendable)?]) -> [URLQueryItem] {
        arguments.keys.sorted().flatMap { name -> [URLQueryItem] in
            guard let value = arguments[name].flatMap({ $0.flatMap(unwrapped) }) else { return [] }
            let values: [Any] = (value as? [Any]) ?? [value]
            return values.compactMap { wrapped -> URLQueryItem? in
                guard let element = unwrapped(wrapped), !(element is NSNull) else { return nil }
                if let date = element as? Date { return URLQueryItem(name: name, value: String(Int64(date.timeIntervalSince1970 * 1000))) }
                return URLQueryItem(name: name, value: "\(element)")
            }
        }
    }

    /// `value` without its Optional wrapping (`Optional("a")` → `"a"`), or nil for a nil Optional,
    /// so arrays of optionals become repeated names with their nils skipped.
    private static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.flatMap { unwrapped($0.value) }
    }

    private func send(_ method: Method, path: String, arguments: [String: (any Sendable)?], content: Data?,
                      contentType: String?) async throws -> (Data, String?) {
        guard let url = URL(string: path, relativeTo: baseURL.hasDirectoryPath ? baseURL : baseURL.appendingPathComponent(""))?.absoluteURL,
              var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            throw ServiceError.invalidURL(path)
        }
        let items = Self.queryItems(arguments)
        var request: URLRequest
        if method == .post, content == nil, !items.isEmpty {
            request = URLRequest(url: components.url ?? url)
            request.httpBody = Data(QueryEncoding.encode(items).utf8)
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        } else {
            if !items.isEmpty { components.percentEncodedQuery = QueryEncoding.encode(items) }
            request = URLRequest(url: components.url ?? url)
            request.httpBody = content
            if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        }
        request.httpMethod = method.rawValue
        for field in header where request.value(forHTTPHeaderField: field.name) == nil {
            request.setValue(field.value, forHTTPHeaderField: field.name)
        }
        let response = try await pipeline.send(request)
        let type = response.headers["Content-Type"]
        guard response.isSuccess else {
            throw WebServiceError(statusCode: response.status, body: response.body, contentType: type)
        }
        return (response.body, type)
    }

    private static func encodeJSON<Body: Encodable>(_ body: Body) throws -> Data {
        do { return try makeEncoder().encode(body) } catch { throw ServiceError.coding("\(error)") }
    }

    private static func decodeJSON<Result: Decodable>(_ type: Result.Type, from data: Data) throws -> Result {
        do { return try makeDecoder().decode(type, from: data) } catch { throw ServiceError.coding("\(error)") }
    }
}

/// An error answer from a ``WebServiceProxy`` call: the status, and the body as the
/// description when the server sent `text/plain`.
public struct WebServiceError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The HTTP status.
    public let statusCode: Int
    /// The text of a `text/plain` body, if that is what came.
    public let errorDescription: String?

    /// Creates the error from an answer.
    public init(statusCode: Int, body: Data, contentType: String?) {
        self.statusCode = statusCode
        let isText = contentType?.lowercased().hasPrefix("text/plain") ?? false
        self.errorDescription = isText ? String(decoding: body, as: UTF8.self) : nil
    }

    /// The body text for `text/plain` answers, otherwise `HTTP <status>`.
    public var description: String { errorDescription ?? "HTTP \(statusCode)" }
}
