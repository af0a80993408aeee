import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a `URLRequest` becomes a cache key: a canonical form of its URL, so that equivalent
/// URLs share one entry and different resources never do.
///
/// Canonicalization (RFC 3986 §6.2.2 syntax-based normalization, plus query rules):
/// - scheme and host lowercased; only `http` and `https` are cached;
/// - the default port (80, 443) dropped; an empty path becomes `/`;
/// - percent-encoding normalized: hex digits uppercased, unreserved characters
///   (`A–Z a–z 0–9 - . _ ~`) decoded, anything else that needs encoding encoded;
/// - dot segments (`.`, `..`) removed; the fragment dropped;
/// - query parameters sorted by name, stably (repeated names keep their order);
///   empty parameters and an empty query dropped; `+` is kept distinct from `%20`;
/// - parameters matching ``ignoredQueryParameters`` dropped (`utm_*` matches a prefix);
/// - the request header fields named in ``headersInKey`` appended as `name: value`.
public struct CacheKeyPolicy: Sendable, Hashable {
    /// Query parameter names left out of the key; a trailing `*` matches a prefix (`utm_*`).
    public var ignoredQueryParameters: [String]
    /// Request header fields whose values join the key (compared case-insensitively).
    public var headersInKey: [String]
    /// Keys longer than this many bytes are not cached at all.
    public var maximumLength: Int

    /// Creates a policy.
    public init(ignoredQueryParameters: [String] = [], headersInKey: [String] = [], maximumLength: Int = 8192) {
        self.ignoredQueryParameters = ignoredQueryParameters
        self.headersInKey = headersInKey.map { $0.lowercased() }
        self.maximumLength = maximumLength
    }

    /// The key of `request`, or `nil` when it cannot be cached (not http(s), no host, too long).
    public func key(for request: URLRequest) -> String? {
        guard let url = request.url, var key = canonicalURL(url) else { return nil }
        for name in headersInKey {
            let value = request.value(forHTTPHeaderField: name).map(Self.normalizeFieldValue) ?? ""
            key += "\n\(name): \(value)"
        }
        return key.utf8.count <= maximumLength ? key : nil
    }

    /// The canonical form of `url`, or `nil` when it is not an absolute http(s) URL.
    public func canonicalURL(_ url: URL) -> String? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              var host = components.percentEncodedHost?.lowercased(), !host.isEmpty else { return nil }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        var result = scheme + "://"
        if let user = components.percentEncodedUser {
            result += Self.normalizePercentEncoding(user)
            if let password = components.percentEncodedPassword { result += ":" + Self.normalizePercentEncoding(password) }
            result += "@"
        }
        result += host
        if let port = components.port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443) {
            result += ":\(port)"
        }
        let path = Self.removeDotSegments(Self.normalizePercentEncoding(components.percentEncodedPath))
        result += path.isEmpty ? "/" : path
        if let query = components.percentEncodedQuery {
            let parameters = query.split(separator: "&", omittingEmptySubsequences: true).map { pair -> (name: String, text: String) in
                let text = Self.normalizePercentEncoding(String(pair))
                let name = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                return (name, text)
            }.filter { !isIgnored($0.name) }
            // Swift's sort is not stable; sort by (name, original position).
            let sorted = parameters.enumerated().sorted { lhs, rhs in
                lhs.element.name != rhs.element.name ? lhs.element.name < rhs.element.name : lhs.offset < rhs.offset
            }.map(\.element.text)
            if !sorted.isEmpty { result += "?" + sorted.joined(separator: "&") }
        }
        return result
    }

    private func isIgnored(_ encodedName: String) -> Bool {
        guard !ignoredQueryParameters.isEmpty else { return false }
        let name = encodedName.removingPercentEncoding ?? encodedName
        return ignoredQueryParameters.contains { pattern in
            pattern.hasSuffix("*") ? name.hasPrefix(pattern.dropLast()) : name == pattern
        }
    }

    /// Trims a field value and folds runs of whitespace, so `a,  b` and `a, b` match.
    static func normalizeFieldValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    private static let hex = Array("0123456789ABCDEF".utf8)

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
    }

    /// Characters left as they are: unreserved, sub-delims, `:`, `@`, `/`, `?`, `=`, `&`, `+`.
    private static func isAllowedRaw(_ byte: UInt8) -> Bool {
        isUnreserved(byte) || "!$&'()*+,;=:@/?".utf8.contains(byte)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// Decodes percent-encoded unreserved characters, uppercases the hex of the rest and
    /// encodes characters that must not appear raw (a lone `%` becomes `%25`).
    static func normalizePercentEncoding(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        func encode(_ byte: UInt8) {
            output.append(0x25)
            output.append(hex[Int(byte >> 4)])
            output.append(hex[Int(byte & 0x0F)])
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x25, index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                let decoded = high << 4 | low
                if isUnreserved(decoded) { output.append(decoded) } else { encode(decoded) }
                index += 3
            } else {
                if isAllowedRaw(byte) { output.append(byte) } else { encode(byte) }
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// RFC 3986 §5.2.4 `remove_dot_segments`.
    static func removeDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        var input = Substring(path)
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") { input = input.dropFirst(3) }
            else if input.hasPrefix("./") { input = input.dropFirst(2) }
            else if input.hasPrefix("/./") { input = input.dropFirst(2) }
            else if input == "/." { input = "/" }
            else if input.hasPrefix("/../") { input = input.dropFirst(3); if !output.isEmpty { output.removeLast() } }
            else if input == "/.." { input = "/"; if !output.isEmpty { output.removeLast() } }
            else if input == "." || input == ".." { input = "" }
            else {
                let start = input.startIndex
                let searchFrom = input.first == "/" ? input.index(after: start) : start
                let end = input[searchFrom...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[start..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }
}
