import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the cache reads of a request, read once per lookup.
///
/// Every `URLRequest` property is a call into Foundation's request class (a retain, a dynamic
/// call, often a copy); the hit path used to read the fields three times, the method, URL and
/// cache policy twice each. It reads them here, once, and passes this along.
struct RequestFacts: Sendable {
    /// The request's method.
    let method: RequestMethod
    /// The request's URL.
    let url: URL?
    /// Whether the request has any header field (most have none on the hit path of a client
    /// that adds its fields later, and then no field lookup can find one).
    let hasFields: Bool
    /// The request's Foundation cache policy.
    let cachePolicy: URLRequest.CachePolicy

    init(_ request: URLRequest) {
        method = RequestMethod(request)
        url = request.url
        hasFields = Self.hasFields(request)
        cachePolicy = request.cachePolicy
    }

    /// Whether `request` has any header field.
    static func hasFields(_ request: URLRequest) -> Bool {
        !(request.allHTTPHeaderFields?.isEmpty ?? true)
    }
}
