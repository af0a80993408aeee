/// Builds a ``Trace`` from real traffic one request at a time, numbering each distinct key
/// once. An object's size is the latest size seen for it (a `304` or a log line without a size
/// keeps the size known from before).
public struct TraceBuilder: Sendable {
    private var numbers: [String: Int32] = [:]
    private var keys: [String] = []
    private var sizes: [Int] = []
    private var requests: [Int32] = []

    /// The most requests a trace holds (each costs about 4 bytes, plus 8 during a Belady replay).
    public let requestLimit: Int

    /// Creates an empty builder.
    public init(requestLimit: Int = 50_000_000) {
        self.requestLimit = min(max(1, requestLimit), Int(Int32.max))  // objects are numbered with Int32
    }

    /// The number of requests added so far.
    public var count: Int { requests.count }

    /// Adds a request for `key`; `size` is the body's length when known. Returns false when the
    /// trace is full (``requestLimit``), and adds nothing then.
    @discardableResult
    public mutating func add(_ key: String, size: Int?) -> Bool {
        guard requests.count < requestLimit else { return false }
        let number: Int32
        if let known = numbers[key] {
            number = known
            if let size, size > 0 { sizes[Int(known)] = min(size, AccessLogReader.sizeLimit) }
        } else {
            number = Int32(truncatingIfNeeded: keys.count)
            numbers[key] = number
            keys.append(key)
            sizes.append(min(max(0, size ?? 0), AccessLogReader.sizeLimit))
        }
        requests.append(number)
        return true
    }

    /// The trace of the requests added, under `name`.
    public func build(name: String) -> Trace {
        Trace(name: name, requests: requests, sizes: sizes, keys: keys)
    }
}
