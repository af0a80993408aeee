import Foundation
import Recall
import RecallServices
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Shared parts of the test service (properties are read per request, so they are static).
enum CatalogParts {
    static let mock = MockTransport()
    static let log = HookLog()
    static let cache = HTTPCache()
    static let errors = Locked<[String]>([])
}

struct Catalog: HttpService {
    var authorization: Authorization?
    var apiUrl: String { "api.catalog.test/v1" }
    var header: HeaderFields { ["Accept": "application/json", "X-Client": "recall-tests"] }
    var transport: any Transport { CatalogParts.mock }
    var hooks: [any ServiceHook] { [RecordingHook("typed", log: CatalogParts.log), CatalogParts.cache] }
    var retrierFactory: any RetrierFactory { .exponentialBackoff(base: .milliseconds(1), cap: .milliseconds(2), maxAttempts: 3, budget: nil) }
    var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = .sortedKeys
        return encoder
    }
    var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
    func process(_ error: any Error) { CatalogParts.errors.withLock { $0.append("\(type(of: error))") } }
}

struct Item: Codable, Equatable, Sendable {
    var itemId: Int
    var name: String
}

struct Ping: EmptyEndpoint {
    typealias Service = Catalog
    static let method = "POST"
    var path: String { "ping" }
}

struct GetItem: OutEndpoint {
    typealias Service = Catalog
    typealias Output = Item
    static let method = "GET"
    let id: Int
    var path: String { "items/\(id)" }
}

struct CreateItem: InOutEndpoint {
    typealias Service = Catalog
    typealias Input = Item
    typealias Output = Item
    static let method = "POST"
    static var authorizationRequirement: AuthorizationRequirement { .required }
    var path: String { "items" }
}

struct Search: InEndpoint {
    typealias Service = Catalog
    struct Input: Encodable, Sendable { var query: String; var tags: [String]; var limit: Int?; var exact: Bool }
    static let method = "GET"
    static var inputFormat: InputFormat { .urlQuery }
    static var authorizationRequirement: AuthorizationRequirement { .optional }
    var path: String { "search" }
}

struct Login: InEndpoint {
    typealias Service = Catalog
    struct Input: Encodable, Sendable { var user: String; var password: String }
    static let method = "POST"
    static var inputFormat: InputFormat { .formURLEncoded }
    var path: String { "login" }
}

struct Feed: OutEndpoint {
    typealias Service = Catalog
    struct Output: Decodable, Equatable {
        struct Entry: Decodable, Equatable { var id: Int; var title: String; var draft: Bool }
        var version: String
        var entries: [Entry]
        var note: String?
    }
    static let method = "GET"
    static var outputFormat: OutputFormat { .xml }
    var path: String { "feed.xml" }
}

@Suite("Typed service APIs: HttpService, endpoints, WebServiceProxy", .serialized, .timeLimit(.minutes(1)))
struct TypedServiceTests {
    init() {
        CatalogParts.mock.reset()
        CatalogParts.errors.withLock { $0.removeAll() }
    }

    @Test("HttpService: https by default, scheme overridable, header fields merged with the request's winning")
    func serviceBasics() throws {
        let service = Catalog()
        #expect(try service.url(path: "items/1").absoluteString == "https://api.catalog.test/v1/items/1")
        #expect(try service.url(path: "/items", scheme: "http").absoluteString == "http://api.catalog.test/v1/items")
        let request = try service.makeRequest(method: "POST", path: "x", header: ["accept": "text/plain", "Content-Type": "application/json"])
        #expect(request.value(forHTTPHeaderField: "Accept") == "text/plain")
        #expect(request.value(forHTTPHeaderField: "X-Client") == "recall-tests")
        #expect(request.allHTTPHeaderFields?.keys.filter { $0.lowercased() == "content-type" }.count == 1)
        struct Broken: HttpService { var apiUrl: String { "" } }
        #expect(throws: ServiceError.self) { try Broken().url(path: "x") }
    }

    @Test("OutEndpoint decodes JSON with the service's decoder; a second call is answered from the cache")
    func outEndpointAndCache() async throws {
        CatalogParts.mock.route(
            "GET", "/v1/items/7", .text(#"{"item_id":7,"name":"Lamp"}"#, headers: ["Content-Type": "application/json", "Cache-Control": "max-age=60"]))
        let before = CatalogParts.log.events.count
        #expect(try await GetItem(id: 7).call(on: Catalog()) == Item(itemId: 7, name: "Lamp"))
        #expect(try await GetItem(id: 7).call(on: Catalog()) == Item(itemId: 7, name: "Lamp"))
        #expect(CatalogParts.mock.count(for: "/v1/items/7") == 1)
        // The outer hook saw both typed calls, one from the network and one from the cache.
        #expect(
            Array(CatalogParts.log.events.dropFirst(before)) == ["typed.schedule", "typed.success(200 network)", "typed.schedule", "typed.success(200 cache)"])
    }

    @Test("InOutEndpoint sends JSON with the service's encoder and requires authorization")
    func inOutEndpoint() async throws {
        CatalogParts.mock.route("POST", "/v1/items") { request in
            .text(String(decoding: request.httpBody ?? Data(), as: UTF8.self), status: 201, headers: ["Content-Type": "application/json"])
        }
        let created = try await CreateItem().call(on: Catalog(authorization: .bearer("t0k")), with: Item(itemId: 9, name: "Desk"))
        #expect(created == Item(itemId: 9, name: "Desk"))
        let sent = try #require(CatalogParts.mock.requests.last)
        #expect(sent.value(forHTTPHeaderField: "Authorization") == "Bearer t0k")
        #expect(sent.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(String(decoding: sent.httpBody ?? Data(), as: UTF8.self) == #"{"item_id":9,"name":"Desk"}"#)

        // Required authorization missing: fails before anything is sent.
        let count = CatalogParts.mock.requests.count
        await #expect(throws: ServiceError.authorizationRequired(endpoint: "CreateItem")) {
            try await CreateItem().call(on: Catalog(), with: Item(itemId: 1, name: "x"))
        }
        #expect(CatalogParts.mock.requests.count == count)
        #expect(CatalogParts.errors.withLock { $0.last } == "ServiceError")
    }

    @Test("authorization kinds: basic, bearer, custom header; optional sends it only when present")
    func authorizationKinds() async throws {
        CatalogParts.mock.route("GET", "/v1/search", .text("[]"))
        let input = Search.Input(query: "a", tags: [], limit: nil, exact: false)
        try await Search().call(on: Catalog(authorization: .basic(username: "ann", password: "pw")), with: input)
        #expect(CatalogParts.mock.requests.last?.value(forHTTPHeaderField: "Authorization") == "Basic YW5uOnB3")
        try await Search().call(on: Catalog(authorization: .header(name: "X-API-Key", value: "k1")), with: input)
        #expect(CatalogParts.mock.requests.last?.value(forHTTPHeaderField: "X-API-Key") == "k1")
        try await Search().call(on: Catalog(), with: input)
        #expect(CatalogParts.mock.requests.last?.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test("input formats: URL query (arrays repeated, nil skipped) and form-URL-encoded")
    func inputFormats() async throws {
        CatalogParts.mock.route("GET", "/v1/search", .text("[]"))
        CatalogParts.mock.route("POST", "/v1/login", .status(204))
        try await Search().call(on: Catalog(), with: .init(query: "red lamp+", tags: ["a", "b"], limit: nil, exact: true))
        #expect(CatalogParts.mock.requests.last?.url?.query == "exact=true&query=red%20lamp%2B&tags=a&tags=b")
        try await Login().call(on: Catalog(), with: .init(user: "ann", password: "p&ss=1"))
        let login = try #require(CatalogParts.mock.requests.last)
        #expect(login.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")
        #expect(String(decoding: login.httpBody ?? Data(), as: UTF8.self) == "password=p%26ss%3D1&user=ann")
    }

    @Test("EmptyEndpoint; non-2xx answers become errors carrying status and body; process(_:) sees them")
    func errors() async throws {
        CatalogParts.mock.route("POST", "/v1/ping", .status(204))
        try await Ping().call(on: Catalog())
        CatalogParts.mock.route("GET", "/v1/items/404", .text("no such item", status: 404))
        let error = await #expect(throws: ServiceError.self) { try await GetItem(id: 404).call(on: Catalog()) }
        #expect(error?.statusCode == 404)
        #expect(error.map { "\($0)" }?.contains("no such item") == true)
        #expect(CatalogParts.errors.withLock { $0 } == ["ServiceError"])
    }

    @Test("XML output decodes into Decodable types (elements, attributes, repeated elements, numbers, Booleans)")
    func xmlOutput() async throws {
        let xml = """
            <?xml version="1.0"?>
            <feed version="2">
              <entries>
                <entry id="1"><title>First</title><draft>false</draft></entry>
                <entry id="2"><title><![CDATA[Second & more]]></title><draft>1</draft></entry>
              </entries>
            </feed>
            """
        CatalogParts.mock.route("GET", "/v1/feed.xml", .text(xml, headers: ["Content-Type": "application/xml"]))
        let feed = try await Feed().call(on: Catalog())
        #expect(
            feed == .init(version: "2", entries: [.init(id: 1, title: "First", draft: false), .init(id: 2, title: "Second & more", draft: true)], note: nil))
        #expect(CatalogParts.mock.requests.last?.value(forHTTPHeaderField: "Accept") == "application/xml")
        struct Repeated: Decodable { var tag: [String] }
        #expect(try XMLElementDecoder().decode(Repeated.self, from: Data("<r><tag>a</tag><tag>b</tag></r>".utf8)).tag == ["a", "b"])
        #expect(throws: (any Error).self) { try XMLElementDecoder().decode(Repeated.self, from: Data("<r><tag>".utf8)) }
    }

    @Test("WebServiceProxy: arguments as query (arrays repeated, dates in ms, nil skipped, + escaped)")
    func proxyArguments() async throws {
        let mock = MockTransport()
        mock.route("GET", "/api/sum") { request in .text("6", headers: ["Content-Type": "application/json"]) }
        let proxy = WebServiceProxy(baseURL: URL(string: "https://echo.test/api/")!, pipeline: Pipeline(transport: mock))
        let nothing: String? = nil
        let sum: Int = try await proxy.invoke(
            .get, path: "sum",
            arguments: [
                "values": [1, 2, 3], "when": Date(timeIntervalSince1970: 1.5), "skip": nothing, "text": "a+b c"
            ])
        #expect(sum == 6)
        #expect(mock.requests.last?.url?.query == "text=a%2Bb%20c&values=1&values=2&values=3&when=1500")
        // Optionals inside arrays are unwrapped and their nils skipped, never sent as "Optional(…)".
        let tags: [String?] = ["a", nil, "b"]
        #expect(try WebServiceProxy.queryItems(["tags": tags]).map { "\($0.name)=\($0.value ?? "")" } == ["tags=a", "tags=b"])
    }

    @Test("WebServiceProxy: invoke overloads — no result, Decodable, Encodable body, raw content, response handler")
    func proxyOverloads() async throws {
        struct Event: Codable, Equatable { var name: String; var at: Date }
        let mock = MockTransport()
        mock.route("POST", "/api/echo") { request in
            RecallResponse(
                status: 200, headers: ["Content-Type": request.value(forHTTPHeaderField: "Content-Type") ?? "application/octet-stream"],
                body: request.httpBody ?? Data())
        }
        mock.route("POST", "/api/form") { request in .text(request.url?.query ?? "") }
        mock.route("DELETE", "/api/thing", .status(204))
        let proxy = WebServiceProxy(baseURL: URL(string: "https://echo.test/api")!, pipeline: Pipeline(transport: mock))
        try await proxy.invoke(.delete, path: "thing")
        let event = Event(name: "launch", at: Date(timeIntervalSince1970: 12.345))
        try await proxy.invoke(.post, path: "echo", body: event)
        let sentBody = String(decoding: mock.requests.last?.httpBody ?? Data(), as: UTF8.self)
        #expect(sentBody.contains("12345"))
        let echoed: Event = try await proxy.invoke(.post, path: "echo", body: event)
        #expect(echoed == event)
        let raw = try await proxy.invoke(.post, path: "echo", content: Data("hi".utf8), contentType: "text/plain") { data, type in
            "\(String(decoding: data, as: UTF8.self)) as \(type ?? "?")"
        }
        #expect(raw == "hi as text/plain")
        // As Echo: a POST's arguments go in the query too, and no body is sent.
        let form = try await proxy.invoke(.post, path: "form", arguments: ["a": 1, "b": "x y"]) { data, _ in String(decoding: data, as: UTF8.self) }
        #expect(form == "a=1&b=x%20y")
        #expect(mock.requests.last?.httpBody == nil)
    }

    @Test("WebServiceError: statusCode, and the body as description for text/plain")
    func proxyErrors() async throws {
        let mock = MockTransport()
        mock.route("GET", "/api/text", .text("quota exceeded", status: 429))
        mock.route("GET", "/api/json", .status(500, headers: ["Content-Type": "application/json"], body: Data("{}".utf8)))
        let proxy = WebServiceProxy(baseURL: URL(string: "https://echo.test/api/")!, pipeline: Pipeline(transport: mock))
        let text = await #expect(throws: WebServiceError.self) { try await proxy.invoke(.get, path: "text") }
        #expect(text?.statusCode == 429)
        #expect(text?.errorDescription == "quota exceeded")
        let json = await #expect(throws: WebServiceError.self) { try await proxy.invoke(.get, path: "json") }
        #expect(json?.statusCode == 500)
        #expect(json?.errorDescription == HTTPURLResponse.localizedString(forStatusCode: 500))
    }

    @Test("an invoke is retried after a 503 through the same pipeline")
    func proxyRetry() async throws {
        let mock = MockTransport()
        mock.route("GET", "/api/flaky", .status(503), .text("\"ok\"", headers: ["Content-Type": "application/json"]))
        let pipeline = Pipeline(transport: mock, retrierFactory: .exponentialBackoff(maxAttempts: 3, budget: nil), clock: ManualClock(autoAdvance: true))
        let proxy = WebServiceProxy(baseURL: URL(string: "https://echo.test/api/")!, pipeline: pipeline)
        let value: String = try await proxy.invoke(.get, path: "flaky")
        #expect(value == "ok")
        #expect(mock.count(for: "/api/flaky") == 2)
    }

    @Test("end to end: a WebServiceProxy over URLSession to the loopback origin")
    func proxyEndToEnd() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("proxy")
        let proxy = WebServiceProxy(baseURL: URL(string: "http://127.0.0.1:\(server.port)/")!)
        struct Echo: Decodable { var method: String; var path: String }
        let echo: Echo = try await proxy.invoke(.get, path: String(path.dropFirst()), arguments: ["x": 1])
        #expect(echo.method == "GET")
        #expect(echo.path == path)
    }
}
