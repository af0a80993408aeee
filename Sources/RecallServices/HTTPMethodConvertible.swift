import Recall
/// A value that names an HTTP method: ``HTTPMethod`` itself, or a `String` such as `"POST"`.
///
/// ``Endpoint/method`` takes either, so `static let method: HTTPMethod = .post`,
/// `static let method = "POST"` and Decree's `static let method: Method = .post` all declare
/// the method (none of them is silently replaced by the default).
public protocol HTTPMethodConvertible: Sendable {
    /// The method this value names.
    var asHTTPMethod: HTTPMethod { get }
}

extension HTTPMethod: HTTPMethodConvertible {
    /// The method itself.
    public var asHTTPMethod: HTTPMethod { self }
}

extension String: HTTPMethodConvertible {
    /// The method named by the string (upper-cased).
    public var asHTTPMethod: HTTPMethod { HTTPMethod(rawValue: self) }
}
