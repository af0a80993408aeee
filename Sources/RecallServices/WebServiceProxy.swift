import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A client in the style of Echo's `WebServiceProxy`: `invoke` a method on a path with
/// arguments, through a Recall ``/Recall/Pipeline`` (so caching, retries and hooks apply).
///
/// ```swift
/// let proxy = WebServiceProxy(session: .shared, baseURL: URL(string: "https://api.example.com/")!)
/// let sum: Int = try await proxy.invoke(.get, path: "math/sum", arguments: ["values": [1, 2, 3]])
/// ```
///
/// As in Echo: arguments always go in the query (for every method; a body is `content` or
/// `body`), arrays become repeated names, `Date` becomes epoch milliseconds, `nil`, `NSNull`
/// and ``undefined`` are skipped, and `+` is sent as `%2B`. Content without a type is sent as
/// `application/octet-stream`. JSON bodies encode and decode dates as milliseconds since 1970.
/// The response handler gets the MIME type without parameters (`text/plain`, not
/// `text/plain; charset=utf-8`). An error status throws ``WebServiceError``.
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

    /// A response handler: the body and its MIME type (without parameters), as in Echo.
    public typealias ResponseHandler<T> = @Sendable (_ content: Data, _ contentType: String?) throws -> T

    /// An argument value that is left out of the query, as Echo's `undefined`.
    public static let undefined: Void = ()

    /// The URL paths are resolved against.
    public let baseURL: URL
    /// The pipeline requests go through.
    public let pipeline: Pipeline
    /// The longest response body collected, in bytes (32 MiB by default); a longer one fails the
    /// call with ``/Recall/ResponseBodyError`` `tooLarge`.
    public let maxResponseBodyBytes: Int

    private let storedHeaders: Locked<[String: String]>

    /// Header fields added to every request (a request's own `Content-Type` wins). Safe to
    /// change while calls are running; a call uses the fields as they were when it started.
    public var headers: [String: String] {
        get { storedHeaders.withLock { $0 } }
        set { storedHeaders.withLock { $0 = newValue } }
    }

    /// Creates a proxy sending through `pipeline` (by default a plain URLSession pipeline) that
    /// collects response bodies of at most `maxResponseBodyBytes`.
    public init(
        baseURL: URL, pipeline: Pipeline = Pipeline(transport: URLSessionTransport()), headers: [String: String] = [:],
        maxResponseBodyBytes: Int = 32 << 20
    ) {
        self.baseURL = baseURL
        self.maxResponseBodyBytes = maxResponseBodyBytes
        self.pipeline = pipeline
        self.storedHeaders = Locked(headers)
    }

    /// Echo's initializer: requests go through `session` (its configuration, delegate and
    /// protocol classes apply), with no hooks or retries.
    public convenience init(session: URLSession, baseURL: URL) {
        self.init(baseURL: baseURL, pipeline: Pipeline(transport: URLSessionTransport(session: session)))
    }

    /// A proxy sending straight to `transport`, with no hooks or retries.
    public convenience init(transport: any Transport, baseURL: URL) {
        self.init(baseURL: baseURL, pipeline: Pipeline(transport: transport))
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
    public func invoke(
        _ method: Method, path: String, arguments: [String: Any?] = [:],
        content: Data? = nil, contentType: String? = nil
    ) async throws {
        _ = try await send(method, path: path, items: Self.queryItems(arguments), content: content, contentType: contentType)
    }

    /// Invokes a method and decodes its JSON result.
    public func invoke<Result: Decodable>(
        _ method: Method, path: String, arguments: [String: Any?] = [:],
        content: Data? = nil, contentType: String? = nil
    ) async throws -> Result {
        let (data, _) = try await send(method, path: path, items: Self.queryItems(arguments), content: content, contentType: contentType)
        return try Self.decodeJSON(Result.self, from: data)
    }

    /// Invokes a method with a JSON body and no result.
    public func invoke<Body: Encodable>(
        _ method: Method, path: String, arguments: [String: Any?] = [:],
        body: Body
    ) async throws {
        _ = try await send(
            method, path: path, items: Self.queryItems(arguments), content: try Self.encodeJSON(body),
            contentType: "application/json")
    }

    /// Invokes a method with a JSON body and decodes its JSON result.
    public func invoke<Body: Encodable, Result: Decodable>(
        _ method: Method, path: String, arguments: [String: Any?] = [:],
        body: Body
    ) async throws -> Result {
        let (data, _) = try await send(
            method, path: path, items: Self.queryItems(arguments), content: try Self.encodeJSON(body),
            contentType: "application/json")
        return try Self.decodeJSON(Result.self, from: data)
    }

    /// Invokes a method and hands the raw result and its MIME type to `responseHandler`.
    public func invoke<Result>(
        _ method: Method, path: String, arguments: [String: Any?] = [:],
        content: Data? = nil, contentType: String? = nil,
        responseHandler: (_ content: Data, _ contentType: String?) throws -> Result
    ) async throws -> Result {
        let (data, type) = try await send(
            method, path: path, items: Self.queryItems(arguments), content: content,
            contentType: contentType)
        return try responseHandler(data, type)
    }

    // MARK: Building and sending

    /// The query items of `arguments`, sorted by name: arrays repeated, dates in epoch
    /// milliseconds, `nil`, `NSNull` and ``undefined`` skipped, enumerations by raw value.
    /// - Throws: ``ServiceError`` (`.coding`) for an empty name, or a value that has no text
    ///   form (a dictionary, `Data`, a type that is neither a string, a number, a Boolean, a
    ///   date, a URL, a UUID, `LosslessStringConvertible` nor `RawRepresentable`).
    public static func queryItems(_ arguments: [String: Any?]) throws -> [URLQueryItem] {
        try arguments.keys.sorted().flatMap { name -> [URLQueryItem] in
            guard !name.isEmpty else { throw ServiceError.coding("an argument has an empty name") }
            guard let value = arguments[name].flatMap({ $0.flatMap(unwrapped) }) else { return [] }
            let values: [Any] = (value as? [Any]) ?? [value]
            return try values.compactMap { wrapped -> URLQueryItem? in
                guard let element = unwrapped(wrapped), !(element is NSNull), !(element is Void) else { return nil }
                return URLQueryItem(name: name, value: try text(of: element, name: name))
            }
        }
    }

    /// The text an argument value is sent as.
    private static func text(of value: Any, name: String) throws -> String {
        switch value {
        case let date as Date: return String(Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
        case let url as URL: return url.absoluteString
        case let uuid as UUID: return uuid.uuidString
        case let decimal as Decimal: return "\(decimal)"
        case let number as NSNumber where !(value is any LosslessStringConvertible): return number.stringValue
        case let raw as any RawRepresentable: return try text(of: raw.rawValue, name: name)
        case let text as any LosslessStringConvertible: return text.description
        default:
            throw ServiceError.coding(
                "argument '\(name)' is a \(type(of: value)), which has no text form for a query: "
                    + "pass a string, number, Boolean, date, URL, UUID, an enumeration with such raw values, or an array of these")
        }
    }

    /// `value` without its Optional wrapping (`Optional("a")` → `"a"`), or nil for a nil Optional,
    /// so arrays of optionals become repeated names with their nils skipped.
    private static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.flatMap { unwrapped($0.value) }
    }

    private func send(
        _ method: Method, path: String, items: [URLQueryItem], content: Data?,
        contentType: String?
    ) async throws -> (Data, String?) {
        guard let url = URL(string: path, relativeTo: baseURL.hasDirectoryPath ? baseURL : baseURL.appendingPathComponent(""))?.absoluteURL,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        else {
            throw ServiceError.invalidURL(path)
        }
        if !items.isEmpty { components.percentEncodedQuery = QueryEncoding.encode(items) }
        var request = URLRequest(url: components.url ?? url)
        request.httpMethod = method.rawValue
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let content {
            request.httpBody = content
            request.setValue(contentType ?? "application/octet-stream", forHTTPHeaderField: "Content-Type")
        }
        let response = try await pipeline.send(request)
        let body = try await response.body.collect(upTo: maxResponseBodyBytes)
        let type = response.headers["Content-Type"].map(Self.mimeType)
        guard response.isSuccess else {
            throw WebServiceError(statusCode: response.status, body: body, contentType: type)
        }
        return (body, type)
    }

    /// `text/plain` for `text/plain; charset=utf-8` (lower-cased, as `HTTPURLResponse.mimeType`).
    static func mimeType(_ contentType: String) -> String {
        String(contentType.prefix { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased()
    }

    private static func encodeJSON<Body: Encodable>(_ body: Body) throws -> Data {
        do { return try makeEncoder().encode(body) } catch { throw ServiceError.coding("\(error)") }
    }

    private static func decodeJSON<Result: Decodable>(_ type: Result.Type, from data: Data) throws -> Result {
        do { return try makeDecoder().decode(type, from: data) } catch {
            throw ServiceError.coding("the result is not a \(Result.self): \(DecodingFailure.describe(error))")
        }
    }
}
