import Foundation
@testable import Recall
@testable import RecallServices
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #13, point 1: a plain `URLSession` with `RecallURLProtocol` in its configuration gets
/// the pipeline's cache and retries, against the loopback origin, with call sites unchanged.
/// Each test keeps its routes in a subclass of its own, so tests running in parallel never
/// take one another's requests.
@Suite("RecallURLProtocol: an unmodified URLSession through a pipeline", .timeLimit(.minutes(1)))
struct RecallURLProtocolTests {
    /// A session whose configuration sends every request through `pipeline` by `protocolClass`.
    func session(_ pipeline: Pipeline, protocolClass: RecallURLProtocol.Type, hosts: [String]? = nil) throws -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        try configuration.sendThroughRecall(pipeline, hosts: hosts, protocolClass: protocolClass)
        return URLSession(configuration: configuration)
    }

    func status(_ response: URLResponse) -> Int { (response as? HTTPURLResponse)?.statusCode ?? -1 }

    @Test("hits are answered by the cache and revalidations are 304s the session never sees")
    func hitsAndRevalidations() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let server = try await OriginServer.shared.value
        let cache = HTTPCache()
        let session = try session(Pipeline(transport: URLSessionTransport(), hooks: [cache]), protocolClass: Routes.self)
        let fresh = server.url(OriginServer.uniquePath("protocol-fresh"), ["cc": "max-age=600", "body": "hello"])
        let (first, firstResponse) = try await session.data(from: fresh)
        let (second, secondResponse) = try await session.data(from: fresh)
        #expect(String(decoding: first, as: UTF8.self) == "hello" && second == first)
        #expect(status(firstResponse) == 200 && status(secondResponse) == 200)
        #expect((secondResponse as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Control") == "max-age=600")
        #expect(try await server.hits(fresh.path) == 1, "the second answer came from Recall's cache")
        let validated = server.url(OriginServer.uniquePath("protocol-etag"), ["cc": "max-age=0", "etag": "v1", "body": "tagged"])
        _ = try await session.data(from: validated)
        let (again, againResponse) = try await session.data(from: validated)
        #expect(status(againResponse) == 200 && String(decoding: again, as: UTF8.self) == "tagged")
        #expect(try await server.hits(validated.path) == 2)
        #expect(cache.statistics.hits == 1 && cache.statistics.revalidated == 1)
    }

    @Test("a 503 is retried by the pipeline's retrier; the session sees the 200")
    func retriesAfter503() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let server = try await OriginServer.shared.value
        let pipeline = Pipeline(
            transport: URLSessionTransport(),
            retrierFactory: .exponentialBackoff(base: .milliseconds(1), maxAttempts: 3, budget: nil))
        let session = try session(pipeline, protocolClass: Routes.self)
        let flaky = server.url(OriginServer.uniquePath("protocol-flaky"), ["fail_first": "2", "body": "recovered"])
        let (data, response) = try await session.data(from: flaky)
        #expect(status(response) == 200 && String(decoding: data, as: UTF8.self) == "recovered")
        #expect(try await server.hits(flaky.path) == 3)
    }

    @Test("offline: the origin stops listening (connection refused) and the stored response answers")
    func offlineAnswer() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let script = try #require(Bundle.module.url(forResource: "origin_server", withExtension: "py"))
        var origin: LoopbackOrigin? = try LoopbackOrigin(script: script)
        // (The origin closes each connection after its answer: none is left in libcurl's pool.)
        let url = try #require(origin?.url("/offline", [("cc", "max-age=0"), ("body", "kept"), ("header", "Connection:close")]))
        let cache = HTTPCache()
        let session = try session(Pipeline(transport: URLSessionTransport(), hooks: [cache]), protocolClass: Routes.self)
        _ = try await session.data(from: url)
        origin = nil  // the server exits (stopping waits for it): its port refuses connections
        let (data, response) = try await session.data(from: url)
        #expect(status(response) == 200 && String(decoding: data, as: UTF8.self) == "kept")
        #expect(cache.statistics.staleServed[.disconnected] == 1)
    }

    @Test("a request body reaches the origin; a POST is not cached")
    func postBody() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let server = try await OriginServer.shared.value
        let session = try session(Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache()]), protocolClass: Routes.self)
        var request = URLRequest(url: server.url(OriginServer.uniquePath("protocol-post"), ["echo": "1", "cc": "max-age=600"]))
        request.httpMethod = "POST"
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(repeating: UInt8(ascii: "b"), count: 100_000)
        for _ in 0..<2 {
            let (data, response) = try await session.data(for: request)
            #expect(status(response) == 200 && data == request.httpBody)
        }
        #expect(try await server.hits(request.url!.path) == 2)
    }

    @Test("a body given as a stream (as Apple's Foundation hands it to a URLProtocol) is read whole, within the limit")
    func streamedBody() throws {
        var request = URLRequest(url: URL(string: "http://origin.test/upload")!)
        let bytes = Data.repeating(Data((0..<251).map { UInt8($0) }), count: 200_000)
        request.httpBodyStream = InputStream(data: bytes)
        let prepared = try RecallURLProtocol.withBody(request, isUpload: false, limit: RecallURLProtocol.maxRequestBodyBytes)
        #expect(prepared.httpBody == bytes && prepared.httpBodyStream == nil)
        #expect(throws: URLError.self) { try RecallURLProtocol.read(InputStream(data: bytes), limit: 1_000) }
        #expect(throws: RecallURLProtocolError.uploadBodyUnavailable) {
            try RecallURLProtocol.withBody(
                URLRequest(url: URL(string: "http://origin.test/upload")!), isUpload: true, limit: RecallURLProtocol.maxRequestBodyBytes)
        }
    }

    @Test("errors reach the session as URLErrors an unmodified client understands, Recall's error underneath")
    func sessionErrors() throws {
        let url = URL(string: "http://origin.test/x")
        let timedOut = RecallURLProtocol.sessionError(TransportError(.timedOut, message: "attempt timed out"), url: url)
        #expect(timedOut.code == .timedOut)
        #expect((timedOut.userInfo[NSUnderlyingErrorKey] as? NSError) != nil)
        #expect(timedOut.userInfo[NSURLErrorFailingURLErrorKey] as? URL == url)
        #expect(RecallURLProtocol.sessionError(RetryError.deadlineExceeded(deadline: .seconds(1), attempts: 3), url: url).code == .timedOut)
        #expect(RecallURLProtocol.sessionError(TransportError(.cannotConnect), url: url).code == .cannotConnectToHost)
        #expect(RecallURLProtocol.sessionError(TransportError(.dnsFailure), url: url).code == .cannotFindHost)
        #expect(
            RecallURLProtocol.sessionError(TransportError(.other, urlErrorCode: URLError.notConnectedToInternet.rawValue), url: url).code
                == .notConnectedToInternet)
        #expect(RecallURLProtocol.sessionError(URLError(.badServerResponse), url: url).code == .badServerResponse)
        #expect(RecallURLProtocol.sessionError(CocoaError(.fileNoSuchFile), url: url).code == .unknown)
    }

    @Test("cancelling the session's task cancels the pipeline's work")
    func cancellation() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let server = try await OriginServer.shared.value
        let seen = Locked<[String]>([])
        let started = Locked(false)
        let inner = ClosureTransport { request in
            started.withLock { $0 = true }
            do {
                return try await URLSessionTransport().send(request)
            } catch {
                seen.withLock { $0.append(Task.isCancelled ? "cancelled" : "\(error)") }
                throw error
            }
        }
        let session = try session(Pipeline(transport: inner), protocolClass: Routes.self)
        // The origin holds its answer for 30 s, far longer than a loaded machine takes to pass the
        // cancellation on (with 3 s, a slow run could see the attempt answered instead).
        let slowPath = OriginServer.uniquePath("protocol-slow")
        let slow = server.url(slowPath, ["delay_ms": "30000"])
        let call = Task { try await session.data(from: slow) }
        try await waitUntil("the pipeline's attempt started") { started.withLock { $0 } }
        try await waitUntil("the attempt is on the wire") { try await server.hits(slowPath) > 0 }
        call.cancel()
        let outcome = await call.result
        #expect(throws: URLError.self) { try outcome.get() }
        // Waits for the attempt's end: at the cancellation, or only at the origin's answer (30 s)
        // when it was left to run — then this gives up first.
        try? await waitUntil("the attempt ended", seconds: 20) { !seen.withLock { $0.isEmpty } }
        #expect(seen.withLock { $0 } == ["cancelled"], "the pipeline's attempt was cancelled, not left to run for 30 s")
    }

    @Test("requests for hosts no route names pass to the network untouched; routes are removable; URLCache only for others")
    func unroutedHostsPass() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        final class OtherRoutes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        final class SomeRoutes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let server = try await OriginServer.shared.value
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let session = try session(pipeline, protocolClass: Routes.self, hosts: ["*.example.test", "api.example.test"])
        let url = server.url(OriginServer.uniquePath("protocol-unrouted"), ["cc": "max-age=600"])
        _ = try await session.data(from: url)
        _ = try await session.data(from: url)
        #expect(try await server.hits(url.path) == 2 && cache.statistics.stores == 0, "not Recall's to cache")
        let id = try Routes.mine.add(pipeline, hosts: ["127.0.0.1:\(server.port)"])
        _ = try await session.data(from: url)
        _ = try await session.data(from: url)
        #expect(try await server.hits(url.path) == 3 && cache.statistics.hits == 1)
        Routes.mine.remove(id)
        _ = try await session.data(from: url)
        #expect(try await server.hits(url.path) == 4)
        let every = URLSessionConfiguration.default, some = URLSessionConfiguration.default
        try every.sendThroughRecall(pipeline, protocolClass: OtherRoutes.self)
        try some.sendThroughRecall(pipeline, hosts: ["other.example.test"], protocolClass: SomeRoutes.self)
        #expect(every.urlCache == nil, "Recall is the cache of a session it takes whole")
        #expect(some.urlCache != nil, "the hosts it does not take keep the session's URLCache")
        let route = try #require(Routes.mine.routes.first)
        #expect(route.matches(URL(string: "https://cdn.example.test/x")!) && route.matches(URL(string: "https://API.example.test/")!))
        #expect(!route.matches(URL(string: "https://example.test/")!) && !route.matches(URL(string: "https://api.example.test.evil/")!))
    }

    @Test("a pipeline whose transport's session lists the protocol is refused: its requests would loop")
    func loopRefused() throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [Routes.self]
        let looping = Pipeline(transport: URLSessionTransport(session: URLSession(configuration: configuration)))
        #expect(throws: RecallURLProtocolError.loop) { try Routes.mine.add(looping) }
        #expect(Routes.mine.routes.isEmpty)
        #expect(RecallURLProtocolError.loop.description.contains("session of its own"))
    }

    @Test("Predix: an unmodified URLSession reaches local services at http://pmapi/<id>/… and the network beside them")
    func serviceRouterThroughURLSession() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let server = try await OriginServer.shared.value
        let router = ServiceRouter(fallback: URLSessionTransport())
        try await router.register(as: "Inventory") { request in
            .text("\(request.identifier) \(request.path) \(request.method) \(String(decoding: request.body, as: UTF8.self))")
        }
        let session = try session(Pipeline(transport: router), protocolClass: Routes.self)
        let (local, response) = try await session.data(from: URL(string: "http://pmapi/inventory/items/7")!)
        #expect(status(response) == 200 && String(decoding: local, as: UTF8.self) == "Inventory /items/7 GET ")
        var post = URLRequest(url: URL(string: "http://PMAPI/Inventory/items")!)
        post.httpMethod = "POST"
        post.httpBody = Data("new".utf8)
        let (created, _) = try await session.data(for: post)
        #expect(String(decoding: created, as: UTF8.self) == "Inventory /items POST new")
        let (_, missing) = try await session.data(from: URL(string: "http://pmapi/nothing/here")!)
        #expect(status(missing) == 501, "no service under that identifier")
        let remote = server.url(OriginServer.uniquePath("protocol-router"))
        let (_, remoteResponse) = try await session.data(from: remote)
        let remoteHits = try await server.hits(remote.path)
        #expect(status(remoteResponse) == 200 && remoteHits == 1)
    }

    /// Issue #36, point 4: "call sites unchanged" means the session behaves as before.
    @Test("the session's additional header fields reach the pipeline; the request's own fields win")
    func sessionHeaders() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let seen = Locked<[String: String]>([:])
        let inner = ClosureTransport { request in
            seen.withLock { $0 = request.allHTTPHeaderFields ?? [:] }
            return .text("ok")
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["Authorization": "Bearer session", "X-Client": "app"]
        try configuration.sendThroughRecall(Pipeline(transport: inner), protocolClass: Routes.self)
        let session = URLSession(configuration: configuration)
        _ = try await session.data(from: URL(string: "https://headers.test/a")!)
        #expect(seen.withLock { $0["Authorization"] } == "Bearer session")
        #expect(seen.withLock { $0["X-Client"] } == "app")
        var own = URLRequest(url: URL(string: "https://headers.test/b")!)
        own.setValue("Bearer mine", forHTTPHeaderField: "Authorization")
        _ = try await session.data(for: own)
        #expect(seen.withLock { $0["Authorization"] } == "Bearer mine")
        #expect(seen.withLock { $0["X-Client"] } == "app")
    }

    @Test("the session's timeoutIntervalForRequest bounds a load through the pipeline")
    func sessionTimeout() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let inner = ClosureTransport { _ in
            try await untilCancelled()  // far beyond the session's limit
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 1
        try configuration.sendThroughRecall(Pipeline(transport: inner), protocolClass: Routes.self)
        let session = URLSession(configuration: configuration)
        let start = ContinuousClock.now
        let outcome = await Task { try await session.data(from: URL(string: "https://timeout.test/slow")!) }.result
        #expect(throws: URLError.self) { try outcome.get() }
        if case .failure(let error as URLError) = outcome { #expect(error.code == .timedOut) }
        // At 1 s, not at the transport's 60 s (a generous bound for a busy machine).
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    /// Issue #36, point 17: routes are process-wide, so one module's catch-all route took over
    /// every other module's Recall sessions.
    @Test("a route that would take another's requests is refused: every host beside others, or one host twice")
    func routeConflicts() throws {
        let routes = URLProtocolRoutes()
        let pipeline = Pipeline(transport: MockTransport())
        let billing = try routes.add(pipeline, hosts: ["billing.example.com"])
        #expect(throws: RecallURLProtocolError.routeConflict) { try routes.add(pipeline) }
        #expect(throws: RecallURLProtocolError.routeConflict) { try routes.add(pipeline, hosts: ["BILLING.example.com", "x.test"]) }
        try routes.add(pipeline, hosts: ["search.example.com"])  // another host: fine
        routes.removeAll()
        try routes.add(pipeline)
        #expect(throws: RecallURLProtocolError.routeConflict) { try routes.add(pipeline, hosts: ["api.example.com"]) }
        #expect(routes.routes.count == 1)
        // The same pipeline for the same hosts again (another configuration of the same
        // sessions) is the route already there.
        routes.removeAll()
        let first = try routes.add(pipeline, hosts: ["a.test"])
        #expect(try routes.add(pipeline, hosts: ["A.test"]) == first)
        #expect(throws: RecallURLProtocolError.routeConflict) { try routes.add(Pipeline(transport: MockTransport()), hosts: ["a.test"]) }
        _ = billing
    }

    @Test("issue #53, point 5: host patterns that share any request are refused in either order; patterns that share none are kept")
    func routeOverlaps() throws {
        let overlapping: [(String, String)] = [
            ("*.example.com", "api.example.com"), ("api.example.com", "api.example.com:8443"), ("*.com", "api.example.com"),
            ("*.com", "*.example.com"), ("*.example.com", "deep.api.example.com:1"), ("API.example.com:8443", "api.example.com:8443"),
            ("::1", "[::1]:8080"), ("127.0.0.1", "127.0.0.1:8080")
        ]
        let apart: [(String, String)] = [
            ("api.example.com:80", "api.example.com:81"), ("*.a.test", "*.b.test"), ("*.example.com", "example.com"),
            ("api.example.com", "api.example.org"), ("*.example.com", "example.com:8443"), ("::1", "::2"),
            ("[::1]:8080", "[::1]:8081")
        ]
        let pipeline = Pipeline(transport: MockTransport())
        for (first, second) in overlapping + overlapping.map({ ($0.1, $0.0) }) {
            let routes = URLProtocolRoutes()
            try routes.add(pipeline, hosts: [first])
            #expect(throws: RecallURLProtocolError.routeConflict, "\(second) after \(first)") {
                try routes.add(Pipeline(transport: MockTransport()), hosts: [second])
            }
            #expect(routes.routes.count == 1)
        }
        for (first, second) in apart + apart.map({ ($0.1, $0.0) }) {
            let routes = URLProtocolRoutes()
            try routes.add(pipeline, hosts: [first])
            try routes.add(Pipeline(transport: MockTransport()), hosts: [second])
            #expect(routes.routes.count == 2, "\(second) after \(first)")
        }
    }

    @Test("issue #53, point 5: through a real URLSession, a module's session for api.example.com keeps its pipeline when another module asks for *.example.com")
    func overlappingModuleRefused() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let moduleA = MockTransport(), moduleB = MockTransport()
        moduleA.route("GET", "/who", .text("A"))
        moduleB.route("GET", "/who", .text("B"))
        let session = try session(Pipeline(transport: moduleA), protocolClass: Routes.self, hosts: ["api.example.com"])
        #expect(throws: RecallURLProtocolError.routeConflict) {
            try URLSessionConfiguration.ephemeral.sendThroughRecall(Pipeline(transport: moduleB), hosts: ["*.example.com"], protocolClass: Routes.self)
        }
        let (data, _) = try await session.data(from: URL(string: "https://api.example.com/who")!)
        #expect(String(decoding: data, as: UTF8.self) == "A")
        #expect(moduleB.requests.isEmpty)
    }
}
