import Foundation

/// Remembers the canonical form of recently seen URLs: canonicalization is a pure function
/// of the URL text, and a cache sees the same URLs again and again (that is what makes hits),
/// so the hit path skips it. Bounded; forgets everything when full.
final class CanonicalURLMemo: Sendable {
    private let capacity: Int
    private let table = Locked<[String: String]>([:])

    init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// The canonical form of `url` under `policy`, from memory when seen before.
    func canonicalURL(_ url: URL, policy: CacheKeyPolicy) -> String? {
        let text = url.absoluteString
        if let known = table.withLock({ $0[text] }) { return known }
        guard let canonical = policy.canonicalURL(url) else { return nil }
        table.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[text] = canonical
        }
        return canonical
    }
}
