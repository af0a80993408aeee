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
        var userinfo: Bool
        /// The key's stripe among pending writes (``PendingWrites/stripe(of:)``), worked out once.
        var stripe: Int
        /// The key's stripe in a memory storage's change counts (``RecordGenerations/stripe(of:)``), worked out once.
        var generationStripe: Int
        /// The key's stripe in the cache's removal counts (``InvalidationEpochs``), worked out once.
        var epochStripe: Int
        /// Whether it came from the memo.
        var remembered = true
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
            let hash = namespaced.hashValue
            return Location(key: namespaced, userinfo: CachePartitioner.hasUserinfo(text), stripe: PendingWrites.stripe(of: namespaced),
                            generationStripe: hash & (RecordGenerations.stripeCount - 1),
                            epochStripe: InvalidationEpochs.stripe(ofHash: hash), remembered: false)
        }
    }

    /// Remembers the location of `url`, which has a stored response (one was just stored or
    /// found), so hits of it skip the key. Only such URLs are remembered: a miss of a new URL
    /// pays for no memo entry, which would help only if something were stored.
    func remember(_ location: Location, for url: URL?) {
        guard !location.remembered, let url else { return }
        var remembered = location
        remembered.remembered = true
        memo.remember(remembered, for: url, size: location.key.utf8.count)
    }
}
