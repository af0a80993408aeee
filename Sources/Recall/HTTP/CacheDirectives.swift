import Foundation

/// The directives of a `Cache-Control` field (RFC 9111 §5.2), parsed leniently: names are
/// case-insensitive, values may be tokens or quoted strings, unknown directives are kept.
///
/// A `delta-seconds` value that is not a non-negative integer is recorded as invalid and,
/// for `max-age`, counts as zero (stale), the safe reading. Conflicting duplicates of a
/// directive count as zero too (RFC 9111 §4.2.1 allows treating the response as stale).
public struct CacheDirectives: Sendable, Hashable {
    /// The directive names, lowercased, with their raw values (nil when none was given), in order.
    public private(set) var directives: [(name: String, value: String?)] = []

    /// `max-age`, worked out once when parsed: every lookup asks for it.
    public private(set) var maxAge: Int?

    /// Parses the values of one or more `Cache-Control` fields.
    public init(_ values: [String]) {
        self.init(first: nil, rest: values)
    }

    /// Parses one field value.
    public init(_ value: String?) {
        self.init(first: value, rest: [])
    }

    /// Parses the values of several fields, each on its own, given as the first and the rest:
    /// a response with one field makes no list.
    init(first: String?, rest: [String]) {
        if let first { parse(first) }
        for value in rest { parse(value) }
        maxAge = seconds("max-age")
    }

    /// No directives.
    private init() {}

    /// Whether there are no directives.
    public var isEmpty: Bool { directives.isEmpty }

    /// Whether `name` is present.
    public func contains(_ name: String) -> Bool {
        for directive in directives where directive.name == name { return true }
        return false
    }

    /// The value of the first `name`, if it has one.
    public func value(_ name: String) -> String? {
        directives.first { $0.name == name }?.value
    }

    /// A delta-seconds directive: `nil` when absent; 0 when invalid or when duplicates
    /// disagree; capped at 2^31 seconds (RFC 9111 §1.2.2).
    public func seconds(_ name: String) -> Int? {
        // Every hit asks for max-age: one pass, nothing allocated.
        var first: Int??
        for directive in directives where directive.name == name {
            let parsed = Self.deltaSeconds(directive.value)
            guard let seen = first else {
                first = .some(parsed)
                continue
            }
            if seen != parsed { return 0 }
        }
        guard let first else { return nil }
        return first ?? 0
    }

    /// `no-store`.
    public var noStore: Bool { contains("no-store") }
    /// `no-cache` without field names: every use must be validated.
    public var noCache: Bool { directives.contains { $0.name == "no-cache" && ($0.value ?? "").isEmpty } }
    /// The field names of a qualified `no-cache="Set-Cookie, …"` (lowercased).
    public var noCacheFields: [String] { Self.fieldNames(directives.first { $0.name == "no-cache" }?.value) }
    /// The field names of a qualified `private="…"` (lowercased).
    public var privateFields: [String] { Self.fieldNames(directives.first { $0.name == "private" }?.value) }
    /// `must-revalidate`.
    public var mustRevalidate: Bool { contains("must-revalidate") }
    /// `must-understand`.
    public var mustUnderstand: Bool { contains("must-understand") }
    /// `immutable` (RFC 8246).
    public var immutable: Bool { contains("immutable") }
    /// `public`.
    public var isPublic: Bool { contains("public") }
    /// `private`: stored by a private cache, never by a shared one (``CacheAudience/shared``).
    public var isPrivate: Bool { contains("private") }
    /// `s-maxage`: the freshness lifetime in a shared cache, over `max-age` and `Expires`.
    public var sMaxAge: Int? { seconds("s-maxage") }
    /// `proxy-revalidate`: `must-revalidate` for a shared cache.
    public var proxyRevalidate: Bool { contains("proxy-revalidate") }
    /// `stale-while-revalidate` (RFC 5861).
    public var staleWhileRevalidate: Int? { seconds("stale-while-revalidate") }
    /// `stale-if-error` (RFC 5861).
    public var staleIfError: Int? { seconds("stale-if-error") }
    /// `only-if-cached` (request).
    public var onlyIfCached: Bool { contains("only-if-cached") }
    /// `min-fresh` (request).
    public var minFresh: Int? { seconds("min-fresh") }

    /// `max-stale` (request): `nil` when absent; `.some(nil)` for any staleness; else the limit.
    public var maxStale: Int?? {
        guard let directive = directives.first(where: { $0.name == "max-stale" }) else { return nil }
        guard let value = directive.value, !value.isEmpty else { return .some(nil) }
        return .some(Self.deltaSeconds(value) ?? 0)
    }

    static let maximumDelta = 2_147_483_648

    /// Parses delta-seconds: digits only; larger values saturate at 2^31 (RFC 9111 §1.2.2).
    /// Leading zeros count for nothing: `max-age=00000000000` is 0, not a value too long to hold.
    static func deltaSeconds(_ value: String?) -> Int? {
        guard let value, !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let digits = value.utf8.drop { $0 == 0x30 }
        guard !digits.isEmpty else { return 0 }
        guard digits.count <= 10, let number = Int(Substring(digits)) else { return maximumDelta }
        return min(number, maximumDelta)
    }

    private static func fieldNames(_ value: String?) -> [String] {
        guard let value else { return [] }
        return value.split(separator: ",").map { $0.trimmingOWS.lowercased() }.filter { !$0.isEmpty }
    }

    /// Parses one field value on its UTF-8 bytes (every stored response's fields are parsed
    /// when it is read back from disk, so this is on the hit path of a byte store).
    private mutating func parse(_ text: String) {
        var text = text
        text.withUTF8 { parse($0) }
    }

    private mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>) {
        let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t"), comma = UInt8(ascii: ","), equals = UInt8(ascii: "=")
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        let count = bytes.count
        var index = 0
        while index < count {
            while index < count, bytes[index] == space || bytes[index] == tab || bytes[index] == comma { index += 1 }
            guard index < count else { break }
            let nameStart = index
            while index < count, bytes[index] != equals, bytes[index] != comma { index += 1 }
            let nameEnd = index
            var value: String?
            if index < count, bytes[index] == equals {
                index += 1
                while index < count, bytes[index] == space || bytes[index] == tab { index += 1 }
                if index < count, bytes[index] == quote {
                    index += 1
                    var unquoted: [UInt8] = []
                    var escaped = false
                    while index < count {
                        let byte = bytes[index]
                        index += 1
                        if escaped {
                            unquoted.append(byte)
                            escaped = false
                        } else if byte == backslash {
                            escaped = true
                        } else if byte == quote {
                            break
                        } else {
                            unquoted.append(byte)
                        }
                    }
                    value = String(decoding: unquoted, as: UTF8.self)
                    while index < count, bytes[index] != comma { index += 1 }
                } else {
                    let start = index
                    while index < count, bytes[index] != comma { index += 1 }
                    value = Self.trimmed(bytes, start, index)
                }
            }
            let name = Self.trimmed(bytes, nameStart, nameEnd, lowercasing: true)
            if !name.isEmpty { directives.append((name, value)) }
        }
    }

    /// The bytes `start..<end` without leading and trailing spaces and tabs, as a string
    /// (lowercased when asked: ASCII on the bytes, anything else as Unicode does it).
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, lowercasing: Bool = false) -> String {
        var start = start, end = end
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        let slice = UnsafeBufferPointer(rebasing: bytes[start..<end])
        guard lowercasing else { return String(decoding: slice, as: UTF8.self) }
        guard slice.allSatisfy({ $0 < 0x80 }) else { return String(decoding: slice, as: UTF8.self).lowercased() }
        guard slice.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return String(decoding: slice, as: UTF8.self) }
        return String(unsafeUninitializedCapacity: slice.count) { buffer in
            for (offset, byte) in slice.enumerated() { buffer[offset] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
            return slice.count
        }
    }

    /// Compares directive lists.
    public static func == (lhs: CacheDirectives, rhs: CacheDirectives) -> Bool {
        lhs.directives.elementsEqual(rhs.directives) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Hashes the directive list.
    public func hash(into hasher: inout Hasher) {
        for directive in directives {
            hasher.combine(directive.name)
            hasher.combine(directive.value)
        }
    }
}
