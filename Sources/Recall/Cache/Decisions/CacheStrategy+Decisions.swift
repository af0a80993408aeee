import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The values ``CacheStrategy`` decides with: what a request sent to the origin is to the cache
/// (``Mode``), what to do before the network (``Before``), the answer and what the cache knows of
/// its request (``Exchange``), what to do with it (``After``) or with a failure (``Failure``).
extension CacheStrategy {
    /// What a request sent to the origin is to the cache: decided before it goes, read when the
    /// answer (or the error) comes back.
    /// (Its cases with payloads are `indirect`: a decision carrying a mode stays small to copy.)
    enum Mode: Sendable, Equatable {
        /// A method not known to be safe; see ``Route/invalidate``.
        case invalidating
        /// The caller's own conditional request; see ``Route/callerConditional``.
        case callerConditional
        /// An unconditional request whose answer is stored when it may be. `stored`: the
        /// response the lookup found and could not use as it is — served when the origin fails
        /// where the rules allow, removed when the new answer cannot be stored.
        indirect case fetching(stored: CacheEntry?)
        /// A conditional request for `stored` (`nil` when only other variants were offered) and
        /// for `alternates`: this partition's other variants whose entity tags went in
        /// `If-None-Match` because none matched the request's `Vary` fields (RFC 9111 §4.3.1).
        indirect case validating(stored: CacheEntry?, alternates: [CacheEntry])
        /// Sent again without validators after a 304 that matched nothing stored (at most once).
        case refetching
        /// A request for the caller's `range`, sent as it is or for the bytes `stored` lacks, with
        /// `If-Range` naming `stored`'s strong entity tag when there is one: `stored` is a full
        /// response the answer may freshen, or the pieces (a `206` entry) it may complete.
        indirect case ranging(ByteRange, stored: CacheEntry?)
        /// A plain `GET` sent for the bytes the stored pieces `stored` (a `206` entry with a strong
        /// entity tag) lack, with `If-Range` naming the tag: a `206` that makes them whole answers
        /// the caller with the whole representation (RFC 9111 §3.4).
        indirect case completing(stored: CacheEntry)

        /// The stored response the request may fall back on (none for a range: a stale full
        /// response is not cut to size on failure).
        var stored: CacheEntry? {
            switch self {
            case .fetching(let stored), .validating(let stored, _): stored
            case .invalidating, .callerConditional, .refetching, .ranging, .completing: nil
            }
        }

        /// Whether the request validates stored responses.
        var isValidating: Bool {
            if case .validating = self { return true }
            return false
        }
    }

    /// What to do with a looked-up request before the network.
    enum Before: Sendable, Equatable {
        /// Answer with `response`, made from a stored response: fresh when `stale` is `nil`,
        /// else stale for that reason.
        case serve(RecallResponse, stale: StaleReason?)
        /// Answer with the stale `response` now, and send `refresh` in the background in `mode`
        /// (`stale-while-revalidate`).
        case serveAndRefresh(RecallResponse, refresh: URLRequest, mode: Mode)
        /// Send `request` to the origin, in `mode`.
        case send(URLRequest, Mode)
        /// Pass the request on untouched, nothing to remember.
        case bypass
        /// Answer with this 504: `only-if-cached` (or `.returnCacheDataDontLoad`) with nothing
        /// usable stored.
        case gatewayTimeout(RecallResponse)
    }

    /// One answer from the origin, with what the cache knows about the request it answers.
    struct Exchange: Sendable {
        /// The request as the caller made it (the response served from cache is made for it).
        var request: URLRequest
        /// The request that went out (with what a retrier or an inner hook added).
        var sent: URLRequest
        /// `sent` with the URL that answered (after redirects).
        var answered: URLRequest
        /// Whether the answer is for another storage key than the one looked up (a redirect, or
        /// an inner hook that rewrote the URL): then nothing stored for the lookup is merged or removed.
        var redirected = false
        /// The partition of `answered`.
        var partition = ""
        /// Credential fields in scope for the request (see ``HTTPCache/credentialFieldsInScope``).
        var inScope: Set<String> = []
        /// The method of the caller's request.
        var method: RequestMethod
        /// When the request was sent and when the answer came.
        var requestTime: Date
        var now: Date
        /// The freshness lifetime the request asks for answers that give none
        /// (``HTTPCache/RequestLifetime``), in seconds.
        var requestLifetime: Double?
    }

    /// What to do with an answer from the origin.
    enum After: Sendable, Equatable {
        /// Return the answer as it is.
        case pass
        /// Store `entry` (made from the answer) for the URL that answered; return the answer.
        case store(CacheEntry)
        /// Store `entry` for the URL that answered; answer with `response` (the caller's range,
        /// made from what the answer completed).
        case storeAndAnswer(CacheEntry, RecallResponse)
        /// A 304 confirmed a stored response: store `entry` (it merged with the 304) and answer
        /// with `answer`, made from it (`.revalidated`).
        case revalidated(CacheEntry, answer: RecallResponse)
        /// Keep the stored response and answer with `answer`, made from it stale, for `reason`.
        case serveStale(RecallResponse, StaleReason)
        /// The stored responses of the URL are outdated: remove them; return the answer.
        case remove
        /// This one stored response (of one partition and `Vary` values) is outdated: remove it,
        /// keep the URL's others; return the answer.
        case discard(CacheEntry)
        /// A 304 or a `HEAD` answer confirmed `outdated` but brought it directives that forbid a
        /// shared cache to keep it (`private`; an answer to an authenticated request without
        /// `public`, `must-revalidate` or `s-maxage`): remove it, keep the URL's others; answer
        /// with `answer`, made from it merged with the answer.
        case discardAndAnswer(CacheEntry, answer: RecallResponse)
        /// An unsafe method succeeded: remove the stored responses of `urls`; `store`, when not
        /// `nil`, is the answer to a `POST` stored for a later `GET` (RFC 9110 §9.3.3).
        case invalidate([URL], store: CacheEntry?)
        /// A 304 that matched nothing stored: remove the URL's stored responses when
        /// `removing`, and send `request` again without validators; its answer is stored.
        case refetch(URLRequest, removing: Bool)
        /// The caller's conditional request got a 304: freshen the stored response it matches.
        case freshen
    }

    /// What to do when a request sent in `mode` failed with `error` (after any retries).
    enum Failure: Sendable, Equatable {
        /// Let the error through.
        case fail
        /// Answer with `answer`, made from the stored response, stale, for `reason`.
        case serveStale(RecallResponse, StaleReason)
        /// Answer with this 504: the stored response must be revalidated and the origin cannot
        /// be reached.
        case gatewayTimeout(RecallResponse)
    }
}
