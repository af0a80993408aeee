import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import HTTPTypes
import Recall

/// Why an OpenAPI request could not be converted to a `URLRequest` or back.
public struct RecallOpenAPIConversionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What could not be converted.
    public let message: String

    /// The message.
    public var description: String { message }
}

extension URLRequest {
    /// The request `request` makes to the server at `baseURL` (its path and query appended to
    /// the base URL's path), with its method and header fields.
    public init(_ request: HTTPRequest, baseURL: URL) throws {
        guard var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false),
            let target = URLComponents(string: request.path ?? "")
        else {
            throw RecallOpenAPIConversionError(message: "cannot make a URL of \(baseURL) and \(request.path ?? "no path")")
        }
        let basePath = components.percentEncodedPath.hasSuffix("/") ? String(components.percentEncodedPath.dropLast()) : components.percentEncodedPath
        components.percentEncodedPath = basePath + target.percentEncodedPath
        components.percentEncodedQuery = target.percentEncodedQuery
        guard let url = components.url else {
            throw RecallOpenAPIConversionError(message: "cannot make a URL of \(baseURL) and \(request.path ?? "no path")")
        }
        self.init(url: url)
        httpMethod = request.method.rawValue
        for field in request.headerFields {
            addValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
    }
}

extension HTTPRequest {
    /// `request` as an `HTTPRequest` and the base URL to send it under: `baseURL` while the
    /// request's URL lies under it (its path relative to it), else the URL's origin.
    static func from(_ request: URLRequest, under baseURL: URL) throws -> (HTTPRequest, URL) {
        guard let url = request.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let scheme = components.scheme, let host = components.percentEncodedHost,
            let method = HTTPRequest.Method(request.httpMethod ?? "GET")
        else {
            throw RecallOpenAPIConversionError(message: "cannot send \(request.url?.absoluteString ?? "a request without a URL") as an HTTPRequest")
        }
        var full = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { full += "?" + query }
        let authority = host + (components.port.map { ":\($0)" } ?? "")
        let origin = "\(scheme)://\(authority)"
        var base = baseURL.absoluteString
        if base.hasSuffix("/") { base.removeLast() }
        let path: String, sentUnder: URL
        if url.absoluteString.hasPrefix(base), base.hasPrefix(origin) {
            path = String(url.absoluteString.dropFirst(base.count))
            sentUnder = baseURL
        } else {
            path = full
            sentUnder = URL(string: origin)!
        }
        var fields = HTTPFields()
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        return (HTTPRequest(method: method, scheme: scheme, authority: authority, path: path.isEmpty ? "/" : path, headerFields: fields), sentUnder)
    }
}

extension HTTPResponse {
    /// `response`'s status and header fields (fields whose names HTTP does not allow are left out).
    public init(_ response: RecallResponse) {
        var fields = HTTPFields()
        for field in response.headers {
            guard let name = HTTPField.Name(field.name) else { continue }
            fields.append(HTTPField(name: name, value: field.value))
        }
        self.init(status: .init(code: response.status), headerFields: fields)
    }
}

extension HeaderFields {
    /// swift-http-types' fields as Recall's, in order.
    public init(_ fields: HTTPFields) {
        self.init(fields.map { HeaderFields.Field(name: $0.name.rawName, value: $0.value) })
    }
}
