import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #57, point 1: a shared cache (``CacheAudience/shared``) follows RFC 9111's shared-cache
/// rules — `s-maxage`, `proxy-revalidate`, `private`, `Authorization` (§3.5), `Set-Cookie`
/// stored (§3.1) — and keeps `Cookie` and API keys apart as a cache for many users does. Each rule is checked against the many-users
/// audience too, which is a private cache in spirit and must not change.
@Suite("HTTPCache audience: a shared cache", .timeLimit(.minutes(1)))
struct SharedCacheTests {
    static func harness(_ audience: CacheAudience, over kind: StorageKind = .memory) -> CacheHarness {
        var configuration = CacheConfiguration()
        configuration.audience = audience
        return CacheHarness(over: kind, configuration: configuration)
    }

    /// One row: a response's `Cache-Control`, the seconds that pass before it is asked for
    /// again, and whether a shared and a many-users cache answer from what they stored.
    struct FreshnessRow: Sendable, CustomTestStringConvertible {
        let rule: String
        let cacheControl: String
        let after: Double
        let sharedHit: Bool
        let manyUsersHit: Bool
        var testDescription: String { rule }
    }

    static let freshness: [FreshnessRow] = [
        FreshnessRow(
            rule: "s-maxage alone makes a response fresh in a shared cache", cacheControl: "s-maxage=3600", after: 5, sharedHit: true, manyUsersHit: false),
        FreshnessRow(
            rule: "s-maxage shorter than max-age wins in a shared cache", cacheControl: "max-age=3600, s-maxage=1", after: 3, sharedHit: false,
            manyUsersHit: true),
        FreshnessRow(
            rule: "s-maxage longer than max-age wins in a shared cache", cacheControl: "max-age=1, s-maxage=3600", after: 3, sharedHit: true,
            manyUsersHit: false),
        FreshnessRow(
            rule: "the order of the directives does not matter", cacheControl: "s-maxage=1, max-age=3600", after: 3, sharedHit: false, manyUsersHit: true),
        FreshnessRow(rule: "max-age alone is read by both", cacheControl: "max-age=3600", after: 5, sharedHit: true, manyUsersHit: true)
    ]

    @Test("freshness: s-maxage over max-age in a shared cache only", arguments: freshness)
    func sMaxAge(row: FreshnessRow) async throws {
        for (audience, expected) in [(CacheAudience.shared, row.sharedHit), (.manyUsers, row.manyUsersHit)] {
            let h = Self.harness(audience)
            h.origin("/f", headers: ["Cache-Control": row.cacheControl])
            try await h.get("/f")
            h.now.advance(row.after)
            let again = try await h.get("/f")
            #expect((again.source == .cache) == expected, "\(audience)")
        }
    }

    @Test("s-maxage counts over Expires too, when both are there")
    func sMaxAgeOverExpires() async throws {
        let h = Self.harness(.shared)
        h.origin("/e", headers: ["Cache-Control": "s-maxage=3600", "Expires": HTTPDate.format(h.now.value.addingTimeInterval(-10))])
        try await h.get("/e")
        h.now.advance(5)
        #expect(try await h.get("/e").source == .cache)
    }

    @Test("private is never stored in a shared cache, with field names or without; a cache for many users stores it", arguments: StorageKind.allCases)
    func privateIsNotStored(kind: StorageKind) async throws {
        for cacheControl in ["private, max-age=3600", "private=\"x-user\", max-age=3600"] {
            let shared = Self.harness(.shared, over: kind)
            shared.origin("/p", headers: ["Cache-Control": cacheControl, "X-User": "alice"])
            try await shared.get("/p")
            #expect(try await shared.get("/p").source == .network, "\(cacheControl)")
            #expect(shared.cache.statistics.stores == 0)
        }
        let many = Self.harness(.manyUsers, over: kind)
        many.origin("/p", headers: ["Cache-Control": "private, max-age=3600"])
        try await many.get("/p")
        #expect(try await many.get("/p").source == .cache)
    }

    @Test(
        "an answer to a request with Authorization: not stored unless public, must-revalidate or s-maxage allows it; then it serves every request (RFC 9111 §3.5)",
        arguments: StorageKind.allCases)
    func authorization(kind: StorageKind) async throws {
        let h = Self.harness(.shared, over: kind)
        for path in ["/plain", "/public", "/revalidate", "/smaxage"] {
            let cacheControl =
                switch path {
                case "/public": "max-age=3600, public"
                case "/revalidate": "max-age=3600, must-revalidate"
                case "/smaxage": "s-maxage=3600"
                default: "max-age=3600"
                }
            h.mock.route("GET", path) { request in
                .text("for \(request.value(forHTTPHeaderField: "Authorization") ?? "nobody")", headers: ["Cache-Control": cacheControl])
            }
        }
        // Without a directive that allows it, the answer serves nobody — not even its own user.
        try await h.get("/plain", headers: ["Authorization": "Bearer alice"])
        #expect(try await h.get("/plain", headers: ["Authorization": "Bearer alice"]).source == .network)
        let anonymous = try await h.get("/plain")
        #expect(anonymous.source == .network && anonymous.bodyText == "for nobody")
        // With one, it serves every request: anonymous, the same user, another user.
        for path in ["/public", "/revalidate", "/smaxage"] {
            try await h.get(path, headers: ["Authorization": "Bearer alice"])
            h.now.advance(2)
            for headers in [[:], ["Authorization": "Bearer alice"], ["Authorization": "Bearer bob"]] {
                let answer = try await h.get(path, headers: headers)
                #expect(answer.source == .cache && answer.bodyText == "for Bearer alice", "\(path) \(headers)")
            }
            #expect(h.hits(path) == 1)
        }
        // A cache for many users partitions by Authorization instead: another user asks the origin.
        let many = Self.harness(.manyUsers, over: kind)
        many.mock.route("GET", "/public") { _ in .text("public", headers: ["Cache-Control": "max-age=3600, public"]) }
        try await many.get("/public", headers: ["Authorization": "Bearer alice"])
        #expect(try await many.get("/public", headers: ["Authorization": "Bearer bob"]).source == .network)
    }

    @Test("proxy-revalidate and s-maxage forbid serving stale in a shared cache (stale-if-error, a disconnection): a 504; a cache for many users serves stale")
    func noStaleUnderProxyRevalidate() async throws {
        for cacheControl in ["max-age=1, proxy-revalidate, stale-if-error=600", "s-maxage=1, stale-if-error=600"] {
            for audience in [CacheAudience.shared, .manyUsers] {
                let h = Self.harness(audience)
                h.origin("/s", [(200, ["Cache-Control": cacheControl], "stored"), (503, [:], "down")])
                try await h.get("/s")
                h.now.advance(5)
                let answer = try await h.get("/s")
                // (s-maxage gives a cache for many users no freshness: it fetches, and serves stale on the 503.)
                if audience == .shared {
                    #expect(answer.bodyText != "stored", "\(cacheControl): never the stale response")
                } else {
                    #expect(answer.bodyText == "stored" && answer.source == .stale, "\(cacheControl)")
                }
            }
        }
        // Disconnected: the shared cache answers 504 for a proxy-revalidate response, as for must-revalidate.
        let h = Self.harness(.shared)
        h.origin("/d", headers: ["Cache-Control": "max-age=1, proxy-revalidate"])
        try await h.get("/d")
        h.now.advance(5)
        h.mock.route("GET", "/d") { _ in throw URLError(.cannotConnectToHost) }
        let answer = try await h.get("/d")
        #expect(answer.status == 504 && answer.source != .stale)
    }

    @Test(
        "Set-Cookie of a response the origin lets be shared is stored and returned (RFC 9111 §3.1); Cookie and API keys still partition",
        arguments: StorageKind.allCases)
    func keepsManyUsersApart(kind: StorageKind) async throws {
        let h = Self.harness(.shared, over: kind)
        h.mock.route("GET", "/page") { request in
            let who = request.value(forHTTPHeaderField: "Cookie") ?? request.value(forHTTPHeaderField: "X-API-Key") ?? "nobody"
            return .text("for \(who)", headers: ["Cache-Control": "max-age=600, public", "Set-Cookie": "session=abc"])
        }
        let first = try await h.get("/page").collected()
        #expect(first.headers["Set-Cookie"] == "session=abc", "the caller who caused it gets it")
        let hit = try await h.get("/page").collected()
        #expect(hit.source == .cache && hit.headers["Set-Cookie"] == "session=abc")
        let cookied = try await h.get("/page", headers: ["Cookie": "session=abc"])
        #expect(cookied.source == .network && cookied.bodyText == "for session=abc")
        let keyed = try await h.get("/page", headers: ["X-API-Key": "tenant-a"])
        #expect(keyed.source == .network && keyed.bodyText == "for tenant-a")
        #expect(try await h.get("/page", headers: ["X-API-Key": "tenant-b"]).bodyText == "for tenant-b")
        #expect(h.hits("/page") == 4)
    }

    @Test(
        "a 304 or a HEAD answer that makes a stored response private, or revalidates it for an authenticated request without public, answers and removes it: a shared cache keeps nothing it may not",
        arguments: StorageKind.allCases)
    func mergesKeepOnlyWhatMayBeKept(kind: StorageKind) async throws {
        // A 304 that says private.
        let h = Self.harness(.shared, over: kind)
        h.origin(
            "/p", [(200, ["Cache-Control": "max-age=1", "ETag": "\"v\""], "stored"), (304, ["Cache-Control": "private, max-age=600", "ETag": "\"v\""], "")])
        try await h.get("/p")
        h.now.advance(5)
        let answer = try await h.get("/p")
        #expect(answer.status == 200 && answer.bodyText == "stored" && answer.source == .revalidated)
        #expect(try await h.get("/p").source == .network, "removed, not freshened")
        // A 304 to a request with Authorization, for a response stored anonymously without public.
        let a = Self.harness(.shared, over: kind)
        a.origin("/a", [(200, ["Cache-Control": "max-age=1", "ETag": "\"v\""], "stored"), (304, ["Cache-Control": "max-age=600", "ETag": "\"v\""], "")])
        try await a.get("/a")
        a.now.advance(5)
        #expect(try await a.get("/a", headers: ["Authorization": "Bearer bob"]).bodyText == "stored")
        #expect(try await a.get("/a").source == .network, "bob's revalidation is not kept for everyone")
        // The same with public: kept, and served to everyone.
        let p = Self.harness(.shared, over: kind)
        p.origin("/k", [(200, ["Cache-Control": "max-age=1", "ETag": "\"v\""], "stored"), (304, ["Cache-Control": "public, max-age=600", "ETag": "\"v\""], "")])
        try await p.get("/k")
        p.now.advance(5)
        #expect(try await p.get("/k", headers: ["Authorization": "Bearer bob"]).bodyText == "stored")
        #expect(try await p.get("/k").source == .cache)
        // A HEAD answer that says private.
        let head = Self.harness(.shared, over: kind)
        head.origin("/h", method: "GET", headers: ["Cache-Control": "max-age=1", "ETag": "\"v\""], body: "stored")
        head.origin("/h", method: "HEAD", headers: ["Cache-Control": "private, max-age=600", "ETag": "\"v\""], body: "")
        try await head.get("/h")
        head.now.advance(5)  // (stale: the HEAD goes to the origin)
        let headAnswer = try await head.pipeline.send(head.request("/h", method: "HEAD"))
        #expect(headAnswer.status == 200 && head.mock.count(for: "/h") == 2)
        #expect(try await head.get("/h").source == .network, "the HEAD answer's private removed it")
    }

    @Test("an answer to an anonymous request serves authenticated requests too (RFC 9111 lets a shared cache), unless it varies on Authorization")
    func anonymousAnswersServeEveryone() async throws {
        let h = Self.harness(.shared)
        h.mock.route("GET", "/plain") { request in
            .text("for \(request.value(forHTTPHeaderField: "Authorization") ?? "nobody")", headers: ["Cache-Control": "max-age=600"])
        }
        h.mock.route("GET", "/varies") { request in
            .text(
                "for \(request.value(forHTTPHeaderField: "Authorization") ?? "nobody")",
                headers: ["Cache-Control": "max-age=600, public", "Vary": "Authorization"])
        }
        try await h.get("/plain")
        #expect(try await h.get("/plain", headers: ["Authorization": "Bearer alice"]).bodyText == "for nobody")
        try await h.get("/varies")
        let alice = try await h.get("/varies", headers: ["Authorization": "Bearer alice"])
        #expect(alice.source == .network && alice.bodyText == "for Bearer alice")
        #expect(try await h.get("/varies", headers: ["Authorization": "Bearer alice"]).source == .cache)
        #expect(try await h.get("/varies", headers: ["Authorization": "Bearer bob"]).bodyText == "for Bearer bob")
    }

    @Test("Authorization added inside the pipeline (a retrier, an inner hook) counts: the answer is kept only as §3.5 allows")
    func authorizationAddedInside() async throws {
        var configuration = CacheConfiguration()
        configuration.audience = .shared
        let h = CacheHarness(
            configuration: configuration,
            retrierFactory: NilRetrierFactory().refreshingAuth { request in
                var request = request
                request.setValue("Bearer service", forHTTPHeaderField: "Authorization")
                return request
            })
        h.mock.route("GET", "/me") { request in
            guard request.value(forHTTPHeaderField: "Authorization") == "Bearer service" else { return .text("who?", status: 401) }
            return .text("the service's data", headers: ["Cache-Control": "max-age=600"])
        }
        #expect(try await h.get("/me").bodyText == "the service's data")
        #expect(h.cache.statistics.stores == 0, "an answer to an authenticated request, without public: not kept")
    }

    @Test("a shared cache and a cache for many users over one storage never serve each other's entries")
    func sharedAndManyUsersDoNotMix() async throws {
        let storage = MemoryStorage()
        let now = TestNow()
        let mock = MockTransport()
        mock.route("GET", "/x") { request in
            .text(
                "for \(request.value(forHTTPHeaderField: "Authorization") ?? "nobody")",
                headers: ["Cache-Control": "max-age=600, public", "Date": HTTPDate.format(now.value)])
        }
        var configuration = CacheConfiguration()
        configuration.audience = .shared
        let sharedCache = HTTPCache(storage: storage, configuration: configuration, now: { now.value })
        let shared = Pipeline(transport: mock, hooks: [sharedCache])
        let many = Pipeline(transport: mock, hooks: [HTTPCache(storage: storage, now: { now.value })])
        var alice = URLRequest(url: URL(string: "https://origin.test/x")!)
        alice.setValue("Bearer alice", forHTTPHeaderField: "Authorization")
        try await shared.send(alice).collected()
        // (Stored behind its answer: landed before the other cache looks, whose store then keeps it.)
        await sharedCache.flush()
        let anonymous = try await many.send(URLRequest(url: URL(string: "https://origin.test/x")!)).collected()
        #expect(anonymous.source == .network && anonymous.bodyText == "for nobody")
        #expect(try await shared.send(URLRequest(url: URL(string: "https://origin.test/x")!)).collected().bodyText == "for Bearer alice")
    }
}
