import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #39, point 1: whom the cache answers for (``CacheAudience``). Many users (the
/// default) withholds `Set-Cookie` and partitions by `Cookie`; one user stores and returns
/// `Set-Cookie` and lets requests with any cookie share responses. `Authorization` partitions
/// in both.
@Suite("HTTPCache audience: one user or many users", .timeLimit(.minutes(1)))
struct CacheAudienceTests {
    static func configuration(_ audience: CacheAudience) -> CacheConfiguration {
        var configuration = CacheConfiguration()
        configuration.audience = audience
        return configuration
    }

    static let personal: HeaderFields = [
        "Cache-Control": "max-age=600", "Set-Cookie": "session=abc; HttpOnly", "Set-Cookie2": "legacy=1",
        "Authentication-Info": "nextnonce=n1"
    ]

    @Test("many users (the default): a stored response never replays Set-Cookie, and Cookie partitions", arguments: StorageKind.allCases)
    func manyUsers(kind: StorageKind) async throws {
        #expect(CacheConfiguration().audience == .manyUsers)
        let h = CacheHarness(over: kind)
        h.origin("/page", headers: Self.personal)
        let first = try await h.get("/page").collected()
        #expect(first.headers["Set-Cookie"] == "session=abc; HttpOnly")  // the caller who caused it gets it
        let hit = try await h.get("/page").collected()
        #expect(hit.source == .cache)
        #expect(hit.headers["Set-Cookie"] == nil)
        #expect(hit.headers["Set-Cookie2"] == nil)
        #expect(hit.headers["Authentication-Info"] == nil)
        let withCookie = try await h.get("/page", headers: ["Cookie": "session=abc"])
        #expect(withCookie.source == .network, "a request with a cookie is another user's")
        #expect(h.hits("/page") == 2)
    }

    @Test("one user: Set-Cookie and Set-Cookie2 are stored and returned; Authentication-Info still is not", arguments: StorageKind.allCases)
    func oneUserReturnsSetCookie(kind: StorageKind) async throws {
        let h = CacheHarness(over: kind, configuration: Self.configuration(.oneUser))
        h.origin("/page", headers: Self.personal)
        try await h.get("/page").collected()
        if case .disk = kind { await (h.cache.storage as? DiskStorage)?.flush() }
        let hit = try await h.get("/page").collected()
        #expect(hit.source == .cache)
        #expect(hit.headers["Set-Cookie"] == "session=abc; HttpOnly")
        #expect(hit.headers["Set-Cookie2"] == "legacy=1")
        #expect(hit.headers["Authentication-Info"] == nil)
        #expect(h.hits("/page") == 1)
    }

    @Test("one user: several Set-Cookie fields come back as the origin sent them, each on its own")
    func oneUserKeepsEverySetCookie() async throws {
        let h = CacheHarness(configuration: Self.configuration(.oneUser))
        var headers: HeaderFields = ["Cache-Control": "max-age=600"]
        headers.add("Set-Cookie", "a=1; Path=/")
        headers.add("Set-Cookie", "b=2, c=3; Expires=Wed, 21 Oct 2026 07:28:00 GMT")
        h.origin("/two", headers: headers)
        try await h.get("/two").collected()
        let hit = try await h.get("/two").collected()
        #expect(hit.source == .cache)
        #expect(hit.headers.values(for: "Set-Cookie") == ["a=1; Path=/", "b=2, c=3; Expires=Wed, 21 Oct 2026 07:28:00 GMT"])
    }

    @Test("one user: a response stored without a cookie answers requests with any cookie, and the other way round")
    func oneUserCookieDoesNotPartition() async throws {
        let h = CacheHarness(configuration: Self.configuration(.oneUser))
        h.origin("/a", headers: ["Cache-Control": "max-age=600"])
        h.origin("/b", headers: ["Cache-Control": "max-age=600"])
        try await h.get("/a").collected()
        #expect(try await h.get("/a", headers: ["Cookie": "session=1"]).source == .cache)
        #expect(try await h.get("/a", headers: ["Cookie": "session=2; theme=dark"]).source == .cache)
        try await h.get("/b", headers: ["Cookie": "session=1"]).collected()
        #expect(try await h.get("/b").source == .cache)
        #expect(h.hits("/a") == 1)
        #expect(h.hits("/b") == 1)
    }

    @Test("one user: Authorization still partitions, and Vary: Cookie is still honoured")
    func oneUserKeepsAuthorizationAndVary() async throws {
        let h = CacheHarness(configuration: Self.configuration(.oneUser))
        h.mock.route("GET", "/me") { request in
            let who = request.value(forHTTPHeaderField: "Authorization") ?? "nobody"
            return .text("data of \(who)", headers: ["Cache-Control": "private, max-age=600"])
        }
        h.mock.route("GET", "/theme") { request in
            let cookie = request.value(forHTTPHeaderField: "Cookie") ?? "none"
            return .text("theme for \(cookie)", headers: ["Cache-Control": "max-age=600", "Vary": "Cookie"])
        }
        #expect(try await h.get("/me", headers: ["Authorization": "Bearer work"]).collected().bodyText == "data of Bearer work")
        let other = try await h.get("/me", headers: ["Authorization": "Bearer personal"]).collected()
        #expect(other.source == .network)
        #expect(other.bodyText == "data of Bearer personal")
        #expect(try await h.get("/me", headers: ["Authorization": "Bearer work"]).collected().bodyText == "data of Bearer work")
        #expect(h.hits("/me") == 2)

        #expect(try await h.get("/theme", headers: ["Cookie": "theme=dark"]).collected().bodyText == "theme for theme=dark")
        let light = try await h.get("/theme", headers: ["Cookie": "theme=light"]).collected()
        #expect(light.source == .network)
        #expect(light.bodyText == "theme for theme=light")
        #expect(try await h.get("/theme", headers: ["Cookie": "theme=dark"]).source == .cache)
    }

    @Test("one user: a 304 with a new Set-Cookie replaces the stored one")
    func oneUserNotModifiedUpdatesSetCookie() async throws {
        let h = CacheHarness(configuration: Self.configuration(.oneUser))
        h.origin(
            "/v",
            [
                (200, ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "Set-Cookie": "session=old"], "body"),
                (304, ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "Set-Cookie": "session=new"], "")
            ])
        try await h.get("/v").collected()
        h.now.advance(20)
        let revalidated = try await h.get("/v").collected()
        #expect(revalidated.source == .revalidated)
        #expect(revalidated.headers.values(for: "Set-Cookie") == ["session=new"])
        let hit = try await h.get("/v").collected()
        #expect(hit.source == .cache)
        #expect(hit.headers.values(for: "Set-Cookie") == ["session=new"])
    }

    @Test("one user on disk: Set-Cookie is stored on disk (the trade-off docs/caching.md states) and read back after a restart")
    func oneUserOnDiskSurvivesRestart() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let now = TestNow()
        let mock = MockTransport()
        mock.route("GET", "/p") { request in
            .text("page", headers: ["Cache-Control": "max-age=600", "Set-Cookie": "session=DISK", "Date": HTTPDate.format(now.value)])
        }
        do {
            let disk = try DiskStorage(directory: directory)
            let cache = HTTPCache(storage: disk, configuration: Self.configuration(.oneUser), now: { now.value })
            try await Pipeline(transport: mock, hooks: [cache]).send(URLRequest(url: URL(string: "https://origin.test/p")!)).collected()
            await disk.flush()
        }
        let cache = HTTPCache(storage: try DiskStorage(directory: directory), configuration: Self.configuration(.oneUser), now: { now.value })
        let hit = try await Pipeline(transport: mock, hooks: [cache]).send(URLRequest(url: URL(string: "https://origin.test/p")!)).collected()
        #expect(hit.source == .cache)
        #expect(hit.headers["Set-Cookie"] == "session=DISK")
        #expect(mock.count(for: "/p") == 1)
    }

    @Test(
        "a cache for many users never serves what a cache for one user stored in the same storage (its Set-Cookie, its answers to cookies), nor the other way round"
    )
    func audiencesDoNotShareEntries() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let now = TestNow()
        let mock = MockTransport()
        mock.route("GET", "/me") { request in
            .text(
                "for \(request.value(forHTTPHeaderField: "Cookie") ?? "nobody")",
                headers: ["Cache-Control": "max-age=600", "Set-Cookie": "session=ONE", "Date": HTTPDate.format(now.value)])
        }
        var withCookie = URLRequest(url: URL(string: "https://origin.test/me")!)
        withCookie.setValue("session=ONE", forHTTPHeaderField: "Cookie")
        let anonymous = URLRequest(url: URL(string: "https://origin.test/me")!)
        do {
            let disk = try DiskStorage(directory: directory)
            let one = HTTPCache(storage: disk, configuration: Self.configuration(.oneUser), now: { now.value })
            try await Pipeline(transport: mock, hooks: [one]).send(withCookie).collected()
            #expect(try await Pipeline(transport: mock, hooks: [one]).send(anonymous).collected().source == .cache)
            await disk.flush()
        }
        let many = HTTPCache(storage: try DiskStorage(directory: directory), now: { now.value })
        let answer = try await Pipeline(transport: mock, hooks: [many]).send(anonymous).collected()
        #expect(answer.source == .network && answer.bodyText == "for nobody")
        #expect(mock.count(for: "/me") == 2)
        // Both entries live side by side in the record, each answering its own audience.
        let again = HTTPCache(storage: many.storage, configuration: Self.configuration(.oneUser), now: { now.value })
        #expect(try await Pipeline(transport: mock, hooks: [again]).send(anonymous).collected().source == .cache, "its own entry is still there")
        #expect(try await Pipeline(transport: mock, hooks: [many]).send(anonymous).collected().source == .cache)
        #expect(mock.count(for: "/me") == 2)
    }

    @Test("end to end over the loopback origin: each audience through URLSessionTransport", arguments: [CacheAudience.oneUser, .manyUsers, .shared])
    func endToEnd(audience: CacheAudience) async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("e2e-audience")
        let cache = HTTPCache(configuration: Self.configuration(audience))
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = server.url(path, ["cc": "max-age=60", "header": "Set-Cookie:session=e2e; Path=/"])
        let first = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(first.source == .network)
        #expect(first.headers["Set-Cookie"] == "session=e2e; Path=/")
        let hit = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(hit.source == .cache)
        #expect(hit.headers["Set-Cookie"] == (audience == .manyUsers ? nil : "session=e2e; Path=/"))
        var withCookie = URLRequest(url: url)
        withCookie.setValue("session=e2e", forHTTPHeaderField: "Cookie")
        let cookied = try await pipeline.send(withCookie).collected()
        #expect(cookied.source == (audience == .oneUser ? .cache : .network))
        if audience == .oneUser { #expect(cookied.body == first.body) }  // (the origin's body echoes the request's fields)
        #expect(try await server.hits(path) == (audience == .oneUser ? 1 : 2))
    }
}
