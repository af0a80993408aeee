import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a `URLRequest` becomes a cache key: a canonical form of its URL, so that equivalent
/// URLs share one entry and different resources never do.
///
/// Canonicalization (RFC 3986 §6.2.2 syntax-based normalization, plus query rules):
/// - scheme and host lowercased; only `http` and `https` are cached;
/// - the user name and password dropped (an ``HTTPCache`` partitions by them instead, hashed);
/// - the default port (80, 443) dropped; an empty path becomes `/`;
/// - percent-encoding normalized: hex digits uppercased, unreserved characters
///   (`A–Z a–z 0–9 - _ ~`) decoded, anything else that needs encoding encoded; an encoded
///   dot (`%2E`) stays encoded, because servers may read `%2E%2E` as `..` while the transport
///   sends it as it is: decoding it would give `/a/%2e%2e/admin` the key of `/admin`;
/// - literal dot segments (`.`, `..`) removed, as clients do before sending; the fragment dropped;
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

    /// The canonical URL of `request` followed by the values of its ``headersInKey`` fields,
    /// or `nil` when it cannot be cached (not http(s), no host, too long). An ``HTTPCache``
    /// keys its storage by the canonical URL alone and keeps the header values in each stored
    /// response's partition, so that invalidating a URL reaches every partition.
    public func key(for request: URLRequest) -> String? {
        guard let url = request.url, var key = canonicalURL(url) else { return nil }
        for name in headersInKey {
            let value = request.value(forHTTPHeaderField: name).map(Self.normalizeFieldValue) ?? ""
            key += "\n\(name): \(value)"
        }
        return key.utf8.count <= maximumLength ? key : nil
    }

    /// The canonical form of `url`, or `nil` when it is not an absolute http(s) URL.
    ///
    /// Works on the URL's bytes in one buffer (RFC 3986 §3 parsing) rather than through
    /// `URLComponents`, which is an order of magnitude slower on Linux; it is on every lookup.
    public func canonicalURL(_ url: URL) -> String? {
        canonicalURL(text: url.absoluteString)
    }

    /// The canonical form of an absolute URL's text.
    func canonicalURL(text: String) -> String? {
        var text = text
        return text.withUTF8 { canonical(Array($0)) }
    }

    private func canonical(_ input: [UInt8]) -> String? {
        var bytes = input[...]
        if let hash = bytes.firstIndex(of: UInt8(ascii: "#")) { bytes = bytes[..<hash] } // fragment dropped
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        for byte in bytes[..<colon] { out.append(Self.lower(byte)) }
        let https = out == Array("https".utf8)
        guard https || out == Array("http".utf8) else { return nil }
        var index = colon + 1
        guard bytes.endIndex - index >= 2, bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "/") else { return nil }
        index += 2
        out.append(contentsOf: "://".utf8)
        let authorityEnd = bytes[index...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? bytes.endIndex
        var authority = bytes[index..<authorityEnd]
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            authority = authority[(at + 1)...] // userinfo: a credential, never part of the key
        }
        var host = authority
        var port: Int?
        let bracket = authority.lastIndex(of: UInt8(ascii: "]"))
        if let portColon = authority.lastIndex(of: UInt8(ascii: ":")), bracket.map({ portColon > $0 }) ?? true {
            let digits = authority[(portColon + 1)...]
            if !digits.isEmpty {
                guard digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
                let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
                guard value <= 65_535 else { return nil }
                port = value
            }
            host = authority[..<portColon]
        }
        guard !host.isEmpty else { return nil }
        for byte in host { out.append(Self.lower(byte)) }
        if let port, port != (https ? 443 : 80) {
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: String(port).utf8)
        }
        let queryStart = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "?"))
        var path: [UInt8] = []
        Self.appendNormalized(bytes[authorityEnd..<(queryStart ?? bytes.endIndex)], to: &path)
        if path.contains(UInt8(ascii: ".")) { path = Self.removeDotSegments(path) }
        if path.isEmpty { out.append(UInt8(ascii: "/")) } else { out.append(contentsOf: path) }
        if let queryStart {
            var normalized: [UInt8] = []
            var parameters: [(range: Range<Int>, nameEnd: Int, offset: Int)] = []
            for (offset, piece) in bytes[(queryStart + 1)...].split(separator: UInt8(ascii: "&")).enumerated() {
                let start = normalized.count
                Self.appendNormalized(piece, to: &normalized)
                let nameEnd = normalized[start...].firstIndex(of: UInt8(ascii: "=")) ?? normalized.count
                if !isIgnored(normalized[start..<nameEnd]) {
                    parameters.append((start..<normalized.count, nameEnd, offset))
                } else {
                    normalized.removeSubrange(start...)
                }
            }
            // Sorted by name, stably (Swift's sort is not stable: the offset breaks ties).
            parameters.sort { lhs, rhs in
                let left = normalized[lhs.range.lowerBound..<lhs.nameEnd], right = normalized[rhs.range.lowerBound..<rhs.nameEnd]
                return left.elementsEqual(right) ? lhs.offset < rhs.offset : left.lexicographicallyPrecedes(right)
            }
            for (position, parameter) in parameters.enumerated() {
                out.append(position == 0 ? UInt8(ascii: "?") : UInt8(ascii: "&"))
                out.append(contentsOf: normalized[parameter.range])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    private func isIgnored(_ name: ArraySlice<UInt8>) -> Bool {
        guard !ignoredQueryParameters.isEmpty else { return false }
        return isIgnored(String(decoding: name, as: UTF8.self))
    }

    private func isIgnored(_ encodedName: String) -> Bool {
        guard !ignoredQueryParameters.isEmpty else { return false }
        let name = encodedName.utf8.contains(0x25) ? (encodedName.removingPercentEncoding ?? encodedName) : encodedName
        return ignoredQueryParameters.contains { pattern in
            pattern.utf8.last == 0x2A ? name.utf8.starts(with: pattern.utf8.dropLast()) : name == pattern
        }
    }

    /// Trims a field value and folds runs of whitespace, so `a,  b` and `a, b` match.
    static func normalizeFieldValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    private static let hex = Array("0123456789ABCDEF".utf8)

    /// Per byte: 1 unreserved and decoded when percent-encoded, 2 allowed raw (sub-delims,
    /// `:`, `@`, `/`, `?`, and `.`, which is unreserved but never decoded: see the type's
    /// documentation), 0 must be encoded.
    private static let classes: [UInt8] = (0..<256).map { value in
        let byte = UInt8(value)
        if (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2D || byte == 0x5F || byte == 0x7E { return 1 }
        return Array("!$&'()*+,;=:@/?.".utf8).contains(byte) ? 2 : 0
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// Appends `bytes` to `output` with percent-encoding normalized: unreserved characters
    /// but `.` decoded, the hex of the rest uppercased, and anything that must not appear raw encoded
    /// (a lone `%` becomes `%25`).
    static func appendNormalized(_ bytes: ArraySlice<UInt8>, to output: inout [UInt8]) {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 0x25, bytes.endIndex - index > 2, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                let decoded = high << 4 | low
                if classes[Int(decoded)] == 1 { output.append(decoded) } else { appendEncoded(decoded, to: &output) }
                index += 3
            } else {
                if classes[Int(byte)] != 0 { output.append(byte) } else { appendEncoded(byte, to: &output) }
                index += 1
            }
        }
    }

    private static func appendEncoded(_ byte: UInt8, to output: inout [UInt8]) {
        output.append(0x25)
        output.append(hex[Int(byte >> 4)])
        output.append(hex[Int(byte & 0x0F)])
    }

    /// RFC 3986 §5.2.4 `remove_dot_segments`, on bytes, in one pass.
    static func removeDotSegments(_ bytes: [UInt8]) -> [UInt8] {
        let dot = UInt8(ascii: "."), slash = UInt8(ascii: "/")
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var starts: [Int] = [] // where each output segment (with its leading slash) begins
        let absolute = bytes.first == slash
        var index = absolute ? 1 : 0
        while index <= bytes.count {
            let end = bytes[index...].firstIndex(of: slash) ?? bytes.count
            let length = end - index
            let isLast = end == bytes.count
            let isDot = length == 1 && bytes[index] == dot
            let isDotDot = length == 2 && bytes[index] == dot && bytes[index + 1] == dot
            if isDotDot, let start = starts.popLast() { output.removeSubrange(start...) }
            if isDot || isDotDot {
                if isLast {
                    starts.append(output.count)
                    if absolute || !output.isEmpty { output.append(slash) }
                }
            } else {
                starts.append(output.count)
                if absolute || starts.count > 1 { output.append(slash) }
                output.append(contentsOf: bytes[index..<end])
            }
            index = end + 1
        }
        return output
    }
}
