/// Least-recently-used eviction in O(1): a doubly linked list threaded through a dictionary.
public struct LRUPolicy: EvictionPolicy {
    private struct Node {
        var previous: String?
        var next: String?
    }

    private var nodes: [String: Node] = [:]
    private var head: String?  // most recent
    private var tail: String?  // least recent

    /// Creates an empty policy.
    public init() {}

    /// The number of keys tracked.
    public var count: Int { nodes.count }

    /// Tracks `key` (or moves it) at the front.
    public mutating func recordInsert(_ key: String, size: Int) {
        if nodes[key] != nil {
            guard head != key else { return }
            unlink(key)
        }
        pushFront(key)
    }

    /// Moves `key` to the front; a key not tracked (removed meanwhile) is ignored.
    public mutating func recordAccess(_ key: String) {
        guard nodes[key] != nil, head != key else { return }
        unlink(key)
        pushFront(key)
    }

    private mutating func pushFront(_ key: String) {
        nodes[key] = Node(previous: nil, next: head)
        if let head { nodes[head]?.previous = key }
        head = key
        if tail == nil { tail = key }
    }

    /// Stops tracking `key`.
    public mutating func recordRemoval(_ key: String) {
        guard nodes[key] != nil else { return }
        unlink(key)
        nodes[key] = nil
    }

    /// The least recently used key.
    public mutating func victim() -> String? { tail }

    private mutating func unlink(_ key: String) {
        guard let node = nodes[key] else { return }
        if let previous = node.previous { nodes[previous]?.next = node.next } else { head = node.next }
        if let next = node.next { nodes[next]?.previous = node.previous } else { tail = node.previous }
        nodes[key]?.previous = nil
        nodes[key]?.next = nil
    }
}
