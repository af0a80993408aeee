import Recall
/// A value that names an HTTP method: ``/Recall/RequestMethod`` itself, or a `String` such as `"POST"`.
///
/// ``Endpoint/method`` takes either, so `static let method: RequestMethod = .post`,
/// `static let method = "POST"` and Decree's `static let method: Method = .post` all declare
/// the method (none of them is silently replaced by the default).
public protocol RequestMethodConvertible: Sendable {
    /// The method this value names.
    var asRequestMethod: RequestMethod { get }
}

extension RequestMethod: RequestMethodConvertible {
    /// The method itself.
    public var asRequestMethod: RequestMethod { self }
}

extension String: RequestMethodConvertible {
    /// The method named by the string (upper-cased).
    public var asRequestMethod: RequestMethod { RequestMethod(rawValue: self) }
}
