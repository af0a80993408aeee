/// A first-in-first-out queue of keys with lazy deletion: entries carry a generation, and
/// entries whose generation is no longer current are skipped when popped.
struct FIFOQueue {
    private var items: [(key: String, generation: UInt64)] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

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
}
