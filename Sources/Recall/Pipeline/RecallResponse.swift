import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An HTTP response as it travels through a ``Pipeline``: a Sendable value with the status,
/// the header fields in order, the body, the URL and where the answer came from.
public struct RecallResponse: Sendable, Hashable {
    /// Where a response came from, so that outer hooks and callers can tell a cached answer
    /// from a network one.
    public enum Source: String, Sendable, Hashable, CaseIterable {
        /// Fetched from the transport on this request.
        case network
        /// Served from a cache without contacting the origin.
        case cache
        /// A stored response confirmed by the origin (a `304 Not Modified`).
        case revalidated
        /// A stored response served although stale (allowed by `max-stale`,
        /// `stale-while-revalidate` or `stale-if-error`).
        case stale
    }

    /// The status code, such as 200 or 404.
    public var status: Int
    /// The header fields, in order, repeated names kept.
    public var headers: HeaderFields
    /// The body: bytes at hand, or a stream read once (``ResponseBody``).
    public var body: ResponseBody
    /// The URL the response answers, if known.
    public var url: URL?
    /// Where the response came from.
    public var source: Source

    /// Creates a response with a whole body.
    public init(status: Int, headers: HeaderFields = [:], body: Data = Data(), url: URL? = nil, source: Source = .network) {
        self.init(status: status, headers: headers, body: ResponseBody(body), url: url, source: source)
    }

    /// Creates a response with `body`, whole or streamed.
    public init(status: Int, headers: HeaderFields = [:], body: ResponseBody, url: URL? = nil, source: Source = .network) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
        self.source = source
    }

    /// Creates a response from a Foundation response and its whole body.
    public init(_ response: HTTPURLResponse, body: Data, source: Source = .network) {
        self.init(response, body: ResponseBody(body), source: source)
    }

    /// Creates a response from a Foundation response and its body, whole or streamed.
    public init(_ response: HTTPURLResponse, body: ResponseBody, source: Source = .network) {
        // Foundation keeps no order; sort by name so equal responses give equal values. (Each
        // name is cast from the key's `base`: a cast of the `AnyHashable` itself looks its
        // conformances up, 0.3 µs a field; the fields come out of Foundation already boxed.)
        let all = response.allHeaderFields
        var fields: [HeaderFields.Field] = []
        fields.reserveCapacity(all.count)
        for (name, value) in all {
            fields.append(HeaderFields.Field(name: (name.base as? String) ?? "\(name)", value: (value as? String) ?? "\(value)"))
        }
        fields.sort { $0.name < $1.name }
        let headers = HeaderFields(fields)
        self.init(status: response.statusCode, headers: headers, body: body, url: response.url, source: source)
    }

    /// A response with a UTF-8 text body and `Content-Type: text/plain; charset=utf-8`.
    public static func text(_ text: String, status: Int = 200, headers: HeaderFields = [:], url: URL? = nil) -> RecallResponse {
        var headers = headers
        if !headers.contains("Content-Type") { headers.add("Content-Type", "text/plain; charset=utf-8") }
        return RecallResponse(status: status, headers: headers, body: Data(text.utf8), url: url)
    }

    /// This response with its body collected: at most `maxBytes` (else ``ResponseBodyError``
    /// `tooLarge`), or any length when nil. A whole body is returned as it is.
    @discardableResult
    public func collected(upTo maxBytes: Int? = nil) async throws -> RecallResponse {
        guard body.isStreamed else { return self }
        var whole = self
        whole.body = ResponseBody(try await body.collect(upTo: maxBytes ?? Int.max))
        return whole
    }

    /// The bytes of a whole body, for the cache's rules: the cache collects a streamed body
    /// before a rule reads its bytes (a rule never sees a stream).
    var wholeBody: Data {
        assert(!body.isStreamed, "a cache rule read the bytes of a streamed body")
        return body.bytes ?? Data()
    }

    /// Whether the status is in the 2xx range.
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// The body as text in the charset its `Content-Type` names (UTF-8 when it names none or
    /// one Foundation does not know); nil when the bytes are not valid in that charset, or the
    /// body is streamed (``collected(upTo:)`` first).
    public var text: String? {
        guard let body = body.bytes else { return nil }
        return String(data: body, encoding: Self.encoding(ofCharset: headers["Content-Type"].flatMap(Self.charset(of:))))
    }

    /// The `charset` parameter of a media type (`text/plain; charset="ISO-8859-1"` → `iso-8859-1`).
    static func charset(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "charset" else { continue }
            return pair[1].trimmingCharacters(in: CharacterSet.whitespaces.union(["\""])).lowercased()
        }
        return nil
    }

    private static func encoding(ofCharset charset: String?) -> String.Encoding {
        switch charset {
        case "iso-8859-1", "latin1", "iso_8859-1": .isoLatin1
        case "us-ascii", "ascii": .ascii
        case "utf-16": .utf16
        case "utf-16le": .utf16LittleEndian
        case "utf-16be": .utf16BigEndian
        case "windows-1252", "cp1252": .windowsCP1252
        default: .utf8
        }
    }

    /// The body decoded as UTF-8 (invalid sequences repaired), for display and tests; empty for
    /// a streamed body (``collected(upTo:)`` first).
    public var bodyText: String { String(decoding: body.bytes ?? Data(), as: UTF8.self) }

    /// The response as Foundation's `HTTPURLResponse`, for code written against `URLSession`.
    /// Repeated header names are joined with `", "`. `fallbackURL` is used when ``url`` is nil.
    public func httpURLResponse(fallbackURL: URL? = nil) -> HTTPURLResponse {
        let target = url ?? fallbackURL ?? URL(string: "about:blank")!
        // HTTPURLResponse's initializer only fails for malformed arguments it never gets here.
        return HTTPURLResponse(url: target, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers.dictionary)!
    }
}
