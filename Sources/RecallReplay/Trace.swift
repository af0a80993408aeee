/// A request trace for hit-ratio replays: which object each request asked for, and how large
/// each object is. Objects are numbered from 0; ``keys`` names them when the trace came from
/// real traffic.
public struct Trace: Sendable {
    /// A name for tables and charts.
    public var name: String
    /// The object each request asked for, in order.
    public var requests: [Int32]
    /// The size of each object, in bytes, indexed by object number.
    public var sizes: [Int]
    /// What each object is (a URL or a request target), when known; empty for synthetic traces.
    public var keys: [String]

    /// Creates a trace.
    public init(name: String, requests: [Int32], sizes: [Int], keys: [String] = []) {
        self.name = name
        self.requests = requests
        self.sizes = sizes
        self.keys = keys
    }

    /// The number of distinct objects requested.
    public var objectCount: Int { workingSet.objects }

    /// The bytes of every distinct object requested: what a cache holding everything would hold.
    public var workingSetBytes: Int { workingSet.bytes }

    /// The distinct objects requested and their bytes, in one pass (a flag per object, no hashing).
    public var workingSet: (objects: Int, bytes: Int) {
        var seen = [Bool](repeating: false, count: sizes.count)
        var objects = 0, bytes = 0
        for id in requests where !seen[Int(id)] {
            seen[Int(id)] = true
            objects += 1
            bytes += sizes[Int(id)]
        }
        return (objects, bytes)
    }
}
