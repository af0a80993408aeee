import Foundation
@testable import Recall
@testable import RecallServices
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Issue #16: code written as Squid, Decree, Echo and Predix users write it, run against the
// loopback origin through URLSession (and the mock transport where a rule is checked alone).

/// What the loopback origin says about the request it got (its default JSON body).
struct OriginEcho: Decodable {
    var method: String
    var path: String
    var query: String
    var headers: [String: String]
    var bodyLength: Int

    func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}

/// Decree's `ErrorResponse`: what the API sends with an error status.
struct APIError: Decodable, Sendable, Equatable {
    var message: String
}

/// A service on the loopback origin, written as a Decree/Squid user would.
struct Loopback: HttpService {
    typealias ErrorResponse = APIError
    static let transport = URLSessionTransport()
    static let cache = HTTPCache()
    static let errors = Locked<[String]>([])
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase  // Squid's default
        return decoder
    }()

    let port: Int
    var authorization: Authorization?
    var apiUrl: String { "http://127.0.0.1:\(port)" }
    var transport: any Transport { Self.transport }
    var hooks: [any ServiceHook] { [Self.cache] }
    var decoder: JSONDecoder { Self.decoder }
    func process(_ error: any Error) { Self.errors.withLock { $0.append("\(error)") } }
}

/// Decree: no method, no authorization requirement declared.
struct WhoAmI: OutEndpoint {
    typealias Service = Loopback
    typealias Output = OriginEcho
    let name: String
    var path: String { name }
}

/// The first edition's spelling: an untyped string method.
struct StringMethod: OutEndpoint {
    typealias Service = Loopback
    typealias Output = OriginEcho
    static let method = "POST"
    let name: String
    var path: String { name }
}

/// Decree's spelling: `Method`.
struct DecreeMethod: OutEndpoint {
    typealias Service = Loopback
    typealias Output = OriginEcho
    static let method: Method = .put
    let name: String
    var path: String { name }
}

/// Decree's download example: the raw bytes.
struct Download: OutEndpoint {
    typealias Service = Loopback
    typealias Output = Data
    let name: String
    var path: String { "\(name)?size=16" }
}

/// A text answer, as text.
struct Note: OutEndpoint {
    typealias Service = Loopback
    typealias Output = String
    let name: String
    var path: String { "\(name)?body=h%C3%A9llo" }
}

/// An endpoint whose answer is an error with a JSON body.
struct Rejected: OutEndpoint {
    typealias Service = Loopback
    typealias Output = OriginEcho
    let name: String
    let body: String
    var path: String { "\(name)?status=422&header=Content-Type:application/json&body=\(body)" }
}

/// Squid: header fields (as a dictionary), a query beside a JSON body, accepted statuses.
struct Upload: InOutEndpoint {
    typealias Service = Loopback
    struct Input: Encodable, Sendable { var title: String }
    typealias Output = OriginEcho
    static let method: RequestMethod = .post
    static var acceptedStatuses: StatusSet { [200, 201] }
    let name: String
    var path: String { name }
    var header: [String: String] { ["X-Trace": "t-1", "Accept": "application/vnd.test+json"] }
    var queryItems: [URLQueryItem] { [URLQueryItem(name: "version", value: "2")] }
}

/// An endpoint that takes a 404 as an answer.
struct Probe: EmptyEndpoint {
    typealias Service = Loopback
    static var acceptedStatuses: StatusSet { StatusSet(200...299).adding(404) }
    let name: String
    var path: String { "\(name)?status=404" }
}

/// An answer with a key missing, for the decode message.
struct Profile: OutEndpoint {
    typealias Service = Loopback
    struct Output: Decodable { var displayName: String }
    let name: String
    var path: String { name }
}

/// Lifetime and cache policy per endpoint, for an origin that sends no cache headers.
struct Catalogue: OutEndpoint {
    typealias Service = Loopback
    typealias Output = OriginEcho
    static var cacheLifetime: Duration? { .seconds(300) }
    let name: String
    var path: String { name }
}

struct Reload: OutEndpoint {
    typealias Service = Loopback
    typealias Output = OriginEcho
    static var cachePolicy: URLRequest.CachePolicy { .reloadIgnoringLocalCacheData }
    let name: String
    var path: String { "\(name)?cc=max-age%3D600" }
}

@Suite("Seed users at home (issue #16): Decree, Squid, Echo and Predix code behaves as they expect", .timeLimit(.minutes(1)))
struct SeedMigrationTests {
    func service(authorization: Authorization? = nil) async throws -> Loopback {
        Loopback(port: try await OriginServer.shared.value.port, authorization: authorization)
    }

    func unique(_ name: String) -> String { String(OriginServer.uniquePath(name).dropFirst()) }

    // MARK: 1. Decree endpoints

    @Test("an endpoint that declares no authorization requirement sends the service's credentials; none sends none")
    func optionalAuthorizationByDefault() async throws {
        let echo = try await WhoAmI(name: unique("auth")).call(on: try await service(authorization: .bearer("s3cret")))
        #expect(echo.header("Authorization") == "Bearer s3cret")
        struct Anonymous: OutEndpoint {
            typealias Service = Loopback
            typealias Output = OriginEcho
            static var authorizationRequirement: AuthorizationRequirement { .none }
            let name: String
            var path: String { name }
        }
        let anonymous = try await Anonymous(name: unique("anon")).call(on: try await service(authorization: .bearer("s3cret")))
        #expect(anonymous.header("Authorization") == nil)
    }

    @Test("method: GET by default; RequestMethod, Decree's Method and a plain string are all sent, never replaced by the default")
    func methods() async throws {
        let loopback = try await service()
        #expect(try await WhoAmI(name: unique("get")).call(on: loopback).method == "GET")
        #expect(try await StringMethod(name: unique("string")).call(on: loopback).method == "POST")
        #expect(try await DecreeMethod(name: unique("decree")).call(on: loopback).method == "PUT")
        #expect(try await Upload(name: unique("typed")).call(on: loopback, with: .init(title: "t")).method == "POST")
    }

    @Test("an Output of Data is the raw body, of String the body as text in its charset")
    func rawOutputs() async throws {
        let loopback = try await service()
        #expect(try await Download(name: unique("download")).call(on: loopback) == Data(repeating: UInt8(ascii: "x"), count: 16))
        #expect(try await Note(name: unique("note")).call(on: loopback) == "héllo")
        // Latin-1 text decodes by its charset; bytes that are not text in theirs are a coding error.
        var latin = RecallResponse(status: 200, headers: ["Content-Type": "text/plain; charset=ISO-8859-1"], body: Data([0x68, 0xE9]))
        #expect(latin.text == "hé")
        latin.headers["Content-Type"] = "text/plain; charset=utf-8"
        #expect(latin.text == nil)
    }

    @Test("an error answer decodes into the service's ErrorResponse; one that does not decode still reports status and raw body")
    func errorResponses() async throws {
        let loopback = try await service()
        let decoded = await #expect(throws: ServiceError.self) {
            try await Rejected(name: unique("rejected"), body: "%7B%22message%22%3A%22name%20taken%22%7D").call(on: loopback)
        }
        #expect(decoded?.code == .badStatus)
        #expect(decoded?.statusCode == 422)
        #expect(decoded?.errorResponse(as: APIError.self) == APIError(message: "name taken"))
        #expect(decoded.map { String(decoding: $0.body ?? Data(), as: UTF8.self) } == #"{"message":"name taken"}"#)
        #expect(decoded.map { "\($0)" }?.contains("name taken") == true)

        let undecodable = await #expect(throws: ServiceError.self) {
            try await Rejected(name: unique("garbled"), body: "not%20json").call(on: loopback)
        }
        #expect(undecodable?.statusCode == 422)
        #expect(undecodable?.errorResponse == nil)
        #expect(undecodable.map { String(decoding: $0.body ?? Data(), as: UTF8.self) } == "not json")
    }

    // MARK: 2. Per-endpoint request details

    @Test("endpoint header fields (a dictionary), a query beside a JSON body, and accepted statuses")
    func requestDetails() async throws {
        let loopback = try await service()
        let echo = try await Upload(name: unique("upload")).call(on: loopback, with: .init(title: "Lamp"))
        #expect(echo.header("X-Trace") == "t-1")
        #expect(echo.header("Accept") == "application/vnd.test+json")
        #expect(echo.header("Content-Type") == "application/json")
        #expect(echo.query == "version=2")
        #expect(echo.bodyLength == #"{"title":"Lamp"}"#.utf8.count)
        // 404 is an answer for Probe; 201 is one for Upload but not for an endpoint accepting only 200.
        try await Probe(name: unique("probe")).call(on: loopback)
        struct OnlyOK: EmptyEndpoint {
            typealias Service = Loopback
            static var acceptedStatuses: StatusSet { [200] }
            let name: String
            var path: String { "\(name)?status=201" }
        }
        let refused = await #expect(throws: ServiceError.self) { try await OnlyOK(name: unique("only-ok")).call(on: loopback) }
        #expect(refused?.statusCode == 201)
    }

    // MARK: 3. Squid services

    @Test("the service's decoder is used (snake_case), and a failed decode names the key, the place and the endpoint")
    func decoderAndDecodeErrors() async throws {
        let loopback = try await service()
        // OriginEcho's `bodyLength` arrives as `bodyLength`; the snake_case decoder maps it unchanged.
        #expect(try await WhoAmI(name: unique("snake")).call(on: loopback).bodyLength == 0)
        let name = unique("profile")
        let error = await #expect(throws: ServiceError.self) { try await Profile(name: name).call(on: loopback) }
        let text = error.map { "\($0)" } ?? ""
        #expect(error?.code == .coding)
        #expect(text.contains("no value for key 'displayName'"))
        #expect(text.contains("at the top level"))
        #expect(text.contains("Profile (GET \(name))"))
        #expect(Loopback.errors.withLock { $0.contains { $0.contains("displayName") } })
    }

    // MARK: 4. Failure notification

    @Test("StatusValidator: hooks outside it hear of 4xx/5xx through onFailure; the cache inside still serves stale for a 5xx")
    func statusValidator() async throws {
        let mock = MockTransport()
        let now = TestNow()
        let log = HookLog()
        let cache = HTTPCache(now: { now.value })
        mock.route("GET", "/missing", .status(404))
        mock.route("GET", "/flaky", .text("v1", headers: ["Cache-Control": "max-age=1, stale-if-error=600"]), .status(503))
        let pipeline = Pipeline(transport: mock, hooks: [RecordingHook("outer", log: log), StatusValidator(), cache])
        let refused = await #expect(throws: UnacceptableStatusError.self) {
            try await pipeline.send(URLRequest(url: URL(string: "https://api.test/missing")!)).collected()
        }
        #expect(refused?.status == 404)
        #expect(log.events.last?.hasPrefix("outer.failure") == true)

        _ = try await pipeline.send(URLRequest(url: URL(string: "https://api.test/flaky")!)).collected()
        now.advance(5)
        let stale = try await pipeline.send(URLRequest(url: URL(string: "https://api.test/flaky")!)).collected()
        #expect(stale.bodyText == "v1")
        #expect(stale.source == RecallResponse.Source.stale)
        #expect(mock.count(for: "/flaky") == 2)
        #expect(log.events.last == "outer.success(200 stale)")

        // The same with the cache outside the validator: it recovers from the refusal with its
        // stored response, and lets a refusal without one through.
        let reversed = Pipeline(transport: mock, hooks: [cache, StatusValidator()])
        mock.route("GET", "/flaky2", .text("v1", headers: ["Cache-Control": "max-age=1, stale-if-error=600"]), .status(503))
        _ = try await reversed.send(URLRequest(url: URL(string: "https://api.test/flaky2")!)).collected()
        now.advance(5)
        #expect(try await reversed.send(URLRequest(url: URL(string: "https://api.test/flaky2")!)).collected().source == .stale)
        await #expect(throws: UnacceptableStatusError.self) {
            try await reversed.send(URLRequest(url: URL(string: "https://api.test/missing")!)).collected()
        }
    }

    @Test("HttpService.send reports a non-2xx answer to process(_:) and returns it; endpoints map a validator's refusal to ServiceError")
    func sendProcessesBadStatus() async throws {
        let loopback = try await service()
        // A service of this test's own: the suite's tests run in parallel and Loopback's log is shared.
        struct Reporting: HttpService {
            static let errors = Locked<[String]>([])
            let port: Int
            var apiUrl: String { "http://127.0.0.1:\(port)" }
            var transport: any Transport { Loopback.transport }
            func process(_ error: any Error) { Self.errors.withLock { $0.append("\(error)") } }
        }
        let reporting = Reporting(port: loopback.port)
        let path = "/" + unique("send-404")
        let response = try await reporting.send(URLRequest(url: try reporting.url(path: path, query: [URLQueryItem(name: "status", value: "404")])))
        #expect(response.status == 404)
        let reported = Reporting.errors.withLock { $0 }
        #expect(reported.count == 1)
        #expect(reported.first?.contains("answered 404") == true)

        struct Validated: HttpService {
            let port: Int
            var apiUrl: String { "http://127.0.0.1:\(port)" }
            var transport: any Transport { Loopback.transport }
            var hooks: [any ServiceHook] { [StatusValidator()] }
        }
        struct Missing: EmptyEndpoint {
            typealias Service = Validated
            let name: String
            var path: String { "\(name)?status=404" }
        }
        let error = await #expect(throws: ServiceError.self) {
            try await Missing(name: unique("validated")).call(on: Validated(port: loopback.port))
        }
        #expect(error?.statusCode == 404)
    }

    // MARK: 5. A lifetime for origins that send no cache headers

    @Test("an endpoint's cacheLifetime makes an answer without cache headers a hit; cachePolicy reload always asks the origin")
    func endpointLifetimeAndPolicy() async throws {
        let loopback = try await service()
        let server = try await OriginServer.shared.value
        let name = unique("lifetime")
        _ = try await Catalogue(name: name).call(on: loopback)
        _ = try await Catalogue(name: name).call(on: loopback)
        #expect(try await server.hits("/" + name) == 1)
        // Without the lifetime, the same kind of answer is asked for again.
        let plain = unique("no-lifetime")
        _ = try await WhoAmI(name: plain).call(on: loopback)
        _ = try await WhoAmI(name: plain).call(on: loopback)
        #expect(try await server.hits("/" + plain) == 2)

        let reload = unique("reload")
        _ = try await Reload(name: reload).call(on: loopback)
        _ = try await Reload(name: reload).call(on: loopback)
        #expect(try await server.hits("/" + reload) == 2)
    }

    @Test("lifetime rules by URL pattern: given only when the origin says nothing, never over no-store, no-cache or max-age; kept on disk")
    func lifetimeRules() async throws {
        var configuration = CacheConfiguration()
        configuration.lifetimes = [LifetimeRule("api.test/v1/catalog", .seconds(300)), LifetimeRule("*.cdn.test", .seconds(60))]
        let now = TestNow()
        let mock = MockTransport()
        let cache = HTTPCache(storage: MemoryStorage(), configuration: configuration, now: { now.value })
        let pipeline = Pipeline(transport: mock, hooks: [cache])
        func get(_ url: String) async throws -> RecallResponse { try await pipeline.send(URLRequest(url: URL(string: url)!)).collected() }
        mock.route("GET", "/v1/catalog/items", .text("items"))
        mock.route("GET", "/v1/other", .text("other"))
        mock.route("GET", "/img.png", .text("png"))
        mock.route("GET", "/v1/catalog/nostore", .text("x", headers: ["Cache-Control": "no-store"]))
        mock.route("GET", "/v1/catalog/nocache", .text("x", headers: ["Cache-Control": "no-cache"]))
        mock.route("GET", "/v1/catalog/zero", .text("x", headers: ["Cache-Control": "max-age=0"]))
        for url in [
            "https://api.test/v1/catalog/items", "https://api.test/v1/other", "https://img.cdn.test/img.png",
            "https://api.test/v1/catalog/nostore", "https://api.test/v1/catalog/nocache", "https://api.test/v1/catalog/zero"
        ] {
            _ = try await get(url)
            _ = try await get(url)
        }
        #expect(mock.count(for: "/v1/catalog/items") == 1)
        #expect(mock.count(for: "/img.png") == 1)
        #expect(mock.count(for: "/v1/other") == 2)
        #expect(mock.count(for: "/v1/catalog/nostore") == 2)
        #expect(mock.count(for: "/v1/catalog/nocache") == 2)
        #expect(mock.count(for: "/v1/catalog/zero") == 2)
        now.advance(61)
        _ = try await get("https://img.cdn.test/img.png")
        _ = try await get("https://api.test/v1/catalog/items")
        #expect(mock.count(for: "/img.png") == 2)
        #expect(mock.count(for: "/v1/catalog/items") == 1)

        // The patterns: a host pattern matches any path and port; a path pattern the path and below.
        let rule = LifetimeRule("API.test/v1/cat*", .seconds(1))
        #expect(rule.matches(URL(string: "https://api.test:8443/v1/catalog/x?q=1")!))
        #expect(!rule.matches(URL(string: "https://api.test/v2/catalog")!))
        #expect(LifetimeRule("*.cdn.test", .seconds(1)).matches(URL(string: "http://a.b.cdn.test/x")!))
        #expect(!LifetimeRule("*.cdn.test", .seconds(1)).matches(URL(string: "http://cdn.test/x")!))
        #expect(LifetimeRule("127.0.0.1:8080", .seconds(1)).matches(URL(string: "http://127.0.0.1:8080/x")!))

        // The assigned lifetime survives the disk format, and a hostile value reads as corrupt.
        var entry = CacheEntry(
            status: 200, headers: ["Content-Type": "text/plain"], body: Data("x".utf8), url: nil,
            requestTime: Date(timeIntervalSince1970: 1_000), responseTime: Date(timeIntervalSince1970: 1_000))
        entry.assignedLifetime = 300
        let record = CacheRecord(key: "k", variants: [entry])
        let decoded = try CacheRecordCodec.decode(CacheRecordCodec.encode(record))
        #expect(decoded.variants.first?.assignedLifetime == 300)
        #expect(decoded.variants.first?.varyValues.isEmpty == true)
    }

    // MARK: 6. Storm protection however the factory is written

    @Test("a retrierFactory computed per request still shares one budget: 40 calls to a dead host make 140 attempts, not 200")
    func sharedBudget() async throws {
        let mock = MockTransport()
        let host = "dead-\(UUID().uuidString.prefix(8)).test"
        mock.route("GET", "/down", .status(503))
        struct Dead: HttpService {
            let host: String
            let mock: MockTransport
            var apiUrl: String { host }
            var transport: any Transport { mock }
            var clock: any Clock<Duration> { ManualClock(autoAdvance: true) }
            var retrierFactory: any RetrierFactory { .exponentialBackoff(maxAttempts: 5) }  // computed: a new factory per request
        }
        let dead = Dead(host: host, mock: mock)
        for _ in 0..<40 { _ = try? await dead.send(try dead.makeRequest(method: .get, path: "down")) }
        // RetryQuota.shared: 500 tokens per host, 5 per retry → 100 retries in all.
        #expect(mock.count(for: "/down") == 40 + 100)

        // A fresh quota per request (what the shared default prevents) would allow every retry.
        let unshared = MockTransport()
        unshared.route("GET", "/down", .status(503))
        for _ in 0..<40 {
            let pipeline = Pipeline(
                transport: unshared, retrierFactory: .exponentialBackoff(maxAttempts: 5, budget: RetryQuota()),
                clock: ManualClock(autoAdvance: true))
            _ = try? await pipeline.send(URLRequest(url: URL(string: "https://\(host)/down")!))
        }
        #expect(unshared.count(for: "/down") == 200)
    }
}

@Suite("Seed users at home (issue #16): Echo's WebServiceProxy and Predix's ServiceRouter", .timeLimit(.minutes(1)))
struct SeedProxyAndRouterTests {
    // MARK: 7. Echo

    @Test("Echo: init(session:baseURL:), arguments in the query for POST too, octet-stream content, mutable headers, undefined skipped")
    func echoRequests() async throws {
        let server = try await OriginServer.shared.value
        let proxy = WebServiceProxy(session: URLSession(configuration: .ephemeral), baseURL: server.url("/"))
        proxy.headers = ["X-Client": "echo-app"]
        let name = OriginServer.uniquePath("echo-post").dropFirst()
        let arguments: [String: Any] = ["count": 8, "tags": ["a", "b"], "skip": WebServiceProxy.undefined, "none": NSNull()]
        let echo: OriginEcho = try await proxy.invoke(
            .post, path: String(name), arguments: arguments,
            content: Data("raw".utf8))
        #expect(echo.method == "POST")
        #expect(echo.query == "count=8&tags=a&tags=b")
        #expect(echo.bodyLength == 3)
        #expect(echo.header("Content-Type") == "application/octet-stream")
        #expect(echo.header("X-Client") == "echo-app")

        // A POST without content sends no body: its arguments are in the query.
        let bare: OriginEcho = try await proxy.invoke(.post, path: String(name), arguments: ["a": 1])
        #expect(bare.query == "a=1")
        #expect(bare.bodyLength == 0)
    }

    @Test("Echo: the response handler gets the MIME type without parameters; a non-text error names the status")
    func echoResponses() async throws {
        let server = try await OriginServer.shared.value
        let proxy = WebServiceProxy(session: URLSession(configuration: .ephemeral), baseURL: server.url("/"))
        let name = String(OriginServer.uniquePath("echo-text").dropFirst())
        let type = try await proxy.invoke(.get, path: name, arguments: ["body": "hi"]) { _, contentType in contentType }
        #expect(type == "text/plain")

        let json = await #expect(throws: WebServiceError.self) {
            try await proxy.invoke(.get, path: name, arguments: ["status": 404])
        }
        #expect(json?.statusCode == 404)
        #expect(json?.localizedDescription == HTTPURLResponse.localizedString(forStatusCode: 404))
        #expect(json?.localizedDescription.isEmpty == false)
        let text = await #expect(throws: WebServiceError.self) {
            try await proxy.invoke(.get, path: name, arguments: ["status": 409, "body": "already there"])
        }
        #expect(text?.localizedDescription == "already there")
    }

    @Test("Echo: [String: Any] arguments are accepted; a value with no text form or an empty name is a clear error, nothing sent")
    func echoArguments() async throws {
        enum Size: String { case large }
        struct Opaque {}
        let items = try WebServiceProxy.queryItems([
            "size": Size.large, "id": UUID(uuidString: "00000000-0000-0000-0000-000000000001")!, "ok": true,
            "at": Date(timeIntervalSince1970: 2), "price": 1.5, "site": URL(string: "https://a.test/x")!
        ])
        #expect(
            items.map { "\($0.name)=\($0.value ?? "")" } == [
                "at=2000", "id=00000000-0000-0000-0000-000000000001", "ok=true", "price=1.5", "site=https://a.test/x", "size=large"
            ])
        let mock = MockTransport()
        let proxy = WebServiceProxy(transport: mock, baseURL: URL(string: "https://echo.test/")!)
        let opaque = await #expect(throws: ServiceError.self) { try await proxy.invoke(.get, path: "x", arguments: ["thing": Opaque()]) }
        #expect(opaque.map { "\($0)" }?.contains("argument 'thing' is a Opaque") == true)
        await #expect(throws: ServiceError.self) { try await proxy.invoke(.get, path: "x", arguments: ["map": ["a": 1]]) }
        await #expect(throws: ServiceError.self) { try await proxy.invoke(.get, path: "x", arguments: ["": 1]) }
        #expect(mock.requests.isEmpty)
    }

    // MARK: 8. Predix

    @Test("Predix: identifiers match in any case; other hosts go to the fallback transport (the loopback origin here)")
    func routerFallbackAndCase() async throws {
        let server = try await OriginServer.shared.value
        let router = ServiceRouter(fallback: URLSessionTransport())
        try await router.register(as: "Weather") { request in .text("\(request.identifier) \(request.path)") }
        let pipeline = Pipeline(transport: router, hooks: [HTTPCache()])
        let local = try await pipeline.send(URLRequest(url: URL(string: "http://PMAPI/weather/today")!)).collected()
        #expect(local.bodyText == "Weather /today")
        #expect(try await pipeline.send(URLRequest(url: URL(string: "http://pmapi/WEATHER/x")!)).collected().status == 200)
        await #expect(throws: ServiceRouterError.alreadyRegistered("weather")) {
            try await router.register(as: "weather") { _ in .text("") }
        }
        let path = OriginServer.uniquePath("router-fallback")
        let remote = try await pipeline.send(URLRequest(url: server.url(path))).collected()
        #expect(remote.status == 200)
        #expect(try await server.hits(path) == 1)
        #expect(await router.unregister("WEATHER"))
        #expect(router.identifiers.isEmpty)
    }
}
