/// Whom an ``HTTPCache`` answers for: one user; many users who must never see each other's
/// responses; or many users sharing what the origin lets them share (a shared cache). It decides
/// which per-user fields the cache keeps apart, which it keeps at all, and whether RFC 9111's
/// rules for shared caches apply (docs/caching.md, "Audience").
///
/// | Rule | ``oneUser`` | ``manyUsers`` (the default) | ``shared`` |
/// |---|---|---|---|
/// | `private` | stored | stored, in the user's partition | never stored |
/// | `s-maxage`, `proxy-revalidate` | ignored | ignored | applied |
/// | an answer to a request with `Authorization` | partitioned by the token | partitioned by the token | stored only under `public`, `must-revalidate`, `s-maxage`; then serves every request |
/// | `Set-Cookie`, `Set-Cookie2` of a stored response | stored and returned | withheld: never stored, never replayed | stored and returned |
/// | `Cookie` on a request | shares responses: cookies do not partition | partitions | partitions |
/// | `Proxy-Authorization`, API-key fields, URL user information | partition | partition | partition |
/// | `Authentication-Info`, `Proxy-Authentication-Info` | withheld | withheld | withheld |
/// | `Vary: Cookie` | honoured (a keyed hash of the value) | honoured | honoured |
///
/// A server answering many users from origins that do not say what may be shared needs
/// ``manyUsers``: a replayed `Set-Cookie` hands one user's session to the next, and a response
/// fetched with one user's cookie may hold that user's data. In front of origins that do say
/// (`public`, `s-maxage`, `private`), ``shared`` serves one stored response to everyone it may.
/// An app, a command-line tool or a browser-like client speaks for one user, whose own cookies
/// change on nearly every response (session rotation, analytics): there ``oneUser`` keeps the
/// hits cookies cost and returns `Set-Cookie` as the origin sent it, as RFC 9111 §3.1 asks of a
/// cache.
///
/// `Authorization` partitions in a private cache: one user may still hold several identities at
/// once (accounts, tenants, tokens of different scopes), and a response fetched under one must
/// not answer a request made under another, whose token the origin might refuse. It costs a
/// miss only when a token is refreshed, which is rare; a cookie changes far more often.
public enum CacheAudience: Sendable, Hashable {
    /// One user: stored `Set-Cookie` is returned, `Cookie` does not partition.
    case oneUser
    /// Many users (a server, a proxy, a shared process): `Set-Cookie` is withheld, `Cookie`
    /// partitions. The default.
    case manyUsers
    /// A shared cache in RFC 9111's sense (an API gateway, a backend-for-frontend, a fan-out):
    /// one stored response serves every user the origin lets it serve. The shared-cache rules
    /// apply: `s-maxage` over `max-age` and `Expires`; `proxy-revalidate` and `s-maxage` forbid
    /// serving stale as `must-revalidate` does; `private` is never stored (with field names
    /// too); an answer to a request with `Authorization` is stored only under `public`,
    /// `must-revalidate` or `s-maxage`, and then serves every request (§3.5) — so
    /// `Authorization` does not partition. `Set-Cookie` is stored and returned with the stored
    /// response, as RFC 9111 §3.1 asks (the origin marks a response that sets a user's session
    /// `private` or `no-store`; one it lets be shared, it lets set its cookie for everyone).
    /// `Cookie` and the other credential fields still partition, as in ``manyUsers``.
    case shared
}
