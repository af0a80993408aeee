/// The settings of an ``HTTPCache``.
public struct CacheConfiguration: Sendable {
    /// How requests become keys (ignored query parameters, header fields in the key).
    public var keyPolicy = CacheKeyPolicy()
    /// A namespace joined to every key, so caches sharing a storage never see each other's entries.
    public var namespace = ""
    /// Whom the cache answers for: many users (the default: `Set-Cookie` withheld, `Cookie`
    /// partitions) or one user (`Set-Cookie` stored and returned, `Cookie` shares responses). See
    /// ``CacheAudience`` for the table of rules and the trade-off.
    public var audience = CacheAudience.manyUsers
    /// The key of the keyed hashes of credentials, held outside the store; `nil` (the default)
    /// uses the storage's own (``CacheStorage/secret``), which a reader of the records can read
    /// too. See ``CacheSecret``.
    public var secret: CacheSecret?
    /// Request fields that carry credentials. Their values partition the cache: a response
    /// fetched with one `Authorization`, `Cookie` or API key is never served to a request with
    /// another (or none). Values are combined into a keyed hash (HMAC-SHA256 under the
    /// storage's ``CacheStorage/secret``) before anything is stored, and when a response
    /// varies on one of these fields its stored `Vary` value is such a hash too.
    ///
    /// The user name and password of a URL always partition the cache the same way, and so
    /// do fields named in ``HTTPCache/credentialFieldsInScope`` (the typed layer names the
    /// field of an `Authorization.header(name:value:)` (RecallServices) there). With
    /// ``audience`` ``CacheAudience/oneUser``, `Cookie` does not partition (its `Vary` values are
    /// still hashed). Empty to share entries across credentials (only for a cache that is never
    /// shared between users).
    public var credentialFields: [String] = CacheConfiguration.defaultCredentialFields
    /// Query parameters whose values are secrets (tokens, signatures, passwords): in the cache
    /// key their values are replaced by a keyed hash, so they never reach storage in clear.
    /// Requests still partition by them (two tokens never share an entry). Names compare
    /// case-insensitively; a trailing `*` matches a prefix.
    public var secretQueryParameters: [String] = CacheConfiguration.defaultSecretQueryParameters
    /// Requests carrying any of these fields bypass the cache (neither served nor stored); an
    /// unsafe one (`POST`, `PUT`, `DELETE`…) still invalidates what it targets (RFC 9111 §4.4).
    public var bypassFields: [String] = []
    /// The share of (Date − Last-Modified) used as a heuristic freshness lifetime when a
    /// response gives none (RFC 9111 §4.2.2 suggests 10 %).
    public var heuristicFraction = 0.1
    /// The longest heuristic freshness lifetime, in seconds (one day by default).
    public var heuristicCap: Double = 86_400
    /// The most responses kept per URL, across `Vary` variants and credential partitions; the
    /// oldest goes first. At most 64.
    public var maxVariants = 8 {
        didSet { maxVariants = min(max(1, maxVariants), CacheRecordCodec.maxVariants) }
    }
    /// Responses whose header fields exceed this many bytes are not stored.
    public var maxHeaderBytes = 64 << 10
    /// Responses with more header fields than this are not stored. At most 1,000 (the limit
    /// stored records are read back with, so nothing stored ever reads back as corrupt).
    public var maxHeaderFields = CacheRecordCodec.maxFields {
        didSet { maxHeaderFields = min(max(0, maxHeaderFields), CacheRecordCodec.maxFields) }
    }
    /// Concurrent misses on one key share one origin request.
    public var coalescesRequests = true
    /// Off by default: every store is made before its answer. Handing a store to another thread
    /// wakes that thread, and where that costs the caller more than the store it defers (it did
    /// on the machine Recall is measured on: docs/benchmarks.md, "Write-behind off by default"),
    /// writing behind only adds to a miss.
    ///
    /// On, over a ``MemoryStorage``, a `GET` with no usable stored response is answered first and
    /// stored just after, off the caller's path (write-behind): the answer is the origin's
    /// response whatever the cache decides. Only a miss that is alone does so: while other
    /// requests of the cache are being fetched (or their stores landing) the
    /// cores are likely busy, and the store is made before the answer.
    /// Nothing is reordered: a later request for the same
    /// URL, and any later write of it through the cache (an invalidation), waits for the store;
    /// a removal of the URL made around the cache meanwhile (the storage's `removeAll()`,
    /// another cache on the storage) drops it. A store made behind records the miss's
    /// ``CacheEvent/stored`` event (and any eviction) in its context after `send` returned, and
    /// ``CacheStatistics/stores`` counts it then; ``HTTPCache/flush()`` waits for the stores
    /// begun before it. See docs/caching.md, "Write-behind".
    public var writesBehind = false
    /// Over a ``MemoryStorage``, each processor core keeps copies of the small responses it serves
    /// again and again, up to this many bytes per core (256 KiB; a response over a sixteenth of it is
    /// never copied) and one copy per 4 KiB of it (64 to 16,384), and serves their hits from its
    /// copies: cores serving one response then share no memory for it, so hits scale with cores
    /// (docs/benchmarks.md, "Hits over cores"). Raise it when many responses are hot at once (a few MiB for a
    /// thousand small ones): the default copies 64. A copy is served only while the storage holds
    /// exactly what it was copied from: a store, removal or eviction of its key in the storage, by this
    /// cache or any other, retires its copies (and those of the keys that share its stripe, about one
    /// in 64). 0 turns it off. Where the platform cannot tell the current core (only glibc and musl can
    /// so far), there are no copies. See docs/caching.md, "Per-core copies".
    public var copyBytesPerCore = 256 << 10

    /// When the origin cannot be reached at all (connection refused or reset, DNS failure, the
    /// retrier gave up on such failures, a circuit breaker refusing), serve a stored response
    /// even though it is stale — RFC 9111 §4.2.4's "disconnected" cache — unless a directive
    /// forbids it (`must-revalidate`, `no-cache`, the request's `no-cache` or `max-stale`
    /// limit). On by default, as a private client cache that must work offline wants; such
    /// answers have `source == .stale` and count as ``StaleReason/disconnected``. A 5xx is not
    /// "disconnected": only `stale-if-error` serves stale for it.
    public var servesStaleWhenDisconnected = true
    /// The stalest response served while disconnected, in seconds past its freshness (a week).
    public var maxDisconnectedStaleness: Double = 604_800

    /// Freshness lifetimes for responses that give none, by URL pattern (none by default):
    /// see ``LifetimeRule``. A request may carry its own with ``HTTPCache/RequestLifetime``,
    /// which wins.
    public var lifetimes: [LifetimeRule] = []

    /// The defaults: described on each property.
    public init() {}

    /// `Authorization`, `Proxy-Authorization`, `Cookie` and the common API-key fields.
    public static let defaultCredentialFields = [
        "Authorization", "Proxy-Authorization", "Cookie",
        "X-API-Key", "Api-Key", "X-Auth-Token", "X-Access-Token", "X-Amz-Security-Token"
    ]

    /// Common names of query parameters that carry secrets.
    public static let defaultSecretQueryParameters = [
        "access_token", "id_token", "refresh_token", "token", "auth", "api_key", "apikey", "key",
        "client_secret", "secret", "password", "passwd", "pwd", "signature", "sig", "code", "session", "sessionid",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature", "x-goog-credential"
    ]
}
