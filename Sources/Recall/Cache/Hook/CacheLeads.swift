import Synchronization

/// Who fetches for whom: concurrent misses of one key share one origin request (the first
/// leads, the others wait and look again, ``RequestCoalescer``); processes sharing a storage
/// share one through a ``FetchCoordinator``; and a stale entry is refreshed in the background
/// once at a time (`stale-while-revalidate`).
final class CacheLeads: Sendable {
    /// Shares misses with the other processes on the same storage, when given.
    let coordinator: (any FetchCoordinator)?
    /// Whether there is a ``coordinator`` (read on every miss: a Bool, not a copy of the
    /// existential to compare with `nil`).
    private let hasCoordinator: Bool
    private let flights = RequestCoalescer()
    private let refreshes = RequestCoalescer()
    /// Origin requests under way that lead no shared miss (``CacheRequestState/Lead/alone``).
    private let alone = Atomic<Int>(0)
    /// How many requests went to the origin and how many leads ended, so far (not counting the
    /// leads a store made behind its answer ends: that answer was given already): a request that
    /// finds it moved since its own went out knows others came (and maybe went) meanwhile.
    /// Counted only by a cache that writes behind (``WriteBehind``), the one reader.
    private let fetchEvents = Atomic<UInt64>(0)
    private let countsFetchEvents: Bool

    /// The most rounds a request waits for other processes' fetches of one key (each as long as
    /// the coordinator lets a claim live) before it fetches without a claim.
    static let maxTakeovers = 3

    /// Leads for a cache that shares misses through `coordinator`, if any; `countsFetchEvents`:
    /// the cache writes behind, and asks ``othersFetching(besides:since:)``.
    init(coordinator: (any FetchCoordinator)?, countsFetchEvents: Bool = false) {
        self.coordinator = coordinator
        self.hasCoordinator = coordinator != nil
        self.countsFetchEvents = countsFetchEvents
    }

    /// Requests waiting for another's miss now.
    var waiting: Int { flights.waiting }

    /// Waits until every background refresh started so far has finished.
    func waitForRefreshes() async {
        await refreshes.waitForAll()
    }

    /// Leads the miss of `flightKey` without suspending, when nobody leads it yet and no other
    /// process is to be asked: `nil` when it must ``share(_:decided:changed:fetchName:coalesced:look:)``.
    func leadWithoutSuspending(_ flightKey: HashedKey) -> CacheRequestState.Lead? {
        guard !hasCoordinator, flights.tryLead(flightKey) else { return nil }
        return .flight(flightKey, claim: nil)
    }

    /// The lead of an origin request that shares its miss with nobody: counted among the
    /// fetches under way until ``finish(_:)``.
    func fetchAlone() -> CacheRequestState.Lead {
        alone.add(1, ordering: .relaxed)
        return .alone
    }

    /// Notes that a request goes to the origin; the count of such events with it, for
    /// ``othersFetching(besides:since:)`` (`nil` in a cache that does not count them).
    func fetchBegins() -> UInt64? {
        countsFetchEvents ? fetchEvents.add(1, ordering: .relaxed).newValue : nil
    }

    /// Whether origin requests other than the one of `lead` are under way now, shared or not, or
    /// others went to the origin or ended their leads since `events` (``fetchBegins()``'s count
    /// when the asking request went out: others came and went while it fetched; `nil`, not
    /// known: yes): the cores are likely busy (a hint, read without a lock).
    func othersFetching(besides lead: CacheRequestState.Lead?, since events: UInt64?) -> Bool {
        let own =
            switch lead {
            case .flight, .alone: 1
            case .refresh, nil: 0
            }
        guard let events, flights.leading + alone.load(ordering: .relaxed) <= own else { return true }
        return fetchEvents.load(ordering: .relaxed) != events
    }

    /// Takes the background refresh of `key`, unless one is under way.
    func leadRefresh(_ key: String) -> Bool {
        refreshes.tryLead(HashedKey(key))
    }

    /// Shares the miss of `flightKey`, which the strategy `decided` on: the first request leads
    /// (looking again when `changed()` says something was stored since its lookup) and claims
    /// the fetch from the ``FetchCoordinator`` under `fetchName()`, when there is one; the others
    /// wait for their leader — this process's, or another's (until its claim ends or it stores
    /// under `storageKey`) — then look again (`coalesced()`
    /// counts it when the look answers it; one that must fetch after all is a miss). `look(later, lookup)`
    /// reads the record afresh, as the coordinator's claim or wait said (``RecordLookup``), and
    /// decides again (`later`: at the time now, after a wait). `mark`, when `marks`, reads the storage's removal mark for the request
    /// that is to send (the leader, before it claims, or a follower that must fetch itself): the
    /// fleet's name of the fetch carries it. Returns the decision to act on and the lead taken, if any.
    func share(
        _ flightKey: HashedKey, storageKey: String, decided: CacheStrategy.Before, changed: () -> Bool,
        marks: Bool, mark: () async -> Void, fetchName: () -> String,
        coalesced: () -> Void,
        look: (_ later: Bool, _ lookup: RecordLookup) async -> CacheStrategy.Before
    ) async throws -> (CacheStrategy.Before, CacheRequestState.Lead?) {
        switch await flights.join(flightKey) {
        case .leader:
            var lead = CacheRequestState.Lead.flight(flightKey, claim: nil)
            // Another leader may have stored the entry between our lookup and our lead.
            var before = changed() ? await look(false, .usual) : decided
            if marks, Self.sends(before) { await mark() }
            guard case .send = before, let coordinator else { return (before, lead) }
            let name = fetchName()
            if case .claimed(let then) = await coordinator.claim(name, storingUnder: storageKey) {
                lead = .flight(flightKey, claim: name)
                // Another process may have stored it between our lookup and our claim.
                before = await look(false, then)
            } else {
                // Another process fetches it: look again (it may have stored its answer already,
                // its release late or lost), else wait for its answer and look again. Still
                // missing (it failed, or its claim lapsed): claim it — and when another waiting
                // process took the claim over first, wait for that one instead, so one process,
                // not all, fetches after a leader died. After `maxTakeovers` rounds, fetch here.
                before = await look(true, .usual)
                for _ in 0..<Self.maxTakeovers where Self.sends(before) {
                    before = await look(true, await coordinator.wait(for: name, orStoreOf: storageKey))
                    if Self.sends(before), case .claimed(let then) = await coordinator.claim(name, storingUnder: storageKey) {
                        lead = .flight(flightKey, claim: name)
                        // (Its last holder may have stored since our look: the claim says so.)
                        if then == .patient { before = await look(true, then) }
                        break
                    }
                }
                if !Self.sends(before) { coalesced() }
            }
            return (before, lead)
        case .follower:
            try Task.checkCancellation()
            let before = await look(true, .usual)
            // A follower that must fetch itself after all (its leader failed) is a miss, not coalesced.
            if !Self.sends(before) { coalesced() } else if marks { await mark() }
            return (before, nil)
        }
    }

    /// Whether `before` sends the request to the origin (a request that waited and must fetch
    /// after all).
    private static func sends(_ before: CacheStrategy.Before) -> Bool {
        if case .send = before { return true }
        return false
    }

    /// Ends `lead`: wakes the requests waiting for its miss (and releases its claim on the
    /// fleet's fetch), or lets its key be refreshed again. `behind`: ended by the store made
    /// behind its answer, which is not counted among the fetch events (a lone miss after it,
    /// one request after another, may still answer first).
    func finish(_ lead: CacheRequestState.Lead?, behind: Bool = false) {
        switch lead {
        case .flight(let flightKey, let claim):
            flights.finish(flightKey)
            if countsFetchEvents, !behind { fetchEvents.add(1, ordering: .relaxed) }
            if let claim, let coordinator { TaskCensus.task { await coordinator.release(claim) } }
        case .refresh(let key): refreshes.finish(HashedKey(key))
        case .alone:
            alone.subtract(1, ordering: .relaxed)
            if countsFetchEvents, !behind { fetchEvents.add(1, ordering: .relaxed) }
        case nil: break
        }
    }

    /// Gives up `lead` without an answer: one request waiting for its miss leads in its place
    /// (``RequestCoalescer/abandon(_:)``). A lead with a claim on the fleet's fetch ends as
    /// usual: the claim must be released before another request of this process could claim the
    /// same name, and a release cannot be awaited here.
    func abandon(_ lead: CacheRequestState.Lead?) {
        guard case .flight(let flightKey, nil) = lead else { return finish(lead) }
        flights.abandon(flightKey)
    }
}
