/// The events of one request, in order, the first four kept inline: a miss records its attempt,
/// the miss, its store and, in a full cache, an eviction, and allocates no array for them — an
/// array made and freed for each request, in memory the network's wait left cold, cost a miss
/// more than its events (docs/benchmarks.md, "Where the gap sits, and cold memory cut").
struct RequestEvents {
    private var first: RecallEvent?
    private var second: RecallEvent?
    private var third: RecallEvent?
    private var fourth: RecallEvent?
    /// The events after the fourth.
    private var more: [RecallEvent] = []

    /// Adds `event` after the others.
    mutating func append(_ event: RecallEvent) {
        if first == nil {
            first = event
        } else if second == nil {
            second = event
        } else if third == nil {
            third = event
        } else if fourth == nil {
            fourth = event
        } else {
            more.append(event)
        }
    }

    /// Every event, in order.
    var all: [RecallEvent] {
        guard let first else { return [] }
        var all = [first]
        all.reserveCapacity(4 + more.count)
        for event in [second, third, fourth] {
            guard let event else { return all }
            all.append(event)
        }
        return all + more
    }
}
