/// A storage key with its hash worked out once, for the tables a store touches several times.
///
/// A `[String: V]` hashes the key's text at every call, and when it removes an entry it hashes
/// the text of each neighbour it moves back (Swift's tables close the hole that way): for a
/// table of thousands of URLs those are texts nobody has read for a while, so each is a miss in
/// the processor's cache, and a retain of its buffer. Keyed by this, a table hashes the stored
/// `Int`, and compares texts only when the hashes agree. The hash is the text's own
/// (`String.hashValue`), so ``RecordGenerations`` and ``CacheLocator`` stripe by the same value.
struct HashedKey: Hashable, Sendable {
    /// The key.
    let text: String
    /// `text.hashValue`.
    let hash: Int

    /// The key `text`, hashed now.
    init(_ text: String) {
        self.text = text
        self.hash = text.hashValue
    }

    /// The key `text` whose hash was worked out before: `hash` must be `text.hashValue`.
    init(_ text: String, hash: Int) {
        assert(hash == text.hashValue, "a HashedKey's hash is its text's")
        self.text = text
        self.hash = hash
    }

    static func == (lhs: HashedKey, rhs: HashedKey) -> Bool {
        lhs.hash == rhs.hash && lhs.text == rhs.text
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}
