/// The keys too long to name in a notification (PostgreSQL's payloads stop at 8,000 bytes) that
/// a process's memory tiers may hold, by digest.
///
/// A replica announces such a key by a digest every replica computes alike (64-bit FNV-1a of
/// its UTF-8, in hex); the others look the digest up here and drop the keys it stands for.
/// Before, any key over 7,000 bytes was announced as "everything", so one stored response for a
/// long URL emptied every replica's memory tier. Digests may collide (someone can make them
/// collide): a digest stands for every remembered key that has it, so a collision only drops a
/// key more, never leaves one stale. The index is bounded: inserting past ``limit`` lets the
/// oldest digest go, and the caller drops its keys from its tiers, so that every long key the
/// tiers may hold is always in the index.
struct LongKeyIndex {
    /// Keys longer than this (UTF-8 bytes) are announced by digest.
    static let longerThan = 7_000
    /// How many digests are remembered.
    static let limit = 4_096
    /// How many keys one digest stands for, at most (colliding keys can be made on purpose).
    static let keysPerDigest = 8

    private var keys: [String: Set<String>] = [:]
    private var order: [String] = []
    private var head = 0

    /// The digest of `key`: 64-bit FNV-1a of its UTF-8 bytes, as 16 hex digits.
    static func digest(of key: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Remembers `key`; returns the keys let go of to make room (drop them from the tiers).
    mutating func insert(_ key: String) -> Set<String> {
        let digest = Self.digest(of: key)
        if let known = keys[digest] {
            guard !known.contains(key) else { return [] }
            guard known.count >= Self.keysPerDigest else {
                keys[digest]?.insert(key)
                return []
            }
            // Too many keys share the digest: let them all go (the tiers drop them) and start over.
            keys[digest] = [key]
            return known
        }
        keys[digest] = [key]
        order.append(digest)
        guard keys.count > Self.limit else { return [] }
        let oldest = order[head]
        head += 1
        if head > 1_024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        return keys.removeValue(forKey: oldest) ?? []
    }

    /// The keys whose digest is `digest` (none when it is not remembered).
    func keys(forDigest digest: String) -> Set<String> {
        keys[digest] ?? []
    }
}
