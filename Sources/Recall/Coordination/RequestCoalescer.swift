import Foundation
import Synchronization
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
/// Lets concurrent requests for one key share one origin request: the first to ``join(_:)``
/// leads (it goes to the origin), the others wait until the leader calls ``finish(_:)`` and then
/// read what it stored. Also used for background refreshes, where a second refresh of a key
/// simply does not start (``tryLead(_:)``).
final class RequestCoalescer: Sendable {
    /// What ``join(_:)`` made of the caller.
    enum Role: Equatable {
        /// Go to the origin, then call ``RequestCoalescer/finish(_:)``.
        case leader
        /// Another request led; it has finished (or the waiting task was cancelled). (A request
        /// that waited is ``leader`` when the leader gave up and handed it the lead.)
        case follower
    }

    /// A key somebody leads, and the flight the others wait on, made when the first of them
    /// comes: most misses have nobody to wait for them, and pay for no flight.
    private struct Lead {
        var flight: InFlight?
    }

    /// Keyed with the hash worked out once, outside the lock (a miss's key comes hashed from
    /// its ``CacheLocator/Location``): its stripe's lock is held for a table probe, not for hashing a URL.
    /// In stripes (``StripedTable``): concurrent misses of different keys rarely share a lock.
    private let flights = StripedTable<Lead>()
    /// How many keys are led: kept beside the table, so that it reads without the lock.
    private let ledCount = Atomic(0)
    private let waitingCount = Locked(0)

    /// The key requests coalesce on: the storage key and every header field of the request, so
    /// a response that varies on any of them is never handed to a request it was not made for.
    /// `hasFields`: whether the request has any (``RequestFacts/hasFields``), so that a request
    /// with none is not read again. `epoch`: the key's removal count when the request started
    /// (``InvalidationEpochs``), so that a request never waits for a fetch begun before the
    /// latest invalidation of its key. `mark`: the storage's removal counts
    /// (``RemovalMark``), for the fleet's name of the fetch.
    static func key(_ key: String, _ request: URLRequest, hasFields: Bool, epoch: UInt64 = 0, mark: RemovalMark? = nil) -> String {
        var result = epoch == 0 ? key : key + "\n\u{0}epoch \(epoch)"
        if let mark { result += "\n\u{0}removals \(mark.stripe):\(mark.stripeRemovals)" }
        guard hasFields, let fields = request.allHTTPHeaderFields, !fields.isEmpty else { return result }
        for (name, value) in fields.sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            result += "\n" + name.lowercased() + ": " + value
        }
        return result
    }

    /// The same key, for `key` with its hash: `key` itself when the request adds nothing to it
    /// (no epoch, no header fields), so that its hash is not worked out again.
    static func key(_ key: HashedKey, _ request: URLRequest, hasFields: Bool, epoch: UInt64) -> HashedKey {
        let text = Self.key(key.text, request, hasFields: hasFields, epoch: epoch)
        return text == key.text ? key : HashedKey(text)
    }

    /// Leads `key` when nobody does, else waits for the leader to finish.
    func join(_ key: HashedKey) async -> Role {
        let flight = flights.withLock(key) { flights -> InFlight? in
            guard let lead = flights[key] else {
                flights[key] = Lead()
                ledCount.add(1, ordering: .relaxed)
                return nil
            }
            if let flight = lead.flight { return flight }
            let flight = InFlight()
            flights[key]?.flight = flight
            return flight
        }
        guard let flight else { return .leader }
        waitingCount.withLock { $0 += 1 }
        let leads = await flight.wait()
        waitingCount.withLock { $0 -= 1 }
        return leads ? .leader : .follower
    }

    /// Leads `key` when nobody does; `false` (and no waiting) when someone already does.
    func tryLead(_ key: HashedKey) -> Bool {
        flights.withLock(key) { flights in
            // One probe when nobody leads (the usual case); put back what was there otherwise.
            if let led = flights.updateValue(Lead(), forKey: key) {
                flights[key] = led
                return false
            }
            ledCount.add(1, ordering: .relaxed)
            return true
        }
    }

    /// Gives up the lead of `key` without an answer (its leader was cancelled): one waiting
    /// request leads in its place, the others go on waiting for it; with nobody waiting, ends
    /// the lead like ``finish(_:)``.
    func abandon(_ key: HashedKey) {
        let flight = flights.withLock(key) { $0[key]?.flight }
        if let flight, flight.handOff() { return }
        finish(key)
    }

    /// Ends the lead of `key`, waking everyone waiting for it. Finishing a key nobody leads does nothing.
    func finish(_ key: HashedKey) {
        let ended = flights.withLock(key) { flights -> Lead? in
            guard let lead = flights.removeValue(forKey: key) else { return nil }
            ledCount.subtract(1, ordering: .relaxed)
            return lead
        }
        ended?.flight?.finish()
    }

    /// Waits until every lead started before this call has finished (one started during it may
    /// or may not be waited for: the stripes are read one after another, not at one moment).
    func waitForAll() async {
        var led: [InFlight] = []
        flights.forEachStripe { flights in
            for index in flights.values.indices where flights.values[index].flight == nil { flights.values[index].flight = InFlight() }
            led += flights.values.compactMap(\.flight)
        }
        for flight in led { await flight.waitUntilFinished() }  // (never handed a lead it would not take)
    }

    /// Requests waiting for a leader right now.
    var waiting: Int { waitingCount.withLock { $0 } }

    /// The requests waiting now on the lead of `key` (its followers, and ``waitForAll()``);
    /// 0 when nobody leads it or nobody waits.
    func flightWaiters(_ key: HashedKey) -> Int {
        flights.withLock(key) { $0[key]?.flight }?.waiters ?? 0
    }

    /// Keys led right now (read without the lock: exact once the leads have settled, a hint
    /// while they change on other threads).
    var leading: Int { ledCount.load(ordering: .relaxed) }
}
