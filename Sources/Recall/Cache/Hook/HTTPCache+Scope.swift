import Foundation

/// What a request's task tells the cache about it: credentials in custom fields, credentials a
/// middleware below may add, and a lifetime for an answer the origin gives none.
extension HTTPCache {
    /// Names of request header fields that carry credentials in requests sent from the current
    /// task, in addition to ``CacheConfiguration/credentialFields``: they partition the cache
    /// the same way. The typed layer sets it for the field of an
    /// `Authorization.header(name:value:)` (RecallServices); set it around your own calls when a custom field
    /// carries a credential:
    ///
    /// ```swift
    /// try await HTTPCache.$credentialFieldsInScope.withValue(["X-Tenant-Token"]) {
    ///     try await pipeline.send(request)
    /// }
    /// ```
    @TaskLocal public static var credentialFieldsInScope: Set<String> = []

    /// Whether requests sent from the current task may gain credentials after the cache has
    /// seen them — an `Authorization` header added by a middleware that runs below Recall's
    /// (`RecallMiddleware` followed by an auth middleware in an OpenAPI client's list). The cache
    /// cannot tell such requests' users apart, so it treats each as carrying an unknown
    /// credential: it stores and serves only what a shared cache may for authenticated
    /// requests (after RFC 9111 §3.5: `public` or `must-revalidate`; never `private`,
    /// `s-maxage` or `Vary` on a credential field), in a partition of their own. Put the credentials where the cache sees them instead (an auth hook before
    /// the cache, `RecallMiddleware` after the auth middleware), and every response caches.
    @TaskLocal public static var credentialsMayBeAddedBelow = false

    /// A freshness lifetime for this request's answer when the origin gives none (no `max-age`
    /// or `Expires`); it wins over ``CacheConfiguration/lifetimes`` and follows the same rules
    /// (see ``LifetimeRule``). Endpoints set it from `Endpoint.cacheLifetime` (RecallServices); with a plain
    /// pipeline, set it on the context:
    ///
    /// ```swift
    /// let context = RecallContext(originalRequest: request)
    /// context[HTTPCache.RequestLifetime.self] = .seconds(300)
    /// let response = try await pipeline.send(request, context: context)
    /// ```
    public enum RequestLifetime: ContextKey {
        /// The lifetime.
        public typealias Value = Duration
    }

    /// The names of the credential fields in scope for the current task, lowercased, with
    /// ``CachePartitioner/unseenCredentials`` when credentials may be added below.
    static var inScope: Set<String> {
        let names = credentialFieldsInScope
        var lowered = names.isEmpty ? names : Set(names.map { $0.lowercased() })
        if credentialsMayBeAddedBelow { lowered.insert(CachePartitioner.unseenCredentials) }
        return lowered
    }
}
