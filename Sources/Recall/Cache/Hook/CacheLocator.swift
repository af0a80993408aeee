import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Works out where an ``HTTPCache`` stores a request's responses — the storage key (the
/// namespace and the canonical URL, with secret query values hashed) and the stripes the cache
/// files the key under — and remembers it per URL text for URLs that have something stored, so
/// a hit builds no key.
final class CacheLocator: Sendable {
    /// Where a request's responses are stored, and whether its URL carries user information
    /// (a credential of the partition).
    struct Location: Sendable {
        var key: String
        /// `key.hashValue`, worked out once: the tables a miss touches (the coalescer's, the
        /// write locks') take it instead of hashing the key again.
        var hash: Int
        var userinfo: Bool
        /// The key's stripe among pending writes (``PendingWrites/stripe(of:)``), worked out once.
        var stripe: Int
        /// Whether it came from the memo.
        var remembered = true

        /// The key with its hash.
        var hashedKey: HashedKey { HashedKey(key, hash: hash) }
        /// The key's stripe in a memory storage's change counts (``RecordGenerations/stripe(of:)``).
        var generationStripe: Int { RecordGenerations.stripe(ofHash: hash) }
        /// The key's stripe in the cache's removal counts (``InvalidationEpochs``).
        var epochStripe: Int { InvalidationEpochs.stripe(ofHash: hash) }
    }

    private let keyPolicy: CacheKeyPolicy
    private let namespace: String
    private let partitioner: CachePartitioner
    private let memo = CanonicalURLMemo<Location>()

    /// A locator for keys made by `configuration`'s key policy and namespace, with the secret
    /// query values `partitioner` hashes.
    init(configuration: CacheConfiguration, partitioner: CachePartitioner) {
        self.keyPolicy = configuration.keyPolicy
        self.namespace = configuration.namespace
        self.partitioner = partitioner
    }

    /// Where the responses of `request` are stored; `nil` when it cannot be cached.
    func location(of request: URLRequest) -> Location? {
        guard let url = request.url else { return nil }
        return location(ofText: url.absoluteString)
    }

    /// Where the responses of a request for the URL whose text (`absoluteString`) is `text` are
    /// stored, from the memo when it remembers the URL (``remember(_:for:)``).
    func location(ofText text: String) -> Location? {
        memo.value(forText: text) { text in
            guard let canonical = keyPolicy.canonicalURL(text: text) else { return nil }
            let key = partitioner.redactingSecrets(in: canonical)
            guard key.utf8.count <= keyPolicy.maximumLength else { return nil }
            let namespaced = namespace.isEmpty ? key : namespace + "|" + key
            return Location(
                key: namespaced, hash: namespaced.hashValue, userinfo: CachePartitioner.hasUserinfo(text),
                stripe: PendingWrites.stripe(of: namespaced), remembered: false)
        }
    }

    /// Remembers the location of `url`, which has a stored response (a look-up found one), so
    /// later hits of it skip the key. Only such URLs are remembered, at their first hit: a miss
    /// pays for no memo entry (a write under the memo's lock, which every look-up reads), and
    /// the first hit works the key out once more.
    func remember(_ location: Location, for url: URL?) {
        guard !location.remembered, let url else { return }
        var remembered = location
        remembered.remembered = true
        memo.remember(remembered, for: url, size: location.key.utf8.count)
    }

    /// The exchange `response` ends, for `request` sent as `sent` and answered at `date` to a
    /// request in `state`, and where the answer belongs: the URL that answered (`nil` when it
    /// cannot be cached or the answer is not the network's), in the partition of what was sent.
    func exchange(
        _ response: RecallResponse, for request: URLRequest, sent: URLRequest, lifetime: Double?, at date: Date,
        state: CacheRequestState
    ) -> (CacheStrategy.Exchange, Location?) {
        var exchange = CacheStrategy.Exchange(
            request: request, sent: sent, answered: sent, inScope: state.inScope,
            method: state.method, requestTime: state.requestTime, now: date,
            requestLifetime: lifetime)
        guard state.mode != .invalidating, response.source == .network else { return (exchange, nil) }
        var target = sent.url == request.url ? state.location : location(of: sent)
        // The partition is of what was sent, the user information of its URL too: a redirect to a
        // URL without it does not make the answer anonymous.
        let userinfo = target?.userinfo ?? sent.url.map { CachePartitioner.hasUserinfo($0.absoluteString) } ?? false
        if let url = response.url, url != sent.url {
            exchange.answered.url = url
            target = location(of: exchange.answered)
        }
        // Answered for another URL than the one looked up (a redirect, or an inner hook that
        // rewrote the URL): what was stored for the lookup is neither merged nor removed.
        exchange.redirected = target?.key != state.key
        exchange.partition = target == nil ? "" : partitioner.partition(for: sent, userinfo: userinfo, inScope: state.inScope)
        return (exchange, target)
    }

    /// The storage keys of `urls`, requested as `request` was but with `GET` (the targets an
    /// unsafe request invalidates), leaving out those that cannot be cached.
    func keys(of urls: [URL], like request: URLRequest) -> [String] {
        urls.compactMap { url in
            var lookup = CacheStrategy.asGet(request)
            lookup.url = url
            return location(of: lookup)?.key
        }
    }
}
