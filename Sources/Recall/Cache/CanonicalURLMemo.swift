import Foundation

/// Remembers what the cache derives from recently seen URLs (the key, whether the URL carries
/// user information): it is a pure function of the URL text,
/// and a cache sees the same URLs again and again (that is what makes hits), so the hit path
/// skips it.
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

    init(capacity: Int = 4096, byteLimit: Int = 1 << 20, maximumURLBytes: Int = 2048) {
        self.capacity = capacity
        self.byteLimit = byteLimit
        self.maximumURLBytes = maximumURLBytes
    }

    /// The value for `url`, from memory when seen before, else made by `make` from the URL's
    /// text (and remembered); `size` tells how many bytes of text a value holds.
    func value(for url: URL, size: (Value) -> Int, make: (String) -> Value?) -> Value? {
        let text = url.absoluteString
        let length = text.utf8.count
        guard length <= maximumURLBytes else { return make(text) }
        if let known = table.read({ $0.keys[text] }) { return known }
        guard let key = make(text) else { return nil }
        let cost = length + size(key) + 64 // the strings plus the table slot
        table.write { table in
            if table.keys.count >= capacity || table.bytes + cost > byteLimit {
                table.keys.removeAll(keepingCapacity: true)
                table.bytes = 0
            }
            table.keys[text] = key
            table.bytes += cost
        }
        return key
    }

    /// How many URLs and bytes are remembered (for tests).
    var usage: (count: Int, bytes: Int) { table.read { ($0.keys.count, $0.bytes) } }
}
