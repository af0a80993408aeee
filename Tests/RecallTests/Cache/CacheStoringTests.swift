import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("HTTPCache: what is stored and for how long", .timeLimit(.minutes(1)))
struct CacheStoringTests {
    @Test("a max-age response is served from cache with zero further origin hits, with a correct Age", arguments: StorageKind.allCases)
    func maxAgeHit(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/a", headers: ["Cache-Control": "max-age=60", "ETag": "\"1\""], body: "hello")
        let first = try await h.get("/a")
        #expect(first.source == .network)
        h.now.advance(10)
        let second = try await h.get("/a")
        #expect(second.source == .cache)
        #expect(second.bodyText == "hello")
        #expect(second.headers["Age"] == "10")
        #expect(second.headers["ETag"] == "\"1\"")
        #expect(h.hits("/a") == 1)
        h.now.advance(51)  // age 61 > 60: stale, back to the origin
        #expect(try await h.get("/a").source != .cache)
        #expect(h.hits("/a") == 2)
    }

    @Test("no-store on the response or the request: never stored", arguments: StorageKind.allCases, ["response", "request"])
    func noStore(storage: StorageKind, side: String) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/a", headers: ["Cache-Control": side == "response" ? "max-age=60, no-store" : "max-age=60"])
        let headers = side == "request" ? ["Cache-Control": "no-store"] : [:]
        try await h.get("/a", headers: headers)
        try await h.get("/a", headers: headers)
        await h.cache.flush()  // a miss is decided after its answer (write-behind)
        #expect(h.hits("/a") == 2)
        #expect(h.cache.statistics.stores == 0)
    }

    @Test("private is stored (a private cache); s-maxage is ignored", arguments: StorageKind.allCases)
    func privateAndSMaxAge(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/private", headers: ["Cache-Control": "private, max-age=60"])
        h.origin("/shared", headers: ["Cache-Control": "s-maxage=600"])
        try await h.get("/private")
        #expect(try await h.get("/private").source == .cache)
        try await h.get("/shared")
        try await h.get("/shared")
        #expect(h.hits("/shared") == 2)  // s-maxage gives no freshness to a private cache
    }

    @Test(
        "heuristically cacheable statuses are stored with Last-Modified heuristics; others only with explicit freshness",
        arguments: StorageKind.allCases,
        [
            (200, true), (203, true), (204, true), (300, true), (301, true), (308, true), (404, true), (405, true),
            (410, true), (414, true), (501, true), (302, false), (307, false), (400, false), (403, false), (500, false), (503, false)
        ])
    func heuristicStatuses(storage: StorageKind, row: (Int, Bool)) async throws {
        let (status, cacheable) = row
        let h = CacheHarness(over: storage)
        let modified = HTTPDate.format(h.now.value.addingTimeInterval(-100_000))
        h.origin("/s", status: status, headers: ["Last-Modified": modified])
        try await h.get("/s")
        h.now.advance(60)  // heuristic lifetime: 10 % of 100 000 s = 10 000 s
        let second = try await h.get("/s")
        #expect((second.source == .cache) == cacheable)
    }

    @Test("any final status with explicit freshness is stored", arguments: StorageKind.allCases, [302, 400, 403, 500, 503])
    func explicitFreshnessAnyStatus(storage: StorageKind, status: Int) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/e", status: status, headers: ["Cache-Control": "max-age=60"])
        try await h.get("/e")
        #expect(try await h.get("/e").source == .cache)
    }

    @Test("must-understand: stored despite no-store for a status the cache understands, not for one it does not", arguments: StorageKind.allCases)
    func mustUnderstand(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/u", headers: ["Cache-Control": "max-age=60, no-store, must-understand"])
        h.origin("/odd", status: 299, headers: ["Cache-Control": "max-age=60, no-store, must-understand"])
        try await h.get("/u")
        #expect(try await h.get("/u").source == .cache)
        try await h.get("/odd")
        #expect(try await h.get("/odd").source == .network)
    }

    @Test("Vary: * is never served from cache", arguments: StorageKind.allCases)
    func varyStar(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/v", headers: ["Cache-Control": "max-age=60", "Vary": "*"])
        try await h.get("/v")
        try await h.get("/v")
        #expect(h.hits("/v") == 2)
    }

    @Test("a 206 without a strong ETag, or whose body does not fill its Content-Range, is not stored", arguments: StorageKind.allCases)
    func ranges(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/r", status: 206, headers: ["Cache-Control": "max-age=60", "Content-Range": "bytes 0-1/10"])
        try await h.get("/r", headers: ["Range": "bytes=0-1"])
        try await h.get("/r", headers: ["Range": "bytes=0-1"])
        try await h.get("/r")
        await h.cache.flush()
        #expect(h.hits("/r") == 3)
        #expect(h.cache.statistics.stores == 0)  // a 206 is never stored
    }

    @Test("HEAD is answered from a stored GET, without a body; HEAD responses are not stored", arguments: StorageKind.allCases)
    func head(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/h", headers: ["Cache-Control": "max-age=60"], body: "content")
        h.origin("/h", method: "HEAD", status: 200, headers: ["Cache-Control": "max-age=60"], body: "")
        try await h.pipeline.send(h.request("/h", method: "HEAD"))
        try await h.pipeline.send(h.request("/h", method: "HEAD"))
        #expect(h.mock.requests.filter { $0.httpMethod == "HEAD" }.count == 2)
        try await h.get("/h")
        let head = try await h.pipeline.send(h.request("/h", method: "HEAD"))
        #expect(head.source == .cache)
        #expect(head.data.isEmpty)
    }

    @Test("POST responses are not stored", arguments: StorageKind.allCases)
    func postNotStored(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/p", method: "POST", status: 200, headers: ["Cache-Control": "max-age=60"], body: "x")
        try await h.pipeline.send(h.request("/p", method: "POST"))
        try await h.pipeline.send(h.request("/p", method: "POST"))
        #expect(h.hits("/p") == 2)
    }

    @Test("Expires is relative to Date; an invalid Expires means stale", arguments: StorageKind.allCases)
    func expires(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        // The origin's clock is 1000 s behind: Expires − Date is what counts, not Expires − now.
        let originDate = h.now.value.addingTimeInterval(-1000)
        h.origin("/x", headers: ["Date": HTTPDate.format(originDate), "Expires": HTTPDate.format(originDate.addingTimeInterval(100))])
        h.origin("/bad", headers: ["Expires": "not a date"])
        h.origin("/zero", headers: ["Expires": "0"])
        try await h.get("/x")
        // Apparent age is 1000 s (the Date is 1000 s old), lifetime 100 s: stale at once.
        #expect(try await h.get("/x").source != .cache)
        try await h.get("/bad")
        #expect(try await h.get("/bad").source != .cache)
        try await h.get("/zero")
        #expect(try await h.get("/zero").source != .cache)

        let fresh = CacheHarness(over: storage)
        fresh.origin("/x", headers: ["Expires": HTTPDate.format(fresh.now.value.addingTimeInterval(100))])
        try await fresh.get("/x")
        fresh.now.advance(99)
        #expect(try await fresh.get("/x").source == .cache)
        fresh.now.advance(2)
        #expect(try await fresh.get("/x").source != .cache)
    }

    @Test("max-age wins over Expires", arguments: StorageKind.allCases)
    func maxAgeOverExpires(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/m", headers: ["Cache-Control": "max-age=100", "Expires": HTTPDate.format(h.now.value.addingTimeInterval(-10))])
        try await h.get("/m")
        h.now.advance(50)
        #expect(try await h.get("/m").source == .cache)
    }

    @Test("an Age header from upstream counts toward the age", arguments: StorageKind.allCases)
    func upstreamAge(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/age", headers: ["Cache-Control": "max-age=60", "Age": "50"])
        try await h.get("/age")
        h.now.advance(5)
        let hit = try await h.get("/age")
        #expect(hit.source == .cache)
        #expect(hit.headers["Age"] == "55")
        h.now.advance(6)
        #expect(try await h.get("/age").source != .cache)
    }

    @Test("the response delay counts: a response that took 30 s to arrive is 30 s old", arguments: StorageKind.allCases)
    func responseDelay(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        let now = h.now
        let sentAt = now.value
        h.mock.route("GET", "/slow") { request in
            now.advance(30)
            return RecallResponse(status: 200, headers: ["Cache-Control": "max-age=40", "Date": HTTPDate.format(sentAt)], url: request.url)
        }
        try await h.get("/slow")
        let hit = try await h.get("/slow")
        #expect(hit.headers["Age"] == "30")
        h.now.advance(11)
        #expect(try await h.get("/slow").source != .cache)
    }

    @Test("heuristic freshness: 10 % of Date − Last-Modified, capped, only without explicit freshness", arguments: StorageKind.allCases)
    func heuristic(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/h", headers: ["Last-Modified": HTTPDate.format(h.now.value.addingTimeInterval(-1000))])
        try await h.get("/h")
        h.now.advance(99)
        #expect(try await h.get("/h").source == .cache)
        h.now.advance(2)
        #expect(try await h.get("/h").source != .cache)

        let capped = CacheHarness(over: storage)
        capped.origin("/c", headers: ["Last-Modified": HTTPDate.format(capped.now.value.addingTimeInterval(-100 * 86_400))])
        try await capped.get("/c")
        capped.now.advance(86_401)  // 10 % would be 10 days; the cap is one day
        #expect(try await capped.get("/c").source != .cache)

        let explicit = CacheHarness(over: storage)
        explicit.origin("/e", headers: ["Cache-Control": "max-age=10", "Last-Modified": HTTPDate.format(explicit.now.value.addingTimeInterval(-100_000))])
        try await explicit.get("/e")
        explicit.now.advance(11)
        #expect(try await explicit.get("/e").source != .cache)
    }

    @Test(
        "invalid or conflicting max-age counts as stale", arguments: StorageKind.allCases, ["max-age=abc", "max-age=-1", "max-age=1.5", "max-age=60, max-age=0"]
    )
    func invalidMaxAge(storage: StorageKind, value: String) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/i", headers: ["Cache-Control": value])
        try await h.get("/i")
        #expect(try await h.get("/i").source != .cache)
    }

    @Test(
        "zeros before a lifetime count for nothing: max-age=00000000000 is stale at once, not fresh for 68 years",
        arguments: StorageKind.allCases)
    func leadingZeros(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin(
            "/z",
            [
                (200, ["Cache-Control": "max-age=00000000000"], "v1"), (200, ["Cache-Control": "max-age=000000000060"], "v2"),
                (200, [:], "v3")
            ])
        #expect(try await h.get("/z").collected().bodyText == "v1")
        await h.cache.flush()
        h.now.advance(1)
        #expect(try await h.get("/z").collected().bodyText == "v2")
        await h.cache.flush()
        h.now.advance(30)
        #expect(try await h.get("/z").source == .cache)
        h.now.advance(31)
        #expect(try await h.get("/z").collected().bodyText == "v3")
    }

    @Test("a request's max-age=00000000000 asks for a validated answer, as max-age=0 does", arguments: StorageKind.allCases)
    func requestLeadingZeros(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/r", [(200, ["Cache-Control": "max-age=600"], "v1"), (200, ["Cache-Control": "max-age=600"], "v2")])
        try await h.get("/r")
        await h.cache.flush()
        let answer = try await h.get("/r", headers: ["Cache-Control": "max-age=00000000000"]).collected()
        #expect(answer.source != .cache)
        #expect(answer.bodyText == "v2")
    }

    @Test("a status of more than three digits is passed on, never stored", arguments: StorageKind.allCases, [1000, 99_999, Int.max])
    func statusBeyondThreeDigits(storage: StorageKind, status: Int) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/s", status: status, headers: ["Cache-Control": "max-age=600"])
        #expect(try await h.get("/s").status == status)
        await h.cache.flush()
        #expect(try await h.get("/s").source == .network)
        #expect(h.hits("/s") == 2 && h.cache.statistics.stores == 0)
        #expect(h.cache.storage.statistics.corruptRemoved == 0, "nothing written that reads back as corrupt")
    }

    @Test("quoted and upper-case directives are understood", arguments: StorageKind.allCases)
    func lenientParsing(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/q", headers: ["Cache-Control": "MAX-AGE=\"60\""])
        try await h.get("/q")
        #expect(try await h.get("/q").source == .cache)
    }
}
