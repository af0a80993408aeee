import Recall
/// A value that gives header fields: ``HTTPHeaders`` itself, or a `[String: String]`.
///
/// ``Endpoint/header`` takes either, so an endpoint's `var header: [String: String]` is sent
/// just as `var header: HTTPHeaders` is (a declaration of either type is never ignored).
public protocol HTTPHeadersConvertible: Sendable {
    /// The header fields this value gives.
    var asHTTPHeaders: HTTPHeaders { get }
}

extension HTTPHeaders: HTTPHeadersConvertible {
    /// The fields themselves.
    public var asHTTPHeaders: HTTPHeaders { self }
}

extension Dictionary: HTTPHeadersConvertible where Key == String, Value == String {
    /// The fields of the dictionary, sorted by name (a dictionary keeps no order).
    public var asHTTPHeaders: HTTPHeaders { HTTPHeaders(self) }
}
