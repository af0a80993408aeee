extension Trace {
    /// Statuses whose responses count as objects in an eviction replay: successful full
    /// responses, and 304s (the object the client already held, with its size from before).
    static let objectStatuses: Set<Int> = [200, 203, 304]

    /// The GET requests of a capture answered 200, 203 or 304, keyed by URL and sized by their
    /// decoded bodies: the object stream a cache's eviction policy sees.
    public static func objects(of entries: [HAREntry], name: String) -> Trace {
        var builder = TraceBuilder()
        for entry in entries where entry.method == "GET" && objectStatuses.contains(entry.status) {
            builder.add(entry.url, size: entry.status == 304 ? nil : entry.bodySize)
        }
        return builder.build(name: name)
    }

    /// The GET requests of an access log answered 200, 203 or 304, keyed by request target and
    /// sized by the bytes logged (a 304 keeps the size seen before).
    public static func objects(of log: AccessLogReader, name: String, requestLimit: Int = 50_000_000) throws -> (trace: Trace, lines: Int) {
        var reader = log
        var builder = TraceBuilder(requestLimit: requestLimit)
        var full = false
        let lines = try reader.forEach { entry in
            guard entry.method == "GET", objectStatuses.contains(entry.status), !full else { return }
            full = !builder.add(entry.target, size: entry.status == 304 ? nil : entry.bytes)
        }
        return (builder.build(name: name), lines)
    }
}
