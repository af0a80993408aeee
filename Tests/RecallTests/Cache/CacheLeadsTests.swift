import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
@testable import Recall
import Testing

/// Who fetches for whom, on its own: a fake coordinator, decisions as plain values.
@Suite("CacheLeads: one fetch per miss, in this process and across the fleet", .timeLimit(.minutes(1)))
struct CacheLeadsTests {
    /// A coordinator that grants or refuses claims as told, and records the calls. A claim it
    /// grants says how to read (`then`: by default that the key holds nothing,
    /// ``RecordLookup/absent``); a wait, that the fleet waited (``RecordLookup/patient``).
    final class Coordinator: FetchCoordinator {
        let grants: Locked<[Bool]>
        let then: RecordLookup
        let calls = Locked<[String]>([])
        init(grants: [Bool], then: RecordLookup = .absent) {
            self.grants = Locked(grants)
            self.then = then
        }
        func claim(_ name: String) async -> Bool {
            calls.withLock { $0.append("claim \(name)") }
            return grants.withLock { $0.isEmpty ? false : $0.removeFirst() }
        }
        func claim(_ name: String, storingUnder key: String) async -> FetchClaim {
            await claim(name) ? .claimed(then: then) : .heldElsewhere
        }
        func wait(for name: String) async { calls.withLock { $0.append("wait \(name)") } }
        func wait(for name: String, orStoreOf key: String) async -> RecordLookup {
            calls.withLock { $0.append("wait \(name) or \(key)") }
            return .patient
        }
        func release(_ name: String) async { calls.withLock { $0.append("release \(name)") } }
    }

    static let miss = CacheStrategy.Before.send(URLRequest(url: URL(string: "https://origin.test/a")!), .fetching(stored: nil))
    static let hit = CacheStrategy.Before.bypass  // any decision that is not a send

    /// `share` with counters of the looks and the coalesced waits.
    static func share(
        _ leads: CacheLeads, _ key: String = "k", changed: Bool = false,
        looks: [CacheStrategy.Before], lookups: Locked<[RecordLookup]>? = nil
    ) async throws -> (CacheStrategy.Before, CacheRequestState.Lead?, looked: Int, coalesced: Int) {
        var remaining = looks, looked = 0, coalesced = 0
        let (before, lead) = try await leads.share(
            HashedKey(key), storageKey: "s-" + key, decided: miss, changed: { changed }, marks: false, mark: {}, fetchName: { "fetch-" + key },
            coalesced: { coalesced += 1 }
        ) { _, lookup in
            lookups?.withLock { $0.append(lookup) }
            looked += 1
            return remaining.isEmpty ? miss : remaining.removeFirst()
        }
        return (before, lead, looked, coalesced)
    }

    @Test("the first miss leads without looking again when nothing was stored since its lookup")
    func leads() async throws {
        let leads = CacheLeads(coordinator: nil)
        let (before, lead, looked, coalesced) = try await Self.share(leads, looks: [])
        guard case .send = before else { Issue.record("a leader with nothing stored sends"); return }
        #expect(lead == .flight("k", claim: nil) && looked == 0 && coalesced == 0)
        leads.finish(lead)
        #expect(leads.leadWithoutSuspending("k") != nil, "finished: the key can be led again")
    }

    @Test("a leader that finds something stored since its lookup decides again")
    func leaderLooksAgain() async throws {
        let (before, _, looked, _) = try await Self.share(CacheLeads(coordinator: nil), changed: true, looks: [Self.hit])
        #expect(looked == 1)
        guard case .bypass = before else { Issue.record("decided on the second look"); return }
    }

    @Test("a follower waits for its leader, then looks again and counts as coalesced")
    func follows() async throws {
        let leads = CacheLeads(coordinator: nil)
        let lead = try #require(leads.leadWithoutSuspending("k"))
        let follower = Task { try await Self.share(leads, looks: [Self.hit]) }
        while leads.waiting == 0 { await Task.yield() }
        leads.finish(lead)
        let (_, followerLead, looked, coalesced) = try await follower.value
        #expect(followerLead == nil && looked == 1 && coalesced == 1)
    }

    @Test("with a coordinator: the leader claims the fleet's fetch, looks again as the claim says, and releases the claim when it ends")
    func claims() async throws {
        let coordinator = Coordinator(grants: [true])
        let leads = CacheLeads(coordinator: coordinator)
        let lookups = Locked<[RecordLookup]>([])
        let (_, lead, looked, _) = try await Self.share(leads, looks: [], lookups: lookups)
        #expect(lead == .flight("k", claim: "fetch-k") && looked == 1)
        #expect(lookups.withLock { $0 } == [.absent])
        leads.finish(lead)
        while coordinator.calls.withLock({ $0.count }) < 2 { await Task.yield() }
        #expect(coordinator.calls.withLock { $0 } == ["claim fetch-k", "release fetch-k"])
    }

    @Test("a follower whose leader stored nothing (its answer was not storable) fetches itself: a miss, not coalesced (#40)")
    func followerFetches() async throws {
        let leads = CacheLeads(coordinator: nil)
        let lead = try #require(leads.leadWithoutSuspending("k"))
        let follower = Task { try await Self.share(leads, looks: [Self.miss]) }
        while leads.waiting == 0 { await Task.yield() }
        leads.finish(lead)
        let (before, _, looked, coalesced) = try await follower.value
        guard case .send = before else { Issue.record("still missing: send"); return }
        #expect(looked == 1 && coalesced == 0)
    }

    @Test("with a coordinator that refuses: wait for the other process, look again; still missing, claim and fetch here (a miss, not coalesced)")
    func otherProcessFetches() async throws {
        let coordinator = Coordinator(grants: [false, true])
        let lookups = Locked<[RecordLookup]>([])
        let (before, lead, looked, coalesced) = try await Self.share(
            CacheLeads(coordinator: coordinator), looks: [Self.miss], lookups: lookups)
        guard case .send = before else { Issue.record("still missing: send"); return }
        #expect(lead == .flight("k", claim: "fetch-k") && looked == 2 && coalesced == 0)
        // The look after a refused claim reads as usual; the one after the wait, as the wait said.
        #expect(lookups.withLock { $0 } == [.usual, .patient])
        let answered = Coordinator(grants: [false])
        let (served, _, _, counted) = try await Self.share(CacheLeads(coordinator: answered), looks: [Self.miss, Self.hit])
        guard case .bypass = served else { Issue.record("answered by the other process"); return }
        #expect(counted == 1)
        // Stored already when the claim was refused (its release late or lost): no wait at all.
        let stored = Coordinator(grants: [false])
        let (early, _, _, earlyCounted) = try await Self.share(CacheLeads(coordinator: stored), looks: [Self.hit])
        guard case .bypass = early else { Issue.record("answered from what was stored"); return }
        #expect(earlyCounted == 1 && stored.calls.withLock { $0 } == ["claim fetch-k"])
        #expect(coordinator.calls.withLock { $0 } == ["claim fetch-k", "wait fetch-k or s-k", "claim fetch-k"])
    }

    @Test(
        "a claim won after a wait that says a record may be there (its last holder stored as it released: the look just before missed it) is read again, patiently, before fetching"
    )
    func claimAfterWaitLooksAgain() async throws {
        let coordinator = Coordinator(grants: [false, true], then: .patient)
        let lookups = Locked<[RecordLookup]>([])
        let leads = CacheLeads(coordinator: coordinator)
        let (before, lead, looked, coalesced) = try await Self.share(leads, looks: [Self.miss, Self.miss, Self.hit], lookups: lookups)
        guard case .bypass = before else { Issue.record("answered by what the last holder stored"); return }
        #expect(lead == .flight("k", claim: "fetch-k") && looked == 3 && coalesced == 1)
        #expect(lookups.withLock { $0 } == [.usual, .patient, .patient])
        // Ended as any lead: the claim is released.
        leads.finish(lead)
        while coordinator.calls.withLock({ $0.count }) < 4 { await Task.yield() }
        #expect(coordinator.calls.withLock { $0 } == ["claim fetch-k", "wait fetch-k or s-k", "claim fetch-k", "release fetch-k"])
        // A claim that says nothing is there: no look before the fetch.
        let (sent, _, looks, _) = try await Self.share(CacheLeads(coordinator: Coordinator(grants: [false, true])), looks: [Self.miss, Self.miss])
        guard case .send = sent else { Issue.record("still missing: send"); return }
        #expect(looks == 2)
    }

    @Test("the fleet's leader died: when another waiting process took the claim over, wait for that one instead of fetching too (#40); at most three rounds")
    func takeOver() async throws {
        let coordinator = Coordinator(grants: [false, false, true])
        let (before, lead, looked, coalesced) = try await Self.share(CacheLeads(coordinator: coordinator), looks: [Self.miss, Self.miss, Self.miss])
        guard case .send = before else { Issue.record("still missing: send"); return }
        #expect(lead == .flight("k", claim: "fetch-k") && looked == 3 && coalesced == 0)
        #expect(coordinator.calls.withLock { $0 } == ["claim fetch-k", "wait fetch-k or s-k", "claim fetch-k", "wait fetch-k or s-k", "claim fetch-k"])

        let answered = Coordinator(grants: [false, false])
        let (served, _, _, counted) = try await Self.share(CacheLeads(coordinator: answered), looks: [Self.miss, Self.miss, Self.hit])
        guard case .bypass = served else { Issue.record("the process that took over answered"); return }
        #expect(counted == 1)

        let refusing = Coordinator(grants: [])
        let (last, unclaimed, rounds, _) = try await Self.share(CacheLeads(coordinator: refusing), looks: [])
        guard case .send = last else { Issue.record("fetches at last"); return }
        #expect(unclaimed == .flight("k", claim: nil) && rounds == CacheLeads.maxTakeovers + 1)
        #expect(refusing.calls.withLock { $0.filter { $0.hasPrefix("wait") }.count } == CacheLeads.maxTakeovers)
    }

    @Test("a refresh is led once at a time per key")
    func refreshes() {
        let leads = CacheLeads(coordinator: nil)
        #expect(leads.leadRefresh("k") && !leads.leadRefresh("k"))
        leads.finish(.refresh("k"))
        #expect(leads.leadRefresh("k"))
    }
}
