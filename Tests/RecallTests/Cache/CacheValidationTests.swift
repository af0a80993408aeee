import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("HTTPCache: validation, Vary, invalidation, coalescing, statistics", .timeLimit(.minutes(1)))
struct CacheValidationTests {
    @Test("ETag: a stale entry is revalidated with If-None-Match; the 304's fields update the entry", arguments: StorageKind.allCases)
    func etagRevalidation(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin(
            "/e",
            [
                (200, ["Cache-Control": "max-age=10", "ETag": "\"e1\"", "X-Version": "1", "Content-Type": "text/plain"], "payload"),
                (304, ["Cache-Control": "max-age=100", "ETag": "\"e1\"", "X-Version": "2", "Content-Length": "0"], "")
            ])
        try await h.get("/e")
        h.now.advance(20)
        let revalidated = try await h.get("/e")
        #expect(revalidated.source == .revalidated)
        #expect(revalidated.status == 200)
        #expect(revalidated.bodyText == "payload")
        #expect(revalidated.headers["X-Version"] == "2")
        #expect(revalidated.headers.values(for: "X-Version") == ["2"])
        #expect(revalidated.headers["Content-Type"] == "text/plain")
        #expect(revalidated.headers["Content-Length"] == nil)
        #expect(h.mock.requests.last?.value(forHTTPHeaderField: "If-None-Match") == "\"e1\"")
        // The 304 made it fresh for 100 s more.
        h.now.advance(90)
        #expect(try await h.get("/e").source == .cache)
        #expect(h.cache.statistics.revalidated == 1)
    }

    @Test("Last-Modified: revalidated with If-Modified-Since", arguments: StorageKind.allCases)
    func lastModifiedRevalidation(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        let modified = HTTPDate.format(h.now.value.addingTimeInterval(-50))
        h.origin("/l", [(200, ["Cache-Control": "max-age=10", "Last-Modified": modified], "text"), (304, [:], "")])
        try await h.get("/l")
        h.now.advance(20)
        let response = try await h.get("/l")
        #expect(response.source == .revalidated)
        #expect(response.bodyText == "text")
        #expect(h.mock.requests.last?.value(forHTTPHeaderField: "If-Modified-Since") == modified)
    }

    @Test("a 200 to a revalidation replaces the entry", arguments: StorageKind.allCases)
    func changedOnRevalidation(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/c", [(200, ["Cache-Control": "max-age=10", "ETag": "\"1\""], "old"), (200, ["Cache-Control": "max-age=10", "ETag": "\"2\""], "new")])
        try await h.get("/c")
        h.now.advance(20)
        #expect(try await h.get("/c").bodyText == "new")
        #expect(try await h.get("/c").source == .cache)
        #expect(try await h.get("/c").bodyText == "new")
        #expect(h.cache.statistics.revalidatedChanged == 1)
    }

    @Test(
        "a 304 whose validators do not match is not merged: the request is sent again unconditionally and that answer stored", arguments: StorageKind.allCases)
    func unmatchedNotModified(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin(
            "/u",
            [
                (200, ["Cache-Control": "max-age=10", "ETag": "\"mine\""], "mine"), (304, ["ETag": "\"other\""], ""),
                (200, ["Cache-Control": "max-age=10", "ETag": "\"other\""], "full")
            ])
        try await h.get("/u")
        h.now.advance(20)
        let response = try await h.get("/u")
        #expect(response.status == 200)
        #expect(response.bodyText == "full")
        #expect(response.source == .network)
        let sent = h.mock.requests(for: "/u")
        #expect(sent.count == 3)
        #expect(sent[1].value(forHTTPHeaderField: "If-None-Match") == "\"mine\"")
        #expect(sent[2].value(forHTTPHeaderField: "If-None-Match") == nil)
        #expect(h.cache.statistics.refetched == 1)
        #expect(try await h.get("/u").bodyText == "full")  // the refetched answer was stored
        #expect(h.mock.requests(for: "/u").count == 3)
    }

    @Test(
        "an origin that answers 304 even to the unconditional request: its answer is returned, never a loop or a cache-made error",
        arguments: StorageKind.allCases)
    func unmatchedTwice(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/u2", [(200, ["Cache-Control": "max-age=10", "ETag": "\"mine\""], "mine"), (304, ["ETag": "\"other\""], "")])
        try await h.get("/u2")
        h.now.advance(20)
        let response = try await h.get("/u2")
        #expect(response.status == 304)
        #expect(h.mock.requests(for: "/u2").count == 3)
    }

    @Test(
        "a caller's own conditional request for a stale stored response is passed through, not answered with an unrequested 200",
        arguments: StorageKind.allCases)
    func callerConditional(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/k", [(200, ["Cache-Control": "max-age=100", "ETag": "\"k\""], "body"), (304, ["ETag": "\"k\"", "Cache-Control": "max-age=100"], "")])
        try await h.get("/k")
        h.now.advance(200)
        let response = try await h.get("/k", headers: ["If-None-Match": "\"k\""])
        #expect(response.status == 304)
        #expect(response.source == .network)
        #expect(h.mock.requests(for: "/k").last?.value(forHTTPHeaderField: "If-None-Match") == "\"k\"")
        #expect(h.hits("/k") == 2)
        #expect(try await h.get("/k").source == .cache, "the 304 freshened the stored response")
    }

    @Test(
        "a caller's If-None-Match against a fresh stored response is answered from cache (RFC 9111 §4.3.2): 304 when a tag matches, the stored 200 when none does",
        arguments: StorageKind.allCases)
    func callerIfNoneMatchFromCache(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/n", headers: ["Cache-Control": "max-age=100", "ETag": "\"k\"", "Content-Type": "text/plain", "X-Kept": "1"], body: "body")
        try await h.get("/n")
        h.now.advance(7)
        for tags in ["\"k\"", "W/\"k\"", "\"a\", \"k\"", "*", "\"a,b\", W/\"k\""] {
            let unchanged = try await h.get("/n", headers: ["If-None-Match": tags]).collected()
            #expect(unchanged.status == 304 && unchanged.source == .cache, "\(tags)")
            #expect(unchanged.headers["ETag"] == "\"k\"" && unchanged.headers["X-Kept"] == "1" && unchanged.headers["Age"] == "7")
            #expect(unchanged.headers["Content-Length"] == nil && unchanged.body.bytes?.isEmpty != false)
        }
        let changed = try await h.get("/n", headers: ["If-None-Match": "\"other\", \"k,\""]).collected()
        #expect(changed.status == 200 && changed.source == .cache && changed.bodyText == "body")
        let head = try await h.pipeline.send(h.request("/n", method: "HEAD", headers: ["If-None-Match": "\"k\""])).collected()
        #expect(head.status == 304 && head.source == .cache)
        // Conditions only an origin evaluates go there, with the caller's fields untouched.
        h.origin("/n", method: "GET", status: 412, headers: [:], body: "")
        let ifMatch = try await h.get("/n", headers: ["If-Match": "\"other\""])
        #expect(ifMatch.status == 412 && ifMatch.source == .network)
        #expect(h.hits("/n") == 2)
        #expect(h.cache.statistics.hits == 7)
    }

    @Test(
        "a caller's conditions are not evaluated against a stored non-2xx (RFC 9110 §13.2.1): the stored 404 answers; only-if-cached with nothing usable gets 504",
        arguments: StorageKind.allCases)
    func callerConditionalOnNon2xx(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/gone", status: 404, headers: ["Cache-Control": "max-age=100", "ETag": "\"g\""], body: "not here")
        try await h.get("/gone")
        for fields in [["If-None-Match": "*"], ["If-None-Match": "\"g\""], ["If-Modified-Since": HTTPDate.format(h.now.value.addingTimeInterval(60))]] {
            let answer = try await h.get("/gone", headers: fields).collected()
            #expect(answer.status == 404 && answer.source == .cache && answer.bodyText == "not here", "\(fields)")
        }
        #expect(h.hits("/gone") == 1)
        let nothing = try await h.get("/never", headers: ["If-None-Match": "\"x\"", "Cache-Control": "only-if-cached"])
        #expect(nothing.status == 504)
        #expect(h.hits("/never") == 0)
    }

    @Test(
        "a caller's If-Modified-Since against a fresh stored response is answered from cache: 304 when Last-Modified (else Date) is not later",
        arguments: StorageKind.allCases)
    func callerIfModifiedSinceFromCache(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        let modified = h.now.value.addingTimeInterval(-3000)
        h.origin("/m", headers: ["Cache-Control": "max-age=100", "Last-Modified": HTTPDate.format(modified)], body: "body")
        h.origin("/d", headers: ["Cache-Control": "max-age=100"], body: "dated")
        try await h.get("/m")
        try await h.get("/d")
        func get(_ path: String, since: String) async throws -> RecallResponse {
            try await h.get(path, headers: ["If-Modified-Since": since]).collected()
        }
        #expect(try await get("/m", since: HTTPDate.format(modified)).status == 304)
        #expect(try await get("/m", since: HTTPDate.format(modified.addingTimeInterval(1000))).status == 304)
        let earlier = try await get("/m", since: HTTPDate.format(modified.addingTimeInterval(-1)))
        #expect(earlier.status == 200 && earlier.bodyText == "body" && earlier.source == .cache)
        let invalid = try await get("/m", since: "yesterday")
        #expect(invalid.status == 200 && invalid.source == .cache, "an invalid date is ignored (RFC 9110 §13.1.3)")
        // Without Last-Modified, the stored Date stands in.
        #expect(try await get("/d", since: HTTPDate.format(h.now.value)).status == 304)
        #expect(try await get("/d", since: HTTPDate.format(h.now.value.addingTimeInterval(-1))).status == 200)
        // With If-None-Match present, If-Modified-Since is not read.
        let both = try await h.get("/m", headers: ["If-None-Match": "\"none\"", "If-Modified-Since": HTTPDate.format(modified)]).collected()
        #expect(both.status == 200)
        #expect(h.hits("/m") == 1 && h.hits("/d") == 1)
    }

    @Test("a caller's matching 304 freshens the stored response", arguments: StorageKind.allCases)
    func callerConditionalFreshens(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin(
            "/f",
            [
                (200, ["Cache-Control": "max-age=10", "ETag": "\"f\""], "body"),
                (304, ["ETag": "\"f\"", "Cache-Control": "max-age=100"], "")
            ])
        try await h.get("/f")
        h.now.advance(20)  // stale
        #expect(try await h.get("/f", headers: ["If-None-Match": "\"f\""]).status == 304)
        let after = try await h.get("/f")
        #expect(after.source == .cache)  // fresh again for 100 s, without another origin request
        #expect(after.bodyText == "body")
        #expect(h.hits("/f") == 2)
    }

    @Test("Vary: variants of one URL are kept side by side; header values are normalized", arguments: StorageKind.allCases)
    func varyVariants(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.mock.route("GET", "/v") { [now = h.now] request in
            let language = request.value(forHTTPHeaderField: "Accept-Language") ?? "none"
            return .text("in \(language)", headers: ["Cache-Control": "max-age=60", "Vary": "Accept-Language", "Date": HTTPDate.format(now.value)])
        }
        #expect(try await h.get("/v", headers: ["Accept-Language": "en"]).bodyText == "in en")
        #expect(try await h.get("/v", headers: ["Accept-Language": "fr"]).bodyText == "in fr")
        #expect(try await h.get("/v").bodyText == "in none")
        let en = try await h.get("/v", headers: ["Accept-Language": "en"])
        #expect(en.source == .cache)
        #expect(en.bodyText == "in en")
        let fr = try await h.get("/v", headers: ["Accept-Language": "fr"])
        #expect(fr.source == .cache)
        #expect(fr.bodyText == "in fr")
        #expect(try await h.get("/v").bodyText == "in none")
        #expect(h.hits("/v") == 3)

        h.mock.route("GET", "/w") { [now = h.now] request in
            .text(
                request.value(forHTTPHeaderField: "Accept") ?? "",
                headers: ["Cache-Control": "max-age=60", "Vary": "accept", "Date": HTTPDate.format(now.value)])
        }
        try await h.get("/w", headers: ["Accept": "text/html,  application/json"])
        #expect(try await h.get("/w", headers: ["Accept": "text/html, application/json"]).source == .cache)
    }

    @Test("the number of variants per URL is bounded", arguments: StorageKind.allCases)
    func variantLimit(storage: StorageKind) async throws {
        var configuration = CacheConfiguration()
        configuration.maxVariants = 2
        let h = CacheHarness(over: storage, configuration: configuration)
        h.mock.route("GET", "/v") { [now = h.now] request in
            .text("x", headers: ["Cache-Control": "max-age=60", "Vary": "X-Variant", "Date": HTTPDate.format(now.value)])
        }
        for variant in ["a", "b", "c"] { try await h.get("/v", headers: ["X-Variant": variant]) }
        #expect(try await h.get("/v", headers: ["X-Variant": "c"]).source == .cache)
        #expect(try await h.get("/v", headers: ["X-Variant": "b"]).source == .cache)
        #expect(try await h.get("/v", headers: ["X-Variant": "a"]).source == .network)  // the oldest went
    }

    @Test(
        "unsafe methods invalidate the target URI and same-origin Location / Content-Location", arguments: StorageKind.allCases,
        ["POST", "PUT", "DELETE", "PATCH"])
    func invalidation(storage: StorageKind, method: String) async throws {
        let h = CacheHarness(over: storage)
        for path in ["/items", "/items/1", "/items/2", "/elsewhere"] {
            h.origin(path, headers: ["Cache-Control": "max-age=600"])
            try await h.get(path)
        }
        h.origin(
            "/items", method: method, status: 201,
            headers: ["Location": "/items/1", "Content-Location": "https://other.test/items/2"], body: "")
        try await h.pipeline.send(h.request("/items", method: method))
        #expect(try await h.get("/items").source == .network)
        #expect(try await h.get("/items/1").source == .network)
        #expect(try await h.get("/items/2").source == .cache)  // Content-Location of another origin is ignored
        #expect(try await h.get("/elsewhere").source == .cache)
        #expect(h.cache.statistics.invalidations == 2)
    }

    @Test("an error response to an unsafe method does not invalidate", arguments: StorageKind.allCases)
    func noInvalidationOnError(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/items", headers: ["Cache-Control": "max-age=600"])
        try await h.get("/items")
        h.origin("/items", method: "POST", status: 500, body: "")
        try await h.pipeline.send(h.request("/items", method: "POST"))
        #expect(try await h.get("/items").source == .cache)
    }

    @Test("coalescing: a burst of identical misses costs the origin one request", arguments: StorageKind.allCases)
    func coalescing(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        let gate = AsyncStream<Void>.makeStream()
        let arrived = Locked(0)
        h.mock.route("GET", "/burst") { [now = h.now] request in
            arrived.withLock { $0 += 1 }
            var iterator = gate.stream.makeAsyncIterator()
            await iterator.next()  // hold the origin until every follower is waiting
            return .text("once", headers: ["Cache-Control": "max-age=60", "Date": HTTPDate.format(now.value)])
        }
        let responses = try await withThrowingTaskGroup(of: RecallResponse.self) { group in
            for _ in 0..<20 { group.addTask { try await h.get("/burst") } }
            // Open the origin once the leader reached it and the other 19 wait on it.
            while arrived.withLock({ $0 }) == 0 || h.cache.statistics.waiting < 19 { await Task.yield() }
            gate.continuation.yield()
            gate.continuation.finish()
            return try await group.reduce(into: [RecallResponse]()) { $0.append($1) }
        }
        #expect(responses.count == 20)
        #expect(responses.allSatisfy { $0.bodyText == "once" })
        #expect(h.hits("/burst") == 1)
        #expect(h.cache.statistics.coalesced == 19)
    }

    @Test("coalescing can be switched off", arguments: StorageKind.allCases)
    func coalescingOff(storage: StorageKind) async throws {
        var configuration = CacheConfiguration()
        configuration.coalescesRequests = false
        let h = CacheHarness(over: storage, configuration: configuration)
        let arrived = Locked(0)
        h.mock.route("GET", "/burst") { _ in
            arrived.withLock { $0 += 1 }
            try await waitUntil("all five requests reached the origin") { arrived.withLock { $0 } >= 5 }
            return .text("x", headers: ["Cache-Control": "max-age=60"])
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<5 { group.addTask { try await h.get("/burst") } }
            try await group.waitForAll()
        }
        #expect(h.hits("/burst") == 5)
    }

    @Test("requests with different credentials never share an entry", arguments: StorageKind.allCases)
    func credentialPartition(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.mock.route("GET", "/me") { request in
            .text("user \(request.value(forHTTPHeaderField: "Authorization") ?? "anonymous")", headers: ["Cache-Control": "private, max-age=60"])
        }
        #expect(try await h.get("/me", headers: ["Authorization": "Bearer alice"]).bodyText == "user Bearer alice")
        #expect(try await h.get("/me", headers: ["Authorization": "Bearer bob"]).bodyText == "user Bearer bob")
        #expect(try await h.get("/me").bodyText == "user anonymous")
        let alice = try await h.get("/me", headers: ["Authorization": "Bearer alice"])
        #expect(alice.source == .cache)
        #expect(alice.bodyText == "user Bearer alice")
        #expect(h.cache.key(for: h.request("/me", headers: ["Authorization": "Bearer alice"]))?.contains("alice") == false)
    }

    @Test("statistics count hits, misses, revalidations, stale answers and the hit ratio", arguments: StorageKind.allCases)
    func statistics(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/s", [(200, ["Cache-Control": "max-age=10", "ETag": "\"s\""], "x"), (304, ["ETag": "\"s\""], "")])
        try await h.get("/s")  // miss
        try await h.get("/s")  // hit
        try await h.get("/s")  // hit
        h.now.advance(20)
        try await h.get("/s")  // revalidated
        await h.cache.flush()  // (a disk storage counts its files once written)
        let statistics = h.cache.statistics
        #expect(statistics.misses == 1)
        #expect(statistics.hits == 2)
        #expect(statistics.revalidated == 1)
        #expect(statistics.stores == 2)
        #expect(statistics.lookups == 4)
        #expect(statistics.hitRatio == 0.75)
        #expect(statistics.storage.count == 1)
        #expect(statistics.description.contains("hit ratio 75.0 %"))
    }
}
