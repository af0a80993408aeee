import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("HTTPCache: request and response directives", .timeLimit(.minutes(1)))
struct CacheDirectiveTests {
    /// A harness with `/a` fresh for 100 s, with an ETag, already stored.
    func stored(_ cacheControl: String = "max-age=100") async throws -> CacheHarness {
        let h = CacheHarness()
        h.origin(
            "/a",
            [
                (200, HeaderFields([("Cache-Control", cacheControl), ("ETag", "\"v1\"")]), "one"),
                (304, ["ETag": "\"v1\""], "")
            ])
        try await h.get("/a")
        return h
    }

    @Test(
        "request no-cache and Pragma: no-cache revalidate a fresh entry",
        arguments: [["Cache-Control": "no-cache"], ["Pragma": "no-cache"], ["Cache-Control": "max-age=0"]])
    func requestNoCache(headers: [String: String]) async throws {
        let h = try await stored()
        let response = try await h.get("/a", headers: headers)
        #expect(response.source == .revalidated)
        #expect(response.bodyText == "one")
        #expect(h.mock.requests.last?.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"")
    }

    @Test("Pragma is ignored when Cache-Control is present")
    func pragmaIgnored() async throws {
        let h = try await stored()
        #expect(try await h.get("/a", headers: ["Pragma": "no-cache", "Cache-Control": "max-stale=0"]).source == .cache)
    }

    @Test("request max-age: older entries are revalidated")
    func requestMaxAge() async throws {
        let h = try await stored()
        h.now.advance(30)
        #expect(try await h.get("/a", headers: ["Cache-Control": "max-age=40"]).source == .cache)
        #expect(try await h.get("/a", headers: ["Cache-Control": "max-age=20"]).source == .revalidated)
    }

    @Test("min-fresh: the entry must stay fresh that much longer")
    func minFresh() async throws {
        let h = try await stored()
        h.now.advance(50)  // 50 s of freshness left
        #expect(try await h.get("/a", headers: ["Cache-Control": "min-fresh=40"]).source == .cache)
        #expect(try await h.get("/a", headers: ["Cache-Control": "min-fresh=60"]).source == .revalidated)
    }

    @Test("max-stale with a value and without")
    func maxStale() async throws {
        let h = try await stored()
        h.now.advance(130)  // 30 s stale
        let within = try await h.get("/a", headers: ["Cache-Control": "max-stale=60"])
        #expect(within.source == .stale)
        #expect(within.headers["Age"] == "130")
        #expect(try await h.get("/a", headers: ["Cache-Control": "max-stale"]).source == .stale)
        #expect(h.hits("/a") == 1)
        #expect(try await h.get("/a", headers: ["Cache-Control": "max-stale=10"]).source == .revalidated)
        #expect(h.cache.statistics.staleServed[.maxStale] == 2)
    }

    @Test("only-if-cached: a usable entry is served, otherwise 504 without contacting the origin")
    func onlyIfCached() async throws {
        let h = try await stored()
        #expect(try await h.get("/a", headers: ["Cache-Control": "only-if-cached"]).source == .cache)
        let missing = try await h.get("/nothing", headers: ["Cache-Control": "only-if-cached"])
        #expect(missing.status == 504)
        h.now.advance(200)
        #expect(try await h.get("/a", headers: ["Cache-Control": "only-if-cached"]).status == 504)
        #expect(h.mock.requests.count == 1)
    }

    @Test(
        "reloadIgnoringLocalCacheData: the origin is asked without validators and its answer replaces the entry",
        arguments: StorageKind.allCases, [URLRequest.CachePolicy.reloadIgnoringLocalCacheData, .reloadIgnoringLocalAndRemoteCacheData])
    func reloadIgnoringLocalCacheData(storage: StorageKind, policy: URLRequest.CachePolicy) async throws {
        let h = CacheHarness(over: storage)
        h.origin(
            "/r",
            [
                (200, ["Cache-Control": "max-age=100", "ETag": "\"v1\"", "Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT"], "one"),
                (200, ["Cache-Control": "max-age=100", "ETag": "\"v2\""], "two")
            ])
        try await h.get("/r")
        let reloaded = try await h.get("/r", cachePolicy: policy)
        #expect(reloaded.source == .network)
        #expect(reloaded.bodyText == "two")
        let sent = try #require(h.mock.requests(for: "/r").last)
        #expect(sent.value(forHTTPHeaderField: "If-None-Match") == nil)
        #expect(sent.value(forHTTPHeaderField: "If-Modified-Since") == nil)
        await h.cache.flush()  // the reload is a plain miss: stored after its answer
        #expect(h.cache.statistics.stores == 2)
        let next = try await h.get("/r")
        #expect(next.source == .cache)
        #expect(next.bodyText == "two")
        #expect(h.hits("/r") == 2)
    }

    @Test("URLRequest.cachePolicy is honoured")
    func cachePolicies() async throws {
        let h = try await stored()
        let origin = h.hits("/a")
        h.now.advance(1000)  // very stale
        #expect(try await h.get("/a", cachePolicy: .returnCacheDataElseLoad).source == .stale)
        #expect(try await h.get("/a", cachePolicy: .returnCacheDataDontLoad).source == .stale)
        #expect(h.hits("/a") == origin)
        #expect(try await h.get("/missing", cachePolicy: .returnCacheDataDontLoad).status == 504)
        #expect(h.hits("/missing") == 0)
        #expect(h.cache.statistics.staleServed[.cachePolicy] == 2)
    }

    @Test(
        "response no-cache: stored, but revalidated before every use, also in its field-name form",
        arguments: StorageKind.allCases, ["no-cache", "no-cache=\"Set-Cookie\"", "max-age=100, no-cache"])
    func responseNoCache(storage: StorageKind, directive: String) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/n", [(200, ["Cache-Control": directive, "ETag": "\"n1\""], "body"), (304, ["ETag": "\"n1\""], "")])
        try await h.get("/n")
        let again = try await h.get("/n")
        #expect(again.source == .revalidated)
        #expect(again.bodyText == "body")
        #expect(h.hits("/n") == 2)
    }

    @Test("must-revalidate: never served stale, even with max-stale; 504 when the origin cannot be reached", arguments: StorageKind.allCases)
    func mustRevalidate(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/m", headers: ["Cache-Control": "max-age=10, must-revalidate, stale-if-error=600", "ETag": "\"m\""])
        try await h.get("/m")
        h.now.advance(20)
        h.mock.route("GET", "/m", .error(TransportError(.cannotConnect)))
        let response = try await h.get("/m", headers: ["Cache-Control": "max-stale=600"])
        #expect(response.status == 504)
        #expect(response.source == .cache)
    }

    @Test("immutable: a reload does not revalidate while fresh")
    func immutable() async throws {
        let h = try await stored("max-age=100, immutable")
        #expect(try await h.get("/a", cachePolicy: .reloadRevalidatingCacheData).source == .cache)
        let plain = try await stored("max-age=100")
        #expect(try await plain.get("/a", cachePolicy: .reloadRevalidatingCacheData).source == .revalidated)
    }

    @Test("stale-while-revalidate: serve stale inside the window and refresh once in the background", arguments: StorageKind.allCases)
    func staleWhileRevalidate(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin(
            "/s",
            [
                (200, ["Cache-Control": "max-age=10, stale-while-revalidate=60", "ETag": "\"s1\""], "old"),
                (200, ["Cache-Control": "max-age=10, stale-while-revalidate=60", "ETag": "\"s2\""], "new")
            ])
        try await h.get("/s")
        h.now.advance(20)
        let responses = try await withThrowingTaskGroup(of: RecallResponse.self) { group in
            for _ in 0..<10 { group.addTask { try await h.get("/s") } }
            return try await group.reduce(into: [RecallResponse]()) { $0.append($1) }
        }
        #expect(responses.allSatisfy { $0.source == .stale && $0.bodyText == "old" })
        await h.cache.waitForBackgroundRefreshes()
        #expect(h.hits("/s") == 2)  // one refresh shared by every stale answer
        #expect(h.mock.requests.last?.value(forHTTPHeaderField: "If-None-Match") == "\"s1\"")
        let refreshed = try await h.get("/s")
        #expect(refreshed.source == .cache)
        #expect(refreshed.bodyText == "new")
        h.now.advance(100)  // beyond the window: a normal revalidation, the caller waits
        #expect(try await h.get("/s").source != .stale)
    }

    @Test(
        "stale-while-revalidate over a transport valid only during the call: refreshed before answering; stale if that fails", arguments: StorageKind.allCases)
    func staleWhileRevalidateWithoutBackground(storage: StorageKind) async throws {
        /// A transport that may not be used once the call returned (as a middleware's `next`).
        struct CallScoped: Transport {
            let base: MockTransport
            var allowsBackgroundRequests: Bool { false }
            var respondsToCancellation: Bool { true }
            func send(_ request: URLRequest) async throws -> RecallResponse { try await base.send(request) }
        }
        let h = CacheHarness(over: storage, transport: { CallScoped(base: $0) })
        h.origin(
            "/s",
            [
                (200, ["Cache-Control": "max-age=10, stale-while-revalidate=60", "ETag": "\"s1\""], "old"),
                (200, ["Cache-Control": "max-age=10, stale-while-revalidate=60", "ETag": "\"s2\""], "new"),
                (503, [:], "down")
            ])
        try await h.get("/s")
        h.now.advance(20)
        let refreshed = try await h.get("/s")
        #expect(refreshed.bodyText == "new" && refreshed.source == .network, "the refresh ran before the answer")
        #expect(h.hits("/s") == 2 && h.mock.requests.last?.value(forHTTPHeaderField: "If-None-Match") == "\"s1\"")
        h.now.advance(20)
        let stale = try await h.get("/s")
        #expect(stale.bodyText == "new" && stale.source == .stale, "a failed refresh leaves the stale answer")
        #expect(h.hits("/s") == 3)
    }

    @Test("stale-if-error: serve stale inside the window on 500, 502, 503, 504", arguments: StorageKind.allCases, [500, 502, 503, 504])
    func staleIfErrorStatus(storage: StorageKind, status: Int) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/e", [(200, ["Cache-Control": "max-age=10, stale-if-error=60"], "good"), (status, [:], "bad")])
        try await h.get("/e")
        h.now.advance(30)
        let response = try await h.get("/e")
        #expect(response.source == .stale)
        #expect(response.bodyText == "good")
        h.now.advance(60)  // 80 s stale > 60 s window
        #expect(try await h.get("/e").status == status)
    }

    @Test("stale-if-error: a 404 or 501 is an answer, not an error", arguments: StorageKind.allCases)
    func staleIfErrorNotForClientErrors(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage)
        h.origin("/e", [(200, ["Cache-Control": "max-age=10, stale-if-error=60"], "good"), (404, [:], "gone")])
        try await h.get("/e")
        h.now.advance(30)
        #expect(try await h.get("/e").status == 404)
    }

    @Test("stale-if-error: on transport failure, also after the retrier gave up, and as a request directive", arguments: StorageKind.allCases)
    func staleIfErrorTransport(storage: StorageKind) async throws {
        let h = CacheHarness(over: storage, retrierFactory: .exponentialBackoff(maxAttempts: 3, budget: nil))
        h.origin("/t", headers: ["Cache-Control": "max-age=10, stale-if-error=60"], body: "kept")
        try await h.get("/t")
        h.now.advance(30)
        h.mock.route("GET", "/t", .error(TransportError(.connectionLost)))
        let response = try await h.get("/t")
        #expect(response.source == .stale)
        #expect(response.bodyText == "kept")
        #expect(h.hits("/t") == 4)  // 1 + 3 attempts
        #expect(h.cache.statistics.staleServed[.staleIfError] == 1)

        let plain = CacheHarness(over: storage)
        plain.origin("/p", headers: ["Cache-Control": "max-age=10"], body: "kept")
        try await plain.get("/p")
        plain.now.advance(30)
        plain.mock.route("GET", "/p", .status(503))
        #expect(try await plain.get("/p").status == 503)
        #expect(try await plain.get("/p", headers: ["Cache-Control": "stale-if-error=60"]).source == .stale)
    }

    @Test("with an open circuit breaker, a stale-if-error entry is served", arguments: StorageKind.allCases)
    func circuitBreakerAndStale(storage: StorageKind) async throws {
        let clock = ManualClock()
        let breaker = CircuitBreaker(failureRatio: 0.5, minimumCalls: 2, breakDuration: .seconds(60), clock: clock)
        let h = CacheHarness(over: storage, transport: { $0.withCircuitBreaker(breaker) })
        h.origin("/c", headers: ["Cache-Control": "max-age=10, stale-if-error=600"], body: "cached")
        h.origin("/other", status: 503)
        try await h.get("/c")
        try await h.get("/other")  // 1 failure in 2 attempts: the circuit opens
        #expect(breaker.state(of: "origin.test") == .open)
        h.now.advance(30)
        let response = try await h.get("/c")
        #expect(response.source == .stale)
        #expect(response.bodyText == "cached")
        #expect(h.hits("/c") == 1)  // the breaker refused without reaching the origin
    }
}
