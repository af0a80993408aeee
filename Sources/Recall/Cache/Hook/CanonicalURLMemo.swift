import Foundation

/// Remembers what the cache derives from recently seen URLs (the key, whether the URL carries
/// user information): it is a pure function of the URL text,
/// and a cache sees the same URLs again and again (that is what makes hits), so the hit path
/// skips it. The cache remembers only URLs with stored responses (when a lookup finds one), so
/// a stream of new URLs that miss costs no memo writes.
///
/// Bounded by entries and by bytes, and URLs longer than ``maximumURLBytes`` are never kept
/// (a key made from them would be too long to cache anyway, or rare enough not to matter), so
/// hostile or unusual traffic costs at most ``byteLimit`` of memory. Forgets everything when full.
final class CanonicalURLMemo<Value: Sendable>: Sendable {
    /// The most URLs remembered.
    let capacity: Int
    /// The most bytes of URL and key text remembered.
    let byteLimit: Int
    /// URLs longer than this are not remembered.
    let maximumURLBytes: Int

    private struct Table {
        var keys: [String: Value] = [:]
        var bytes = 0
    }

    /// Read by every request, written on the first sight of a URL.
    private let table = ReadWriteLocked(Table())

    /// The default of ``maximumURLBytes``.
    static var defaultMaximumURLBytes: Int { 2048 }

    init(capacity: Int = 4096, byteLimit: Int = 1 << 20, maximumURLBytes: Int = defaultMaximumURLBytes) {
        self.capacity = capacity
        self.byteLimit = byteLimit
        self.maximumURLBytes = maximumURLBytes
    }

    /// The value for `url`: from memory when it was remembered, else made by `make` from the
    /// URL's text (and not remembered: see ``remember(_:for:size:)``).
    func value(for url: URL, make: (String) -> Value?) -> Value? {
        value(forText: url.absoluteString, make: make)
    }

    /// ``value(for:make:)`` for a URL whose text (`absoluteString`) the caller has.
    func value(forText text: String, make: (String) -> Value?) -> Value? {
        guard text.utf8.count <= maximumURLBytes else { return make(text) }
        return table.read({ $0.keys[text] }) ?? make(text)
    }

    /// Remembers `value` for `url`; `size` tells how many bytes of text the value holds.
    func remember(_ value: Value, for url: URL, size: Int) {
        let text = url.absoluteString
        guard text.utf8.count <= maximumURLBytes else { return }
        remember(value, forText: text, size: size)
    }

    private func remember(_ value: Value, forText text: String, size: Int) {
        let cost = text.utf8.count + size + 64  // the strings plus the table slot
        table.write { table in
            guard table.keys[text] == nil else { return }
            if table.keys.count >= capacity || table.bytes + cost > byteLimit {
                table.keys.removeAll(keepingCapacity: true)
                table.bytes = 0
            }
            table.keys[text] = value
            table.bytes += cost
        }
    }

    /// How many URLs and bytes are remembered (for tests).
    var usage: (count: Int, bytes: Int) { table.read { ($0.keys.count, $0.bytes) } }
}
