import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An HTTP request method and what RFC 9110 §9.2 says about it: whether it is safe,
/// idempotent, and whether a successful answer to it invalidates stored responses.
///
/// Methods are compared by their upper-cased name (URLRequest and most clients spell them so);
/// any method not known to be safe is treated as unsafe, so an extension method such as
/// `PROPFIND` or `M-SEARCH` invalidates caches just as `POST` does.
public struct RequestMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method's name, upper-cased.
    public let rawValue: String

    /// A method named `rawValue` (upper-cased).
    public init(rawValue: String) {
        // Methods are nearly always upper-case already: then no new string is made. GET, the
        // method of nearly every request, is recognised by one comparison of small strings.
        if rawValue == "GET" {
            self.rawValue = rawValue
            return
        }
        self.rawValue = rawValue.utf8.contains(where: { $0 >= 0x61 && $0 <= 0x7A }) ? rawValue.uppercased() : rawValue
    }

    /// A method from a literal such as `"GET"`.
    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }

    /// The method of `request` (`GET` when it has none, as URLRequest does).
    public init(_ request: URLRequest) {
        self.init(rawValue: request.httpMethod ?? "GET")
    }

    /// `GET`.
    public static let get: RequestMethod = "GET"
    /// `HEAD`.
    public static let head: RequestMethod = "HEAD"
    /// `POST`.
    public static let post: RequestMethod = "POST"
    /// `PUT`.
    public static let put: RequestMethod = "PUT"
    /// `DELETE`.
    public static let delete: RequestMethod = "DELETE"
    /// `PATCH`.
    public static let patch: RequestMethod = "PATCH"
    /// `OPTIONS`.
    public static let options: RequestMethod = "OPTIONS"
    /// `TRACE`.
    public static let trace: RequestMethod = "TRACE"
    /// `CONNECT`.
    public static let connect: RequestMethod = "CONNECT"

    /// The methods RFC 9110 §9.2.1 defines as safe: GET, HEAD, OPTIONS, TRACE.
    public static let safeMethods: Set<RequestMethod> = [.get, .head, .options, .trace]
    /// The methods RFC 9110 §9.2.2 defines as idempotent: the safe ones, PUT and DELETE.
    public static let idempotentMethods: Set<RequestMethod> = safeMethods.union([.put, .delete])

    /// Whether the method is read-only (RFC 9110 §9.2.1); unknown methods are not.
    /// (Compared by name rather than through ``safeMethods``: it is asked on every cache hit,
    /// and hashing the name costs more than comparing four short strings.)
    public var isSafe: Bool {
        switch rawValue {
        case "GET", "HEAD", "OPTIONS", "TRACE": true
        default: false
        }
    }

    /// Whether sending the request twice has the effect of sending it once (RFC 9110 §9.2.2).
    public var isIdempotent: Bool { isSafe || rawValue == "PUT" || rawValue == "DELETE" }
    /// Whether a non-error response invalidates the target URI in caches (RFC 9111 §4.4): every
    /// method not known to be safe.
    public var invalidatesCaches: Bool { !isSafe }

    /// The name.
    public var description: String { rawValue }
}
