import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What an adversarial review of `6979d08` found (2026-11-29; docs/reliability.md lists each finding and
/// its fix): one user's fields in another's answer, stale answers past a request's limits, a wait
/// behind a body that never ends, invalidations missed. Each test failed before its fix.
@Suite("An adversarial review of partitions, HEAD, stale-while-revalidate, invalidation", .timeLimit(.minutes(1)))
struct SecondReviewTests {
    static func refresher() -> AuthRefreshRetrierFactory {
        NilRetrierFactory().refreshingAuth { request in
            var request = request
            request.setValue("Bearer alice", forHTTPHeaderField: "Authorization")
            return request
        }
    }

    @Test("P1: a HEAD whose credential a retrier added must not put alice's fields into the anonymous GET entry")
    func headCrossesPartition() async throws {
        let h = CacheHarness(retrierFactory: Self.refresher())
        h.origin("/page", headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\""], body: "public page")
        let now = h.now
        h.mock.route("HEAD", "/page") { request in
            guard request.value(forHTTPHeaderField: "Authorization") == "Bearer alice" else {
                return RecallResponse(status: 401, headers: ["Date": HTTPDate.format(now.value)], body: Data(), url: request.url)
            }
            return RecallResponse(
                status: 200,
                headers: ["Cache-Control": "max-age=600", "ETag": "\"v1\"", "X-Account": "alice@example.com", "Date": HTTPDate.format(now.value)],
                body: Data(), url: request.url)
        }
        #expect(try await h.get("/page").collected().bodyText == "public page")
        h.now.advance(20)
        let head = try await h.pipeline.send(h.request("/page", method: "HEAD")).collected()
        #expect(head.status == 200)
        // An anonymous GET, on a pipeline without the refreshing retrier.
        let anonymous = Pipeline(transport: h.mock, hooks: [h.cache])
        let get = try await anonymous.send(h.request("/page")).collected()
        #expect(get.headers["X-Account"] == nil, "alice's field served to an anonymous caller (source \(get.source))")
    }

    @Test("P2: a 206 to a range whose credential a retrier added must not merge alice's fields into the anonymous full entry")
    func rangeCrossesPartition() async throws {
        let h = CacheHarness(retrierFactory: Self.refresher())
        let now = h.now
        h.mock.route("GET", "/file") { request in
            let date = HTTPDate.format(now.value)
            if request.value(forHTTPHeaderField: "Range") == nil {
                return RecallResponse(
                    status: 200, headers: ["Cache-Control": "max-age=10", "ETag": "\"s1\"", "Content-Length": "10", "Date": date],
                    body: Data("0123456789".utf8), url: request.url)
            }
            guard request.value(forHTTPHeaderField: "Authorization") == "Bearer alice" else {
                return RecallResponse(status: 401, headers: ["Date": date], body: Data(), url: request.url)
            }
            return RecallResponse(
                status: 206,
                headers: [
                    "Cache-Control": "max-age=600", "ETag": "\"s1\"", "Content-Range": "bytes 0-3/10", "Content-Length": "4",
                    "X-Account": "alice@example.com", "Date": date
                ],
                body: Data("0123".utf8), url: request.url)
        }
        #expect(try await h.get("/file").collected().bodyText == "0123456789")
        h.now.advance(20)
        let ranged = try await h.get("/file", headers: ["Range": "bytes=0-3"]).collected()
        #expect(ranged.status == 206)
        let anonymous = Pipeline(transport: h.mock, hooks: [h.cache])
        let get = try await anonymous.send(h.request("/file")).collected()
        #expect(get.headers["X-Account"] == nil, "alice's field served to an anonymous caller (source \(get.source))")
    }

    @Test("P3: a second subscriber of an endless, storable (no-cache) stream gets an answer while the first one reads")
    func followerOfEndlessStream() async throws {
        let h = CacheHarness()
        let writers = Locked<[ResponseBody.Writer]>([])
        h.mock.route("GET", "/events") { request in
            let (body, writer) = ResponseBody.makeStream(url: request.url)
            writers.withLock { $0.append(writer) }
            _ = writer.yield(Data("data: hello\n\n".utf8))
            return RecallResponse(
                status: 200, headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-cache"], body: body, url: request.url)
        }
        let first = try await h.get("/events")
        var iterator = first.body.makeAsyncIterator()
        #expect(try await iterator.next() != nil)
        // The first subscriber's stream stays open: the second gets its own answer meanwhile
        // (before the fix it waited for the first one's body to end: the suite's time limit).
        let second = try await h.get("/events")
        #expect(second.status == 200 && h.hits("/events") == 2)
        for writer in writers.withLock({ $0 }) { writer.finish() }
        while try await iterator.next() != nil {}
        second.body.discard()
    }

    @Test("P4: a HEAD inside stale-while-revalidate must not throw away the refreshed body and re-freshen the old one")
    func headRefreshKeepsOldBody() async throws {
        let h = CacheHarness()
        let swr: HeaderFields = ["Cache-Control": "max-age=10, stale-while-revalidate=100"]
        h.origin("/r", [(200, swr, "version 1"), (200, swr, "version 2, changed")])
        #expect(try await h.get("/r").collected().bodyText == "version 1")
        h.now.advance(15)
        let head = try await h.pipeline.send(h.request("/r", method: "HEAD")).collected()
        #expect(head.source == .stale)
        await h.cache.waitForBackgroundRefreshes()
        #expect(h.hits("/r") == 2, "the background refresh fetched version 2")
        let get = try await h.get("/r").collected()
        #expect(get.source == .cache && get.bodyText == "version 2, changed", "the refreshed body answers, not version 1 made fresh")
    }

    @Test("P5: a response fetched with URL user information, redirected to a URL without it, answers an anonymous request")
    func userinfoRedirect() async throws {
        let h = CacheHarness()
        h.mock.route("GET", "/a") { request in
            let who = request.url?.user ?? "nobody"
            return RecallResponse(
                status: 200, headers: ["Cache-Control": "max-age=600"], body: Data("data of \(who)".utf8),
                url: URL(string: "https://origin.test/b")!)
        }
        h.mock.route("GET", "/b") { request in
            RecallResponse(status: 401, headers: [:], body: Data("who are you?".utf8), url: request.url)
        }
        let alice = try await h.pipeline.send(URLRequest(url: URL(string: "https://alice:pw@origin.test/a")!)).collected()
        #expect(alice.bodyText == "data of alice")
        let anonymous = try await h.get("/b").collected()
        #expect(anonymous.bodyText == "who are you?", "alice's response served to an anonymous caller")
    }

    @Test("P6: a PUT whose Content-Location names the same origin with its default port invalidates that URL")
    func invalidationDefaultPort() async throws {
        let h = CacheHarness()
        let version = Locked(1)
        h.mock.route("GET", "/b") { request in
            RecallResponse(
                status: 200, headers: ["Cache-Control": "max-age=600"], body: Data("b v\(version.withLock { $0 })".utf8), url: request.url)
        }
        h.mock.route("PUT", "/a") { request in
            version.withLock { $0 += 1 }
            return RecallResponse(status: 200, headers: ["Content-Location": "https://origin.test:443/b"], body: Data(), url: request.url)
        }
        #expect(try await h.get("/b").collected().bodyText == "b v1")
        _ = try await h.pipeline.send(h.request("/a", method: "PUT")).collected()
        let after = try await h.get("/b").collected()
        #expect(after.bodyText == "b v2")
    }

    @Test("P7: with credentials added below, a 304 that makes the stored response private is not kept for every user")
    func unseenCredentials304Private() async throws {
        let h = CacheHarness()
        let now = h.now
        let calls = Locked(0)
        h.mock.route("GET", "/feed") { request in
            let call = calls.withLock { count -> Int in
                count += 1; return count
            }
            let date = HTTPDate.format(now.value)
            if call == 1 {
                return RecallResponse(
                    status: 200, headers: ["Cache-Control": "public, max-age=10", "ETag": "\"f1\"", "Date": date],
                    body: Data("public feed".utf8), url: request.url)
            }
            // Alice's credentials were added below the cache: the origin answers for her.
            return RecallResponse(
                status: 304, headers: ["Cache-Control": "private, max-age=600", "ETag": "\"f1\"", "X-Account": "alice", "Date": date],
                body: Data(), url: request.url)
        }
        try await HTTPCache.$credentialsMayBeAddedBelow.withValue(true) {
            #expect(try await h.get("/feed").collected().bodyText == "public feed")
            h.now.advance(20)
            let alice = try await h.get("/feed").collected()
            #expect(alice.source == .revalidated)
            let bob = try await h.get("/feed").collected()
            #expect(bob.source != .cache, "a private answer kept for every user of the unseen partition")
        }
    }

    @Test("P8: only-if-cached never contacts the origin, not even inside stale-while-revalidate")
    func onlyIfCachedRefresh() async throws {
        let h = CacheHarness()
        h.origin("/s", headers: ["Cache-Control": "max-age=10, stale-while-revalidate=100"], body: "s")
        try await h.get("/s").collected()
        h.now.advance(15)
        let cached = try await h.get("/s", headers: ["Cache-Control": "only-if-cached"]).collected()
        await h.cache.waitForBackgroundRefreshes()
        #expect(cached.source == .stale && cached.bodyText == "s", "served stale within the window")
        #expect(h.hits("/s") == 1, "only-if-cached sent a request to the origin")
    }

    @Test("P9: a successful PUT that carries a bypass field still invalidates its target (RFC 9111 §4.4 MUST)")
    func bypassedPutInvalidates() async throws {
        var configuration = CacheConfiguration()
        configuration.bypassFields = ["X-Debug"]
        let h = CacheHarness(configuration: configuration)
        let version = Locked(1)
        h.mock.route("GET", "/doc") { request in
            RecallResponse(status: 200, headers: ["Cache-Control": "max-age=600"], body: Data("v\(version.withLock { $0 })".utf8), url: request.url)
        }
        h.mock.route("PUT", "/doc") { request in
            version.withLock { $0 += 1 }
            return RecallResponse(status: 204, headers: [:], body: Data(), url: request.url)
        }
        #expect(try await h.get("/doc").collected().bodyText == "v1")
        _ = try await h.pipeline.send(h.request("/doc", method: "PUT", headers: ["X-Debug": "1"])).collected()
        let after = try await h.get("/doc").collected()
        #expect(after.bodyText == "v2")

        // A POST with the field invalidates too, and its answer is never stored for later GETs
        // (a bypass field means neither served nor stored), though it names its own URL.
        h.mock.route("POST", "/doc") { request in
            version.withLock { $0 += 1 }
            return RecallResponse(
                status: 200, headers: ["Cache-Control": "max-age=600", "Content-Location": "/doc"], body: Data("posted".utf8),
                url: request.url)
        }
        _ = try await h.pipeline.send(h.request("/doc", method: "POST", headers: ["X-Debug": "1"])).collected()
        let afterPost = try await h.get("/doc").collected()
        #expect(afterPost.source == .network && afterPost.bodyText == "v3")
    }

    @Test("P10: HEAD (credentials added below, unseen partition) must not make a shared entry private for all")
    func unseenHeadPrivate() async throws {
        let h = CacheHarness()
        let now = h.now
        h.origin("/feed2", headers: ["Cache-Control": "public, max-age=10", "ETag": "\"f1\""], body: "public feed")
        h.mock.route("HEAD", "/feed2") { request in
            RecallResponse(
                status: 200,
                headers: ["Cache-Control": "private, max-age=600", "ETag": "\"f1\"", "X-Account": "alice", "Date": HTTPDate.format(now.value)],
                body: Data(), url: request.url)
        }
        try await HTTPCache.$credentialsMayBeAddedBelow.withValue(true) {
            #expect(try await h.get("/feed2").collected().bodyText == "public feed")
            h.now.advance(20)
            _ = try await h.pipeline.send(h.request("/feed2", method: "HEAD")).collected()
            let bob = try await h.get("/feed2").collected()
            #expect(bob.source != .cache, "a private HEAD answer kept for every user of the unseen partition")
        }
    }

    @Test("P12: a 200 to HEAD does not freshen a stored 404 of the same URL")
    func headFreshensStored404() async throws {
        let h = CacheHarness()
        let exists = Locked(false)
        let now = h.now
        h.mock.route(nil, "/item") { request in
            let date = HTTPDate.format(now.value)
            guard exists.withLock({ $0 }) else {
                return RecallResponse(status: 404, headers: ["Cache-Control": "max-age=10", "Date": date], body: Data("not found".utf8), url: request.url)
            }
            return RecallResponse(
                status: 200, headers: ["Cache-Control": "max-age=600", "Date": date],
                body: request.httpMethod == "HEAD" ? Data() : Data("the item".utf8), url: request.url)
        }
        #expect(try await h.get("/item").collected().status == 404)
        exists.withLock { $0 = true }
        h.now.advance(20)
        let head = try await h.pipeline.send(h.request("/item", method: "HEAD")).collected()
        #expect(head.status == 200)
        let get = try await h.get("/item").collected()
        #expect(get.status == 200, "a stored 404 served fresh after the origin answered HEAD with 200")
    }

    @Test(
        "P13: a request's max-age / max-stale / min-fresh limit is not overridden by stale-while-revalidate",
        arguments: ["max-age=5", "max-stale=1", "min-fresh=5"])
    func requestLimitsVsSWR(directive: String) async throws {
        let h = CacheHarness()
        h.origin(
            "/w",
            [
                (200, ["Cache-Control": "max-age=10, stale-while-revalidate=100"], "old"),
                (200, ["Cache-Control": "max-age=10, stale-while-revalidate=100"], "new")
            ])
        try await h.get("/w").collected()
        h.now.advance(30)
        let answer = try await h.get("/w", headers: ["Cache-Control": directive]).collected()
        await h.cache.waitForBackgroundRefreshes()
        #expect(answer.source != .stale, "\(directive): a response 30 s old (20 s stale) served")
    }
}
