import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
@testable import Recall
import RecallTesting
import Testing

@Suite("RequestCoalescer: one leader per key, followers wait for it", .timeLimit(.minutes(1)))
struct RequestCoalescerTests {
    /// Starts `count` requests of `key`, which someone leads; checks that they wait, then that
    /// they follow once the lead of `key` finishes.
    private func expectFollowers(_ coalescer: RequestCoalescer, of key: HashedKey, count: Int) async {
        let followers = (0..<count).map { _ in Task { await coalescer.join(key) } }
        while coalescer.waiting < count { await Task.yield() }
        #expect(coalescer.leading == 1)
        coalescer.finish(key)
        for follower in followers { #expect(await follower.value == .follower) }
        #expect(coalescer.waiting == 0)
        #expect(coalescer.leading == 0)
    }

    @Test("the first caller leads; later callers wait until it finishes, then follow")
    func leaderAndFollowers() async {
        let coalescer = RequestCoalescer()
        #expect(await coalescer.join("k") == .leader)
        await expectFollowers(coalescer, of: "k", count: 5)
        #expect(await coalescer.join("k") == .leader)  // a new round
    }

    @Test("keys are independent; finishing a key nobody leads does nothing")
    func independentKeys() async {
        let coalescer = RequestCoalescer()
        #expect(await coalescer.join("a") == .leader)
        #expect(await coalescer.join("b") == .leader)
        coalescer.finish("nobody")
        #expect(coalescer.leading == 2)
    }

    @Test("tryLead never waits: it leads or declines")
    func tryLead() {
        let coalescer = RequestCoalescer()
        #expect(coalescer.tryLead("r"))
        #expect(!coalescer.tryLead("r"))
        coalescer.finish("r")
        #expect(coalescer.tryLead("r"))
    }

    @Test("a lead taken with tryLead has followers too: the first to come makes the flight they wait on")
    func followersOfTryLead() async {
        let coalescer = RequestCoalescer()
        #expect(coalescer.tryLead("k"))
        await expectFollowers(coalescer, of: "k", count: 3)
    }

    @Test("a declined tryLead leaves the lead and the flight its followers wait on")
    func declinedTryLead() async {
        let coalescer = RequestCoalescer()
        #expect(coalescer.tryLead("k"))
        let followers = (0..<2).map { _ in Task { await coalescer.join("k") } }
        while coalescer.waiting < 2 { await Task.yield() }
        #expect(!coalescer.tryLead("k"))
        #expect(coalescer.leading == 1 && coalescer.flightWaiters("k") == 2)
        coalescer.finish("k")
        for follower in followers { #expect(await follower.value == .follower) }
        #expect(coalescer.leading == 0)
    }

    @Test("a hashed coalescing key is the storage key itself when the request adds nothing, else the longer key hashed")
    func hashedCoalescingKey() {
        var request = URLRequest(url: URL(string: "https://example.com/a")!)
        let key = HashedKey("k")
        #expect(RequestCoalescer.key(key, request, hasFields: false, epoch: 0) == key)
        let withEpoch = RequestCoalescer.key(key, request, hasFields: false, epoch: 3)
        #expect(withEpoch == HashedKey(RequestCoalescer.key("k", request, hasFields: false, epoch: 3)) && withEpoch != key)
        request.setValue("fr", forHTTPHeaderField: "Accept-Language")
        #expect(RequestCoalescer.key(key, request, hasFields: true, epoch: 0).text == "k\naccept-language: fr")
    }

    @Test("the coalescing key is the storage key for a request without fields, and names every field of one with some")
    func coalescingKey() {
        var request = URLRequest(url: URL(string: "https://example.com/a")!)
        #expect(RequestCoalescer.key("k", request, hasFields: RequestFacts(request).hasFields) == "k")
        request.setValue("text/plain", forHTTPHeaderField: "Accept")
        request.setValue("fr", forHTTPHeaderField: "Accept-Language")
        #expect(RequestFacts(request).hasFields)
        #expect(RequestCoalescer.key("k", request, hasFields: true) == "k\naccept: text/plain\naccept-language: fr")
    }

    @Test("a cancelled follower stops waiting at once")
    func cancelledFollower() async {
        let coalescer = RequestCoalescer()
        #expect(await coalescer.join("k") == .leader)
        let follower = Task { await coalescer.join("k") }
        while coalescer.waiting < 1 { await Task.yield() }
        follower.cancel()
        #expect(await follower.value == .follower)
        #expect(coalescer.waiting == 0)
        #expect(coalescer.leading == 1)  // the leader still leads
    }

    @Test("waitForAll returns once every lead has finished")
    func waitForAll() async throws {
        let coalescer = RequestCoalescer()
        #expect(coalescer.tryLead("x"))
        let returned = Locked(false)
        let waiter = Task {
            await coalescer.waitForAll()
            returned.withLock { $0 = true }
        }
        try await waitUntil("waitForAll waits on the open lead") { coalescer.flightWaiters("x") == 1 }
        #expect(!returned.withLock { $0 }, "returned while a lead was still open")
        coalescer.finish("x")
        await waiter.value
        #expect(returned.withLock { $0 })
        #expect(coalescer.leading == 0)
    }

    @Test("a lead given up while waitForAll waits on it goes to a follower, never to waitForAll, which waits on for the new leader")
    func abandonWhileWaitingForAll() async throws {
        let coalescer = RequestCoalescer()
        #expect(await coalescer.join("k") == .leader)
        let returned = Locked(false)
        let waiter = Task {
            await coalescer.waitForAll()
            returned.withLock { $0 = true }
        }
        // waitForAll waits first (the longest waiting), then a follower.
        try await waitUntil("waitForAll waits on the lead") { coalescer.flightWaiters("k") == 1 }
        let role = Locked<RequestCoalescer.Role?>(nil)
        let follower = Task {
            let joined = await coalescer.join("k")
            role.withLock { $0 = joined }
        }
        defer { follower.cancel() }  // (a follower left waiting by a failure stops)
        try await waitUntil("the follower waits too") { coalescer.flightWaiters("k") == 2 }
        coalescer.abandon("k")
        // (Handed to waitForAll, the lead would have no leader: the follower would wait for good.)
        try await waitUntil("the follower or waitForAll goes on") { role.withLock { $0 } != nil || returned.withLock { $0 } }
        #expect(role.withLock { $0 } == .leader, "the follower leads in the abandoned leader's place")
        #expect(!returned.withLock { $0 }, "waitForAll returned while the lead was still open")
        #expect(coalescer.leading == 1)
        coalescer.finish("k")
        await waiter.value
        #expect(returned.withLock { $0 })
        #expect(coalescer.leading == 0)
    }

    @Test("waitForAll waits on the leads of every stripe of the table: it returns after the last one finishes")
    func waitForAllStripes() async throws {
        let coalescer = RequestCoalescer()
        let keys = StripedTableTests.keysCoveringEveryStripe()
        try #require(keys.count == 2 * StripedTable<Int>.stripeCount, "keys for every stripe")
        for key in keys { #expect(coalescer.tryLead(key)) }
        #expect(coalescer.leading == keys.count)
        let returned = Locked(false)
        let waiter = Task {
            await coalescer.waitForAll()
            returned.withLock { $0 = true }
        }
        // It gathers every stripe's leads in one pass, then waits on them in turn: finish each
        // lead once it is waited on, until it returns.
        var finished = 0
        while true {
            var awaited: HashedKey?
            try await waitUntil("waitForAll waits on a lead or returns") {
                awaited = keys.first { coalescer.flightWaiters($0) == 1 }
                return awaited != nil || returned.withLock { $0 }
            }
            guard let key = awaited else { break }
            coalescer.finish(key)
            finished += 1
        }
        await waiter.value
        #expect(finished == keys.count, "returned before every lead had finished")
        #expect(coalescer.leading == 0)
    }
}

@Suite("Coalescing: a cancelled leader")
struct CancelledLeaderTests {
    /// Issue #36, point 15: 20 followers of a cancelled leader went to the origin at once.
    @Test("a cancelled leader hands its miss to one follower: the origin sees two requests, not twenty-one")
    func handOff() async throws {
        let origin = MockTransport()
        let calls = Locked(0)
        let answers = Gate()  // holds the answers after the leader's, until every follower has acted
        origin.route("GET", "/slow") { request in
            if calls.withLock({ count -> Int in
                count += 1; return count
            }) == 1 {
                try await untilCancelled()  // the leader's fetch
            }
            await answers.wait()
            return RecallResponse(status: 200, headers: ["Cache-Control": "max-age=600"], body: Data("answer".utf8), url: request.url)
        }
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: origin, hooks: [cache])
        let request = URLRequest(url: URL(string: "https://origin.test/slow")!)
        let leader = Task { try await pipeline.send(request) }
        try await waitUntil("the leader at the origin") { calls.withLock { $0 } == 1 }
        let followers = (0..<20).map { _ in Task { try await pipeline.send(request) } }
        try await waitUntil("20 followers waiting") { cache.statistics.waiting == 20 }
        leader.cancel()
        #expect(await leader.result.isFailure)
        // Either one follower fetches while 19 wait for it, or all 20 went to the origin.
        try await waitUntil("the followers acting") {
            let calls = calls.withLock { $0 }
            return calls == 21 || (calls == 2 && cache.statistics.waiting == 19)
        }
        answers.open()
        for follower in followers { #expect(try await follower.value.bodyText == "answer") }
        #expect(calls.withLock { $0 } == 2)
    }
}

private extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}
