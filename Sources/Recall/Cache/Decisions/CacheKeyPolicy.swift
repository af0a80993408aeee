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
        return text.withUTF8 { canonical($0) }
    }

    /// The canonical form of the URL in `input`, checked first and then written straight into
    /// the result's storage: for a usual URL the only allocation is the result (the query's
    /// scratch space is on the stack; a path with dot segments, or a query too long for the
    /// stack, allocates a few more). It runs for every URL the cache has not seen stored
    /// before: every miss.
    private func canonical(_ input: UnsafeBufferPointer<UInt8>) -> String? {
        let slash = UInt8(ascii: "/"), question = UInt8(ascii: "?")
        let end = input.firstIndex(of: UInt8(ascii: "#")) ?? input.count  // the fragment is dropped
        guard let colon = input[..<end].firstIndex(of: UInt8(ascii: ":")), colon == 4 || colon == 5,
            Self.lower(input[0]) == UInt8(ascii: "h"), Self.lower(input[1]) == UInt8(ascii: "t"),
            Self.lower(input[2]) == UInt8(ascii: "t"), Self.lower(input[3]) == UInt8(ascii: "p"),
            colon == 4 || Self.lower(input[4]) == UInt8(ascii: "s")
        else { return nil }
        let https = colon == 5
        guard end - colon >= 3, input[colon + 1] == slash, input[colon + 2] == slash else { return nil }
        let authorityStart = colon + 3
        let authorityEnd = input[authorityStart..<end].firstIndex { $0 == slash || $0 == question } ?? end
        // User information is a credential, never part of the key.
        let hostStart = input[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")).map { $0 + 1 } ?? authorityStart
        var hostEnd = authorityEnd
        var port: Int?
        let bracket = input[hostStart..<authorityEnd].lastIndex(of: UInt8(ascii: "]"))
        if let portColon = input[hostStart..<authorityEnd].lastIndex(of: UInt8(ascii: ":")), bracket.map({ portColon > $0 }) ?? true {
            let digits = input[(portColon + 1)..<authorityEnd]
            if !digits.isEmpty {
                guard digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
                let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
                guard value <= 65_535 else { return nil }
                port = value
            }
            hostEnd = portColon
        }
        guard hostEnd > hostStart else { return nil }
        if port == (https ? 443 : 80) { port = nil }
        let queryStart = input[authorityEnd..<end].firstIndex(of: question)
        // Percent-encoding at most triples a byte; scheme, "://", a port and a "/" fit in 16.
        return String(unsafeUninitializedCapacity: 3 * end + 16) { out in
            // The scheme as it came, lowercased, then "://".
            for index in 0..<colon { out[index] = Self.lower(input[index]) }
            out[colon] = UInt8(ascii: ":")
            out[colon + 1] = slash
            out[colon + 2] = slash
            var count = colon + 3
            for index in hostStart..<hostEnd { out[count] = Self.lower(input[index]); count += 1 }
            if let port {
                out[count] = UInt8(ascii: ":")
                count += 1
                var divisor = 10_000
                while divisor > 1, port / divisor == 0 { divisor /= 10 }
                while divisor > 0 {
                    out[count] = UInt8(0x30 + port / divisor % 10)
                    count += 1
                    divisor /= 10
                }
            }
            let pathStart = count
            count = Self.normalize(input[authorityEnd..<(queryStart ?? end)], into: out, at: count)
            if Self.hasDotSegment(out[pathStart..<count]) {
                let path = Self.removeDotSegments(Array(out[pathStart..<count]))
                _ = UnsafeMutableBufferPointer(rebasing: out[pathStart...]).initialize(fromContentsOf: path)
                count = pathStart + path.count
            }
            if count == pathStart { out[count] = slash; count += 1 }
            if let queryStart { count = appendQuery(input[(queryStart + 1)..<end], into: out, at: count) }
            return count
        }
    }

    /// A query parameter, normalized in a scratch buffer: where it is, where its name ends, and
    /// its place among the parameters (to sort stably).
    private struct Parameter {
        var start: Int, nameEnd: Int, end: Int, place: Int
    }

    /// Writes the parameters of `query` at `position` in `out`, normalized, without empty and
    /// ignored ones, sorted by name stably; returns the new end. Nothing when none is left.
    private func appendQuery(_ query: Slice<UnsafeBufferPointer<UInt8>>, into out: UnsafeMutableBufferPointer<UInt8>, at position: Int) -> Int {
        guard !query.isEmpty else { return position }
        let ampersand = UInt8(ascii: "&")
        let pieces = query.reduce(1) { $1 == ampersand ? $0 + 1 : $0 }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 3 * query.count) { scratch in
            withUnsafeTemporaryAllocation(of: Parameter.self, capacity: pieces) { parameters in
                var used = 0, kept = 0
                var start = query.startIndex
                while start < query.endIndex {
                    let stop = query[start...].firstIndex(of: ampersand) ?? query.endIndex
                    if stop > start {
                        let begin = used
                        used = Self.normalize(query[start..<stop], into: scratch, at: used)
                        let nameEnd = scratch[begin..<used].firstIndex(of: UInt8(ascii: "=")) ?? used
                        if isIgnored(scratch[begin..<nameEnd]) {
                            used = begin
                        } else {
                            parameters[kept] = Parameter(start: begin, nameEnd: nameEnd, end: used, place: kept)
                            kept += 1
                        }
                    }
                    start = stop + 1
                }
                var sorted = UnsafeMutableBufferPointer(rebasing: parameters[..<kept])
                sorted.sort { lhs, rhs in
                    let left = scratch[lhs.start..<lhs.nameEnd], right = scratch[rhs.start..<rhs.nameEnd]
                    return left.elementsEqual(right) ? lhs.place < rhs.place : left.lexicographicallyPrecedes(right)
                }
                var count = position
                for (index, parameter) in sorted.enumerated() {
                    out[count] = index == 0 ? UInt8(ascii: "?") : ampersand
                    count += 1
                    for byte in scratch[parameter.start..<parameter.end] { out[count] = byte; count += 1 }
                }
                return count
            }
        }
    }

    /// Whether `path` has a segment that is `.` or `..` (encoded dots are not dots: see the type).
    private static func hasDotSegment(_ path: Slice<UnsafeMutableBufferPointer<UInt8>>) -> Bool {
        let dot = UInt8(ascii: ".")
        var segmentStart = path.startIndex
        for index in path.startIndex...path.endIndex where index == path.endIndex || path[index] == UInt8(ascii: "/") {
            let length = index - segmentStart
            if length == 1, path[segmentStart] == dot { return true }
            if length == 2, path[segmentStart] == dot, path[segmentStart + 1] == dot { return true }
            segmentStart = index + 1
        }
        return false
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    private func isIgnored(_ name: Slice<UnsafeMutableBufferPointer<UInt8>>) -> Bool {
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

    /// Whether `byte` is unreserved and decoded when percent-encoded: `A–Z a–z 0–9 - _ ~`
    /// (one bit per ASCII byte, in two words: no table to load, no lazy global to check).
    static func isUnreserved(_ byte: UInt8) -> Bool {
        isIn((0x03FF_2000_0000_0000, 0x47FF_FFFE_87FF_FFFE), byte)
    }

    /// Whether `byte` is allowed raw but never decoded: the sub-delims, `:`, `@`, `/`, `?`, and
    /// `.`, which is unreserved but stays encoded (see the type's documentation).
    static func isAllowedRaw(_ byte: UInt8) -> Bool {
        isIn((0xAC00_DFD2_0000_0000, 0x1), byte)
    }

    private static func isIn(_ set: (low: UInt64, high: UInt64), _ byte: UInt8) -> Bool {
        switch byte {
        case 0..<64: set.low >> byte & 1 == 1
        case 64..<128: set.high >> (byte - 64) & 1 == 1
        default: false
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? 0x30 + value : 0x37 + value
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// Writes `bytes` at `position` in `output` with percent-encoding normalized: unreserved
    /// characters but `.` decoded, the hex of the rest uppercased, and anything that must not
    /// appear raw encoded (a lone `%` becomes `%25`); returns the new end. `output` has room
    /// for three times `bytes`.
    static func normalize(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, into output: UnsafeMutableBufferPointer<UInt8>, at position: Int) -> Int {
        var count = position
        func encode(_ byte: UInt8) {
            output[count] = 0x25
            output[count + 1] = hexDigit(byte >> 4)
            output[count + 2] = hexDigit(byte & 0x0F)
            count += 3
        }
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 0x25, bytes.endIndex - index > 2, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                let decoded = high << 4 | low
                if isUnreserved(decoded) { output[count] = decoded; count += 1 } else { encode(decoded) }
                index += 3
            } else {
                if isUnreserved(byte) || isAllowedRaw(byte) { output[count] = byte; count += 1 } else { encode(byte) }
                index += 1
            }
        }
        return count
    }

    /// RFC 3986 §5.2.4 `remove_dot_segments`, on bytes, in one pass.
    static func removeDotSegments(_ bytes: [UInt8]) -> [UInt8] {
        let dot = UInt8(ascii: "."), slash = UInt8(ascii: "/")
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var starts: [Int] = []  // where each output segment (with its leading slash) begins
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
