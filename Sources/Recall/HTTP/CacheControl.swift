import Foundation

/// The directives of a `Cache-Control` field (RFC 9111 §5.2), parsed leniently: names are
/// case-insensitive, values may be tokens or quoted strings, unknown directives are kept.
///
/// A `delta-seconds` value that is not a non-negative integer is recorded as invalid and,
/// for `max-age`, counts as zero (stale), the safe reading. Conflicting duplicates of a
/// directive count as zero too (RFC 9111 §4.2.1 allows treating the response as stale).
public struct CacheControl: Sendable, Hashable {
    /// The directive names, lowercased, with their raw values (nil when none was given), in order.
    public private(set) var directives: [(name: String, value: String?)] = []

    /// Parses the values of one or more `Cache-Control` fields.
    public init(_ values: [String]) {
        for value in values { parse(value) }
    }

    /// Parses one field value.
    public init(_ value: String?) {
        if let value { parse(value) }
    }

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

    /// `max-age`.
    public var maxAge: Int? { seconds("max-age") }
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
    /// `private` (allowed: Recall is a private cache).
    public var isPrivate: Bool { contains("private") }
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

    /// Parses delta-seconds: digits only; larger values saturate at 2^31.
    static func deltaSeconds(_ value: String?) -> Int? {
        guard let value, !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        guard value.utf8.count <= 10, let number = Int(value) else { return maximumDelta }
        return min(number, maximumDelta)
    }

    private static func fieldNames(_ value: String?) -> [String] {
        guard let value else { return [] }
        return value.split(separator: ",").map { $0.trimmingOWS.lowercased() }.filter { !$0.isEmpty }
    }

    private mutating func parse(_ text: String) {
        var chars = Substring(text)
        while !chars.isEmpty {
            chars = chars.drop { $0 == " " || $0 == "\t" || $0 == "," }
            guard !chars.isEmpty else { break }
            let name = chars.prefix { $0 != "=" && $0 != "," }
            chars = chars.dropFirst(name.count)
            var value: String?
            if chars.first == "=" {
                chars = chars.dropFirst()
                chars = chars.drop { $0 == " " || $0 == "\t" }
                if chars.first == "\"" {
                    chars = chars.dropFirst()
                    var unquoted = ""
                    var escaped = false
                    while let character = chars.first {
                        chars = chars.dropFirst()
                        if escaped { unquoted.append(character); escaped = false; continue }
                        if character == "\\" { escaped = true; continue }
                        if character == "\"" { break }
                        unquoted.append(character)
                    }
                    value = unquoted
                    chars = chars.drop { $0 != "," }
                } else {
                    let raw = chars.prefix { $0 != "," }
                    chars = chars.dropFirst(raw.count)
                    value = raw.trimmingOWS
                }
            }
            let trimmed = name.trimmingOWS.lowercased()
            if !trimmed.isEmpty { directives.append((trimmed, value)) }
        }
    }

    /// Compares directive lists.
    public static func == (lhs: CacheControl, rhs: CacheControl) -> Bool {
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
