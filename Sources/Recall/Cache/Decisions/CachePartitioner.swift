import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Decides who a stored response belongs to, and keeps secrets out of what is stored.
///
/// - The **partition** of a request: the values of the key's header fields
///   (``CacheKeyPolicy/headersInKey``) and one keyed hash of all its credentials (the
///   configured credential fields, fields named in scope, the URL's user and password). A
///   stored response answers only requests of its own partition; all partitions of a URL live
///   in one record, so invalidating the URL removes every one of them.
/// - **Vary values** of credential fields are stored as keyed hashes, never in clear.
/// - **Secret query parameters** have their values replaced by keyed hashes in the key.
///
/// Hashes are HMAC-SHA256 under the storage's secret, so they cannot be checked against
/// guessed values by someone who can read the storage but not the secret.
struct CachePartitioner: Sendable {
    private let secret: [UInt8]
    private let credentialNames: Set<String>
    /// Whether a `Cookie` partitions (a cache for many users, or shared) or shares responses
    /// (one user): see ``CacheAudience``.
    private let cookiePartitions: Bool
    /// Whether `Authorization` partitions: not in a shared cache, where an answer to a request
    /// with it is stored only when the origin lets it serve every request (RFC 9111 §3.5).
    private let authorizationPartitions: Bool
    /// What every partition of a cache for one user (or a shared cache) ends with, so a cache for
    /// many users never serves what one stored in a storage they come to share (its `Set-Cookie`,
    /// its responses fetched with a cookie; a shared cache's answers to authenticated requests),
    /// nor the other way round; empty for many users.
    private let audienceMark: String
    /// The partition of a request without fields, key fields or user information whose
    /// credentials may be added unseen (without them: ``audienceMark``).
    private let plainUnseenPartition: String
    /// The UTF-8 lengths of the credential names: most field names are ruled out by length
    /// alone, without lowercasing them.
    private let credentialLengths: Set<Int>
    private let keyFields: [String]
    private let secretQueryPatterns: [String]
    /// The same patterns as bytes, for the scan every new URL goes through.
    private let secretPatternBytes: [(bytes: [UInt8], isPrefix: Bool)]
    private let memo = Locked<[String: String]>([:])

    init(secret: [UInt8], configuration: CacheConfiguration) {
        self.secret = secret
        credentialNames = Set(configuration.credentialFields.map { $0.lowercased() })
        cookiePartitions = configuration.audience != .oneUser
        authorizationPartitions = configuration.audience != .shared
        audienceMark =
            switch configuration.audience {
            case .oneUser: "\naudience: one user"
            case .shared: "\naudience: shared"
            case .manyUsers: ""
            }
        plainUnseenPartition = Self.unseenPartition + audienceMark
        credentialLengths = Set(credentialNames.map(\.utf8.count))
        keyFields = configuration.keyPolicy.headersInKey
        secretQueryPatterns = configuration.secretQueryParameters.map { $0.lowercased() }
        secretPatternBytes = secretQueryPatterns.map { pattern in
            pattern.hasSuffix("*") ? (Array(pattern.dropLast().utf8), true) : (Array(pattern.utf8), false)
        }
    }

    /// Whether the field `name` (any case) carries a credential.
    func isCredential(_ name: String, inScope: Set<String>) -> Bool {
        guard inScope.isEmpty else {
            let lowered = name.lowercased()
            return credentialNames.contains(lowered) || inScope.contains(lowered)
        }
        return credentialLengths.contains(name.utf8.count) && credentialNames.contains(name.lowercased())
    }

    /// Whether the field `name` (any case) partitions the cache: a credential, but `Cookie` in
    /// a cache for one user and `Authorization` in a shared cache.
    private func partitions(_ name: String, inScope: Set<String>) -> Bool {
        guard isCredential(name, inScope: inScope) else { return false }
        if cookiePartitions, authorizationPartitions { return true }
        let lowered = name.lowercased()
        return (cookiePartitions || lowered != "cookie") && (authorizationPartitions || lowered != "authorization")
    }

    /// The partition of `request` (empty for an anonymous request and no key fields).
    /// `userinfo`: whether the URL has a user name or password (``hasUserinfo(_:)``, which the
    /// cache remembers per URL).
    func partition(for request: URLRequest, userinfo: Bool, inScope: Set<String>) -> String {
        partition(for: request, hasFields: RequestFacts.hasFields(request), userinfo: userinfo, inScope: inScope)
    }

    /// ``partition(for:userinfo:inScope:)`` when whether `request` has any field is known
    /// (``RequestFacts``): a request without fields, key fields or user information reads nothing.
    func partition(for request: URLRequest, hasFields: Bool, userinfo: Bool, inScope: Set<String>) -> String {
        if keyFields.isEmpty, !hasFields, !userinfo { return inScope.contains(Self.unseenCredentials) ? plainUnseenPartition : audienceMark }
        let fields = request.allHTTPHeaderFields ?? [:]
        var partition = ""
        for name in keyFields {
            var value = request.value(forHTTPHeaderField: name).map(CacheKeyPolicy.normalizeFieldValue) ?? ""
            if isCredential(name, inScope: inScope), !value.isEmpty { value = hash(value) }
            partition += "\(name): \(value)\n"
        }
        var credentials: [String] = []
        for (name, value) in fields where partitions(name, inScope: inScope) {
            credentials.append(name.lowercased() + "=" + value)
        }
        if userinfo, let url = request.url {
            credentials.append("userinfo=" + (url.user ?? "") + ":" + (url.password ?? ""))
        }
        if !credentials.isEmpty {
            partition += "credentials: " + hash(credentials.sorted().joined(separator: "\n"))
        }
        if inScope.contains(Self.unseenCredentials) { partition += Self.unseenPartition }
        if !audienceMark.isEmpty { partition += audienceMark }
        return partition
    }

    /// Stands in the credential names in scope when the request may gain credentials the cache
    /// does not see (``HTTPCache/credentialsMayBeAddedBelow``): not a field name (no field name
    /// holds a NUL).
    static let unseenCredentials = "\u{0}unseen"

    /// What such a request's partition ends with.
    static let unseenPartition = "\ncredentials: unseen"

    /// Whether a request with credential names `inScope` may carry credentials the cache does
    /// not see.
    static func hasUnseenCredentials(_ inScope: Set<String>) -> Bool {
        inScope.contains(unseenCredentials)
    }

    /// Whether the absolute URL `text` has a user name or password: an `@` in its authority.
    static func hasUserinfo(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var index = 0, slashes = 0
            while index < bytes.count, slashes < 2 {  // past "scheme://"
                if bytes[index] == UInt8(ascii: "/") { slashes += 1 }
                index += 1
            }
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "@"): return true
                case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): return false
                default: index += 1
                }
            }
            return false
        }
    }

    /// `values` with those of credential fields replaced by keyed hashes.
    func protect(_ values: [HeaderFields.Field], inScope: Set<String>) -> [HeaderFields.Field] {
        values.map { field in
            isCredential(field.name, inScope: inScope) ? HeaderFields.Field(name: field.name, value: hash(field.value)) : field
        }
    }

    /// `canonicalURL` with the values of secret query parameters replaced by keyed hashes.
    func redactingSecrets(in canonicalURL: String) -> String {
        // Nearly every URL has no secret parameter: find that out on the bytes, allocating nothing.
        guard !secretQueryPatterns.isEmpty, mayHaveSecret(canonicalURL), let question = canonicalURL.firstIndex(of: "?") else {
            return canonicalURL
        }
        var changed = false
        let parameters = canonicalURL[canonicalURL.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
            .map { parameter -> Substring in
                guard let equals = parameter.firstIndex(of: "="), isSecret(parameter[..<equals]) else { return parameter }
                changed = true
                return parameter[...equals] + Substring(hash(String(parameter[parameter.index(after: equals)...])))
            }
        guard changed else { return canonicalURL }
        return canonicalURL[...question] + parameters.joined(separator: "&")
    }

    /// Whether a query parameter of `url` may be secret: false only when every name is plain
    /// ASCII, unencoded, and matches no pattern (names with `%` or non-ASCII bytes answer true,
    /// for ``isSecret(_:)`` to decide).
    private func mayHaveSecret(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { bytes in
            guard var start = bytes.firstIndex(of: UInt8(ascii: "?")).map({ $0 + 1 }) else { return false }
            while start < bytes.count {
                var end = start
                var equals: Int?
                while end < bytes.count, bytes[end] != UInt8(ascii: "&") {
                    if equals == nil, bytes[end] == UInt8(ascii: "=") { equals = end }
                    end += 1
                }
                if let equals, nameMayBeSecret(UnsafeBufferPointer(rebasing: bytes[start..<equals])) { return true }
                start = end + 1
            }
            return false
        }
    }

    private func nameMayBeSecret(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        if name.contains(where: { $0 == UInt8(ascii: "%") || $0 >= 0x80 }) { return true }
        return secretPatternBytes.contains { pattern in
            guard pattern.isPrefix ? name.count >= pattern.bytes.count : name.count == pattern.bytes.count else { return false }
            for index in pattern.bytes.indices {
                var byte = name[index]
                if byte >= UInt8(ascii: "A"), byte <= UInt8(ascii: "Z") { byte |= 0x20 }
                guard byte == pattern.bytes[index] else { return false }
            }
            return true
        }
    }

    private func isSecret(_ encodedName: Substring) -> Bool {
        let name = (encodedName.removingPercentEncoding ?? String(encodedName)).lowercased()
        return secretQueryPatterns.contains { pattern in
            pattern.hasSuffix("*") ? name.hasPrefix(pattern.dropLast()) : name == pattern
        }
    }

    /// The name of the fetch of a coalescing key for a ``FetchCoordinator``: `f.` and
    /// HMAC-SHA256(secret, key) in hex, so the key's credentials never leave the process.
    func fetchName(_ coalescingKey: String) -> String {
        "f." + SHA256.hexString(SHA256.hmac(key: secret, coalescingKey.utf8))
    }

    /// `h.` and the first 128 bits of HMAC-SHA256(secret, value) in hex; remembered for the
    /// most recent values (credentials repeat on every request of a session).
    func hash(_ value: String) -> String {
        if let known = memo.withLock({ $0[value] }) { return known }
        let digest = "h." + SHA256.hexString(SHA256.hmac(key: secret, value.utf8).prefix(16))
        guard value.utf8.count <= 4096 else { return digest }
        memo.withLock { memo in
            if memo.count >= 256 { memo.removeAll(keepingCapacity: true) }
            memo[value] = digest
        }
        return digest
    }
}
