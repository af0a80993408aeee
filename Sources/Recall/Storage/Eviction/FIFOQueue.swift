/// A first-in-first-out queue of keys with lazy deletion: entries carry a generation, and
/// entries whose generation is no longer current are skipped when popped.
///
/// A popped entry lets go of its key at once, so a queue never keeps the memory of keys it has
/// handed out (an evicted record's key is freed with the record).
struct FIFOQueue<Key> {
    private var items: [(key: Key?, generation: UInt64)] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    /// How many entries are queued, current or not.
    var count: Int { items.count - head }

    mutating func push(_ key: Key, generation: UInt64) {
        items.append((key, generation))
    }

    mutating func pop() -> (key: Key, generation: UInt64)? {
        guard head < items.count else { return nil }
        // Moved out, not copied: the key's storage is not touched (it is cold by now).
        var taken: Key?
        swap(&taken, &items[head].key)
        guard let key = taken else { return nil }
        let generation = items[head].generation
        head += 1
        if head > 1024, head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return (key, generation)
    }

    /// Drops the entries `isCurrent` rejects, keeping the order of the rest. Entries go stale
    /// when their key is removed or requeued; a queue that is rarely popped (a cache below its
    /// limits) would otherwise keep every stale one.
    mutating func compact(keeping isCurrent: (Key, UInt64) -> Bool) {
        items = items[head...].filter { item in item.key.map { isCurrent($0, item.generation) } ?? false }
        head = 0
    }
}
