/// One host pattern of a ``URLProtocolRoutes/Route``: `api.example.com` (that host, any port),
/// `127.0.0.1:8080` (that host and port), or `*.example.com` (any subdomain, any port) —
/// what it takes, and whether two patterns take any request in common.
struct HostPattern: Sendable, Hashable {
    /// The host (lowercased), or for a wildcard the suffix a host must end with (`.example.com`).
    let host: String
    /// The port, when the pattern names one.
    let port: Int?
    /// Whether the pattern is `*.suffix`.
    let isWildcard: Bool

    /// The pattern `text` (trimmed, compared without regard to case). An IPv6 address is a host
    /// (`::1`), or in brackets with a port (`[::1]:8080`).
    init(_ text: String) {
        let lowered = text.trimmingOWS.lowercased()
        if lowered.hasPrefix("*.") {
            (host, port, isWildcard) = (String(lowered.dropFirst(1)), nil, true)
            return
        }
        var host = Substring(lowered), port: Int?
        if let colon = host.lastIndex(of: ":"), let number = Int(host[host.index(after: colon)...]),
            host[..<colon].hasSuffix("]") || !host[..<colon].contains(":")
        {
            (host, port) = (host[..<colon], number)
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        (self.host, self.port, isWildcard) = (String(host), port, false)
    }

    /// Whether the pattern takes a request for `host` (lowercased) on `port`.
    func matches(host requested: String, port requestedPort: Int?) -> Bool {
        if isWildcard { return requested.hasSuffix(host) }
        return requested == host && (port == nil || port == requestedPort)
    }

    /// Whether some request would match both patterns: the same host on ports both allow, a
    /// host a wildcard covers, or two wildcards one of which covers the other.
    func overlaps(_ other: HostPattern) -> Bool {
        switch (isWildcard, other.isWildcard) {
        case (true, true): return host.hasSuffix(other.host) || other.host.hasSuffix(host)
        case (true, false): return other.host.hasSuffix(host)
        case (false, true): return host.hasSuffix(other.host)
        case (false, false): return host == other.host && (port == nil || other.port == nil || port == other.port)
        }
    }
}
