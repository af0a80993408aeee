/// Whom an ``HTTPCache`` answers for: one user, or many users who must never see each
/// other's responses. It decides which per-user fields the cache keeps apart and which it
/// keeps at all (docs/caching.md, "Audience").
///
/// | Rule | ``manyUsers`` (the default) | ``oneUser`` |
/// |---|---|---|
/// | `Set-Cookie`, `Set-Cookie2` of a stored response | withheld: never stored, never replayed | stored and returned with the response |
/// | `Cookie` on a request | partitions: another cookie (or none) never shares a response | shares responses: cookies do not partition |
/// | `Authorization`, `Proxy-Authorization`, API-key fields, URL user information | partition | partition (unchanged) |
/// | `Authentication-Info`, `Proxy-Authentication-Info` | withheld | withheld (unchanged) |
/// | `Vary: Cookie` | honoured (a keyed hash of the value) | honoured (a keyed hash of the value) |
///
/// A server answering many users needs ``manyUsers``: a replayed `Set-Cookie` hands one
/// user's session to the next, and a response fetched with one user's cookie may hold that
/// user's data. An app, a command-line tool or a browser-like client speaks for one user,
/// whose own cookies change on nearly every response (session rotation, analytics): there
/// ``oneUser`` keeps the hits cookies cost and returns `Set-Cookie` as the origin sent it, as
/// RFC 9111 §3.1 asks of a cache.
///
/// `Authorization` partitions in both: one user may still hold several identities at once
/// (accounts, tenants, tokens of different scopes), and a response fetched under one must not
/// answer a request made under another, whose token the origin might refuse. It costs a miss
/// only when a token is refreshed, which is rare; a cookie changes far more often.
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
    /// `Authorization` does not partition. What ``manyUsers`` keeps apart stays apart: `Cookie`
    /// and the other credential fields partition, `Set-Cookie` is withheld.
    case shared
}
