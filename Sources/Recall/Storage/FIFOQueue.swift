/// A first-in-first-out queue of keys with lazy deletion: entries carry a generation, and
/// entries whose generation is no longer current are skipped when popped.
struct FIFOQueue {
    private var items: [(key: String, generation: UInt64)] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    /// How many entries are queued, current or not.
    var count: Int { items.count - head }

    mutating func push(_ key: String, generation: UInt64) {
        items.append((key, generation))
    }

    mutating func pop() -> (key: String, generation: UInt64)? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head > 1024, head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    /// Drops the entries `isCurrent` rejects, keeping the order of the rest. Entries go stale
    /// when their key is removed or requeued; a queue that is rarely popped (a cache below its
    /// limits, the ghost of keys that keep coming back) would otherwise keep every stale one.
    mutating func compact(keeping isCurrent: (String, UInt64) -> Bool) {
        items = items[head...].filter { isCurrent($0.key, $0.generation) }
        head = 0
    }
}
