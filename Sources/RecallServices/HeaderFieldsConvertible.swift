import Recall
/// A value that gives header fields: ``/Recall/HeaderFields`` itself, or a `[String: String]`.
///
/// ``Endpoint/header`` takes either, so an endpoint's `var header: [String: String]` is sent
/// just as `var header: HeaderFields` is (a declaration of either type is never ignored).
public protocol HeaderFieldsConvertible: Sendable {
    /// The header fields this value gives.
    var asHeaderFields: HeaderFields { get }
}

extension HeaderFields: HeaderFieldsConvertible {
    /// The fields themselves.
    public var asHeaderFields: HeaderFields { self }
}

extension Dictionary: HeaderFieldsConvertible where Key == String, Value == String {
    /// The fields of the dictionary, sorted by name (a dictionary keeps no order).
    public var asHeaderFields: HeaderFields { HeaderFields(self) }
}
