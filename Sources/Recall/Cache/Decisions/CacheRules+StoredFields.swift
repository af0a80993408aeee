import Foundation

/// Which response fields a cache keeps (RFC 9111 §3.1): never a per-response secret nor a field
/// of one connection.
extension CacheRules {
    /// Response fields never stored nor replayed from the cache: per-response secrets
    /// (`Set-Cookie` and its kin: replaying a session cookie to another caller hands it over)
    /// and the connection-specific fields of RFC 9111 §3.1. A cache for one user
    /// (``CacheAudience/oneUser``) and a shared cache (``CacheAudience/shared``, as RFC 9111 §3.1
    /// asks of any cache: the origin says with `Cache-Control` what may not be shared) store the
    /// ``userFields`` among them.
    package static let unstoredFields: Set<String> = [
        "set-cookie", "set-cookie2", "authentication-info", "proxy-authentication-info",
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "trailer"
    ]

    /// The fields of ``unstoredFields`` that are secret only between users: a cache for one
    /// user, and a shared cache, store and return them (RFC 9111 §3.1 asks every cache to).
    package static let userFields: Set<String> = ["set-cookie", "set-cookie2"]

    /// `headers` without the fields that are never stored: ``unstoredFields`` (but the
    /// ``userFields`` in a cache for one user or a shared one) and the fields named by `Connection`.
    package func storedHeaders(_ headers: HeaderFields) -> HeaderFields {
        // (Most responses have no field to drop, nor a `Connection` field naming others: each name
        // is ruled out by its length, one bit, before anything is lowercased or collected.)
        guard headers.contains(where: { Self.hasUnstoredLength($0.name) }) else { return headers }
        let named = Set(headers.values(for: "Connection").flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS.lowercased() })
        let storesUserFields = configuration.audience != .manyUsers
        func isUnstored(_ lowercased: String) -> Bool {
            Self.unstoredFields.contains(lowercased) && !(storesUserFields && Self.userFields.contains(lowercased))
        }
        func unstored(_ name: String) -> Bool {
            (Self.hasUnstoredLength(name) && isUnstored(name.lowercased()))
                || (!named.isEmpty && named.contains(name.lowercased()))
        }
        guard headers.contains(where: { unstored($0.name) }) else { return headers }
        return HeaderFields(headers.filter { !unstored($0.name) })
    }

    /// A bit for each length of a name in ``unstoredFields`` (`Connection` among them).
    private static let unstoredLengths: UInt64 = unstoredFields.reduce(0) { $0 | 1 << $1.utf8.count }

    /// Whether `name` is as long as a name of ``unstoredFields``.
    private static func hasUnstoredLength(_ name: String) -> Bool {
        let length = name.utf8.count
        return length < 64 && unstoredLengths & 1 << length != 0
    }
}
