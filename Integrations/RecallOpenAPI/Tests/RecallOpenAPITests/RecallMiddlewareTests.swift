import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import HTTPTypes
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import OpenAPIURLSession
import Recall
import RecallOpenAPI
import RecallTesting
import Synchronization
import Testing

/// Issue #13, points 1 and 2: a real generated client (`Generated/`, from `openapi.yaml`) over
/// swift-openapi-urlsession against the loopback origin — with `RecallMiddleware`, and with no
/// middleware at all over a session that sends through `RecallURLProtocol`.
@Suite("OpenAPI: a generated client with Recall", .timeLimit(.minutes(1)))
struct RecallMiddlewareTests {
    /// A loopback origin of this test's own (hit counts per path are its own too).
    static func origin() throws -> LoopbackOrigin {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/RecallTests/Support/origin_server.py")
        return try LoopbackOrigin(script: script)
    }

    /// The length of `object` as the generated client encodes JSON (pretty-printed, keys sorted).
    static func encodedLength(_ object: [String: String]) -> Int {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(object).count) ?? -1
    }

    func client(_ origin: LoopbackOrigin, _ middleware: RecallMiddleware) -> Client {
        Client(serverURL: origin.url("/"), transport: OpenAPIURLSession.URLSessionTransport(), middlewares: [middleware])
    }

    func echo(_ output: Operations.listItems.Output) throws -> Components.Schemas.Echo { try output.ok.body.json }

    @Test("hits come from the cache and revalidations are merged 304s; the client never knows")
    func hitsAndRevalidations() async throws {
        let origin = try Self.origin()
        let cache = HTTPCache()
        let client = client(origin, RecallMiddleware(hooks: [cache], credentialsMayBeAddedBelow: false))
        let first = try echo(await client.listItems(query: .init(cc: "max-age=600")))
        let second = try echo(await client.listItems(query: .init(cc: "max-age=600")))
        #expect(first.hit == 1 && second.hit == 1, "the second answer is the stored first one")
        let tagged = try await client.getItem(path: .init(id: "7"), query: .init(cc: "max-age=0", etag: "v1")).ok.body.json
        let again = try await client.getItem(path: .init(id: "7"), query: .init(cc: "max-age=0", etag: "v1")).ok.body.json
        #expect(tagged.path == "/items/7" && again.hit == 1, "a 304 confirmed the stored body")
        #expect(cache.statistics.hits == 1 && cache.statistics.revalidated == 1)
    }

    @Test("a 503 is retried by Recall's retrier under the generated client")
    func retries() async throws {
        let origin = try Self.origin()
        let middleware = RecallMiddleware(retrierFactory: .exponentialBackoff(base: .milliseconds(1), maxAttempts: 3, budget: nil))
        let answer = try echo(await client(origin, middleware).listItems(query: .init(fail_first: "2")))
        #expect(answer.hit == 3)
    }

    @Test("a POST goes out with its JSON body, and invalidates what the cache holds for the URL")
    func postInvalidates() async throws {
        let origin = try Self.origin()
        // GET /items (the POST's own URL) is cached by a lifetime rule: the origin sends no freshness.
        var configuration = CacheConfiguration()
        configuration.lifetimes = [LifetimeRule("127.0.0.1/items", .seconds(600))]
        let cache = HTTPCache(configuration: configuration)
        let client = client(origin, RecallMiddleware(hooks: [cache], credentialsMayBeAddedBelow: false))
        let stored = try echo(await client.listItems())
        #expect(try echo(await client.listItems()).hit == stored.hit, "a hit before the POST")
        let created = try await client.createItem(body: .json(.init(name: "lamp"))).ok.body.json
        #expect(created.method == "POST" && created.bodyLength == Self.encodedLength(["name": "lamp"]))
        let after = try echo(await client.listItems())
        #expect(after.hit == created.hit + 1, "GET /items after the POST went to the origin")
        #expect(cache.statistics.invalidations == 1)
    }

    @Test("a refused connection reaches the retrier as itself (not wrapped by the runtime): retried, then the offline answer")
    func transportFailure() async throws {
        let origin = try Self.origin()
        let attempts = Mutex(0)
        var middleware = RecallMiddleware(
            hooks: [HTTPCache()],
            retrierFactory: .exponentialBackoff(base: .milliseconds(1), maxAttempts: 3, budget: nil),
            credentialsMayBeAddedBelow: false)
        middleware.observer = { event, _ in
            if case .attemptStarted = event { attempts.withLock { $0 += 1 } }
        }
        // Stored while the origin is up, stale at once, then the origin goes away.
        let online = try await client(origin, middleware).getItem(path: .init(id: "gone"), query: .init(cc: "max-age=0")).ok.body.json
        let port = origin.port
        origin.stop()  // (it returns once the server has exited: its port refuses connections)
        let offline = Client(
            serverURL: URL(string: "http://127.0.0.1:\(port)/")!, transport: OpenAPIURLSession.URLSessionTransport(),
            middlewares: [middleware])
        attempts.withLock { $0 = 0 }
        let answer = try await offline.getItem(path: .init(id: "gone"), query: .init(cc: "max-age=0")).ok.body.json
        #expect(answer.hit == online.hit, "the stored answer, served because the origin cannot be reached")
        #expect(attempts.withLock { $0 } == 3, "a refused connection is retried")
    }

    @Test("stale-while-revalidate under a middleware refreshes before answering (next never outlives the call)")
    func staleWhileRevalidate() async throws {
        let origin = try Self.origin()
        let date = ShiftedDate()
        let client = client(origin, RecallMiddleware(hooks: [HTTPCache(now: date.now)], credentialsMayBeAddedBelow: false))
        let cc = "max-age=0, stale-while-revalidate=60"
        _ = try await client.getItem(path: .init(id: "swr"), query: .init(cc: cc))
        date.advance(by: 2)  // stale now (the origin's Date has one-second steps: ages are whole seconds)
        let refreshed = try await client.getItem(path: .init(id: "swr"), query: .init(cc: cc)).ok.body.json
        #expect(refreshed.hit == 2)
    }

    @Test("a client built on a session that sends through RecallURLProtocol gets the cache without any middleware")
    func throughURLProtocol() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let origin = try Self.origin()
        let cache = HTTPCache()
        let configuration = URLSessionConfiguration.ephemeral
        try configuration.sendThroughRecall(Pipeline(transport: Recall.URLSessionTransport(), hooks: [cache]), protocolClass: Routes.self)
        let transport = OpenAPIURLSession.URLSessionTransport(configuration: .init(session: URLSession(configuration: configuration)))
        let client = Client(serverURL: origin.url("/"), transport: transport)
        let first = try echo(await client.listItems(query: .init(cc: "max-age=600")))
        let second = try echo(await client.listItems(query: .init(cc: "max-age=600")))
        #expect(first.hit == 1 && second.hit == 1 && cache.statistics.hits == 1)
        let created = try await client.createItem(body: .json(.init(name: "desk"))).ok.body.json
        #expect(created.bodyLength == Self.encodedLength(["name": "desk"]), "the body went through the protocol")
    }

    // MARK: The middleware alone, with a scripted next

    /// A `next` that answers 503 first and 200 after, counting calls and the bodies it got.
    final class Scripted: Sendable {
        let calls = Mutex<[String]>([])
        func next(_ request: HTTPRequest, _ body: HTTPBody?, _ baseURL: URL) async throws -> (HTTPResponse, HTTPBody?) {
            var text = ""
            if let body { text = try await String(collecting: body, upTo: 1 << 20) }
            let count = calls.withLock {
                $0.append(text); return $0.count
            }
            return (HTTPResponse(status: count == 1 ? .serviceUnavailable : .ok), HTTPBody("done"))
        }
    }

    func put(_ body: HTTPBody, through middleware: RecallMiddleware, _ scripted: Scripted) async throws -> HTTPResponse {
        let request = HTTPRequest(method: .put, scheme: "http", authority: "api.test", path: "/items/1")
        return try await middleware.intercept(
            request, body: body, baseURL: URL(string: "http://api.test")!, operationID: "putItem",
            next: scripted.next
        ).0
    }

    @Test("a body that can be sent again is retried with the same bytes; a one-shot stream is sent once, never buffered")
    func retriesOnlyReplayableBodies() async throws {
        let middleware = RecallMiddleware(retrierFactory: .exponentialBackoff(base: .zero, maxAttempts: 3, budget: nil))
        let replayable = Scripted()
        #expect(try await put(HTTPBody("payload"), through: middleware, replayable).status == .ok)
        #expect(replayable.calls.withLock { $0 } == ["payload", "payload"])
        let once = Scripted()
        let stream = AsyncStream<HTTPBody.ByteChunk> { continuation in
            continuation.yield(ArraySlice("streamed".utf8))
            continuation.finish()
        }
        let single = HTTPBody(stream, length: .unknown, iterationBehavior: .single)
        #expect(try await put(single, through: middleware, once).status == .serviceUnavailable)
        #expect(once.calls.withLock { $0 } == ["streamed"], "sent once: a single-use body cannot be sent again")
        let tooLarge = Scripted()
        let small = RecallMiddleware(retrierFactory: .exponentialBackoff(base: .zero, maxAttempts: 3, budget: nil), maxRequestBodyBytes: 4)
        #expect(try await put(HTTPBody("payload"), through: small, tooLarge).status == .serviceUnavailable)
        #expect(tooLarge.calls.withLock { $0 } == ["payload"], "over the limit: passed on, not buffered for retries")
    }

    @Test("requests and responses convert both ways: path and query under the base URL's path, fields, status")
    func conversions() throws {
        var fields = HTTPFields()
        fields[.accept] = "application/json"
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items/7?cc=max-age%3D60", headerFields: fields)
        let urlRequest = try URLRequest(request, baseURL: URL(string: "https://api.test/v1/")!)
        #expect(urlRequest.url?.absoluteString == "https://api.test/v1/items/7?cc=max-age%3D60")
        #expect(urlRequest.value(forHTTPHeaderField: "Accept") == "application/json" && urlRequest.httpMethod == "GET")
        let response = HTTPResponse(RecallResponse(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=60"]))
        #expect(response.status.code == 304 && response.headerFields[.eTag] == "\"v1\"")
        #expect(HeaderFields(response.headerFields)["cache-control"] == "max-age=60")
    }

    /// Adds one user's bearer token, as an app's auth middleware does.
    struct BearerAuth: ClientMiddleware {
        var token: String
        func intercept(
            _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
            next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
        ) async throws -> (HTTPResponse, HTTPBody?) {
            var request = request
            request.headerFields[.authorization] = "Bearer \(token)"
            return try await next(request, body, baseURL)
        }
    }

    func client(_ origin: LoopbackOrigin, _ middlewares: [any ClientMiddleware]) -> Client {
        Client(serverURL: origin.url("/"), transport: OpenAPIURLSession.URLSessionTransport(), middlewares: middlewares)
    }

    /// Issue #36, point 1: `[RecallMiddleware, BearerAuth]` — the token is added below the
    /// cache, which sees every user's request as the same anonymous one.
    @Test("an auth middleware after RecallMiddleware: one user's private answer never reaches another; public answers still cache")
    func authAddedBelow() async throws {
        let origin = try Self.origin()
        let cache = HTTPCache()
        let alice = client(origin, [RecallMiddleware(hooks: [cache]), BearerAuth(token: "alice")])
        let bob = client(origin, [RecallMiddleware(hooks: [cache]), BearerAuth(token: "bob")])
        let inbox = try echo(await alice.listItems(query: .init(cc: "private, max-age=600")))
        let other = try echo(await bob.listItems(query: .init(cc: "private, max-age=600")))
        #expect(other.hit == inbox.hit + 1, "bob's request went to the origin, not to alice's stored answer")
        let shared = try await alice.getItem(path: .init(id: "9"), query: .init(cc: "public, max-age=600")).ok.body.json
        let again = try await bob.getItem(path: .init(id: "9"), query: .init(cc: "public, max-age=600")).ok.body.json
        #expect(again.hit == shared.hit, "a public answer is shared")
    }

    @Test("RecallMiddleware after the auth middleware: each user's private answers are cached for that user alone")
    func authAddedAbove() async throws {
        let origin = try Self.origin()
        let cache = HTTPCache()
        let recall = RecallMiddleware(hooks: [cache], credentialsMayBeAddedBelow: false)
        let alice = client(origin, [BearerAuth(token: "alice"), recall])
        let bob = client(origin, [BearerAuth(token: "bob"), recall])
        let first = try echo(await alice.listItems(query: .init(cc: "private, max-age=600")))
        let second = try echo(await alice.listItems(query: .init(cc: "private, max-age=600")))
        #expect(second.hit == first.hit, "alice's second request is a hit")
        let other = try echo(await bob.listItems(query: .init(cc: "private, max-age=600")))
        #expect(other.hit == first.hit + 1, "bob's is not")
        #expect(cache.statistics.hits == 1)
    }

    @Test(
        "64 MiB through the generated client over AsyncHTTPClient: no cap, every byte in order, in chunks, in bounded memory; the cache keeps a body that fits")
    func largeDownload() async throws {
        let origin = try Self.origin()
        let cache = HTTPCache(storage: MemoryStorage(byteLimit: 64 << 20))  // (an entry limit of 16 MiB)
        // (AsyncHTTPClient's transport streams; URLSession's buffers whole bodies on Linux.)
        let client = Client(serverURL: origin.url("/"), transport: AsyncHTTPClientTransport(), middlewares: [RecallMiddleware(hooks: [cache])])
        let peak = PeakMemory()
        let large = try await client.download(query: .init(stream: "\(64 << 20)", cc: "public, max-age=600")).ok.body.binary
        var received = 0, matches = true
        for try await chunk in large {
            matches = matches && chunk.enumerated().allSatisfy { $0.element == UInt8(truncatingIfNeeded: received + $0.offset) }
            received += chunk.count
        }
        #expect(received == 64 << 20 && matches)
        #expect(cache.storage.statistics.count == 0, "longer than the storage's entry limit: streamed, not kept")
        if let added = peak.addedMiB {
            if ProcessInfo.processInfo.environment["RECALL_REPORT_MEMORY"] != nil { print("openapi-64mib-peak-added-mib \(added)") }
            #expect(added < 64, "the process's peak rose \(added) MiB for a 64 MiB body")
        }

        let small = try await client.download(query: .init(stream: "\(1 << 20)", cc: "public, max-age=600")).ok.body.binary
        let first = try await Data(collecting: small, upTo: 2 << 20)
        let again = try await Data(
            collecting: try await client.download(query: .init(stream: "\(1 << 20)", cc: "public, max-age=600")).ok.body.binary,
            upTo: 2 << 20)
        #expect(first.count == 1 << 20 && again == first && cache.statistics.hits == 1)
    }
}

/// The process's peak resident memory added since it was made, from the kernel's high-water mark
/// (reset through /proc/self/clear_refs); `nil` where there is none (not Linux).
struct PeakMemory {
    private let baseline: Double?

    init() {
        #if os(Linux)
            try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
            baseline = Self.read("VmRSS")
        #else
            baseline = nil
        #endif
    }

    var addedMiB: Int? {
        guard let baseline, let peak = Self.read("VmHWM") else { return nil }
        return Int(((peak - baseline) / 1024).rounded(.up))
    }

    private static func read(_ field: String) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Double($0) }
        }
        return nil
    }
}
