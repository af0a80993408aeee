import Foundation

/// A freshness lifetime for responses whose origin says nothing about freshness, by URL
/// pattern — Squid's `CachingServiceHook(ttl:)` and requests-cache's `urls_expire_after`.
///
/// ```swift
/// var configuration = CacheConfiguration()
/// configuration.lifetimes = [
///     LifetimeRule("api.example.com/v1/catalog", .seconds(300)),   // that path and below
///     LifetimeRule("*.cdn.example.com", .seconds(3600)),              // any path on those hosts
/// ]
/// ```
///
/// A pattern is `host` or `host/path`, with `*` matching any run of characters; a host pattern
/// matches with or without the URL's port, and a path pattern matches the path and everything
/// below it (as if it ended in `*`). The scheme and the query are not looked at. The first
/// rule that matches gives the lifetime.
///
/// The lifetime is given to a response only when it has no `max-age` or `Expires` (the
/// origin's word wins, even `max-age=0`), only to statuses that are cacheable by default
/// (200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501), and it never makes storable
/// what the rules refuse (`no-store`, an unsafe method, a status that may not be stored);
/// `no-cache` still means "validate before each use", and responses stay partitioned by the
/// request's credentials. It is decided when the response is stored and kept with it (on disk
/// too), so changing the rules affects responses stored afterwards.
public struct LifetimeRule: Sendable, Hashable, CustomStringConvertible {
    /// The URL pattern.
    public let pattern: String
    /// The freshness lifetime given.
    public let lifetime: Duration

    /// A rule giving `lifetime` to responses for URLs that match `pattern`.
    public init(_ pattern: String, _ lifetime: Duration) {
        self.pattern = pattern.lowercased()
        self.lifetime = lifetime
    }

    /// Whether `url` matches the pattern.
    public func matches(_ url: URL) -> Bool {
        guard let host = url.host?.lowercased() else { return false }
        let hostPattern: Substring, pathPattern: Substring?
        if let slash = pattern.firstIndex(of: "/") {
            hostPattern = pattern[..<slash]
            pathPattern = pattern[pattern.index(after: slash)...]
        } else {
            hostPattern = pattern[...]
            pathPattern = nil
        }
        let hostMatches =
            Self.glob(hostPattern.utf8, host.utf8)
            || url.port.map { Self.glob(hostPattern.utf8, "\(host):\($0)".utf8) } == true
        guard hostMatches else { return false }
        guard let pathPattern else { return true }
        let path = url.path.drop { $0 == "/" }
        return Self.glob((pathPattern + "*").utf8, path.utf8)
    }

    /// `host/path → 300 s`.
    public var description: String { "\(pattern) → \(lifetime)" }

    /// Wildcard matching (`*` any run of bytes) without recursion: on a mismatch, go back to the
    /// last `*` and let it take one byte more.
    static func glob<P: Collection<UInt8>, S: Collection<UInt8>>(_ pattern: P, _ subject: S) -> Bool {
        let pattern = Array(pattern), subject = Array(subject)
        var p = 0, s = 0, star = -1, resume = 0
        while s < subject.count {
            if p < pattern.count, pattern[p] == UInt8(ascii: "*") {
                star = p; resume = s; p += 1
            } else if p < pattern.count, pattern[p] == subject[s] {
                p += 1; s += 1
            } else if star >= 0 {
                p = star + 1; resume += 1; s = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.count
    }
}

extension Array where Element == LifetimeRule {
    /// The lifetime of the first rule matching `url`, in seconds.
    func lifetime(for url: URL?) -> Double? {
        guard let url, let rule = first(where: { $0.matches(url) }) else { return nil }
        return rule.lifetime.seconds
    }
}
