// snippet: docs/services.md
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking   // URLRequest, URLSession on Linux
#endif
import Recall
import RecallServices
// end snippet

// The code blocks of docs/services.md, compiled (never run: they talk to example hosts).
// DocSnippetTests checks that every block of the page is here, word for word, and that
// nothing here is missing from the page. What the page assumes is declared around them.

private enum Token { static var current: String { "token" } }
private struct Logger: Sendable { func error(_ message: String) {} }
private let logger = Logger()
private struct FailureLogger: ServiceHook {}
private struct Event: Codable, Sendable { var name: String }

enum ServicesSnippets {
    static func all() async throws {
        let event = Event(name: "launch")
        let data = Data()
        // snippet: docs/services.md
        struct Catalog: HttpService {
            typealias ErrorResponse = APIError                     // error bodies decode into this (optional)
            static let cache = HTTPCache(storage: MemoryStorage())
            static let decoder: JSONDecoder = {
                let decoder = JSONDecoder()
                decoder.keyDecodingStrategy = .convertFromSnakeCase // Squid's default
                return decoder
            }()

            var apiUrl: String { "api.example.com/v1" }          // no scheme: https; "http://localhost:8080" overrides
            var header: HeaderFields { ["Accept": "application/json"] }
            var hooks: [any ServiceHook] { [Self.cache] }
            var retrierFactory: any RetrierFactory { .exponentialBackoff(maxAttempts: 4) }
            var decoder: JSONDecoder { Self.decoder }
            var authorization: Authorization? { .bearer(Token.current) }
            func process(_ error: any Error) { logger.error("\(error)") }   // every failure against the service
        }
        // end snippet

        // snippet: docs/services.md
        struct GetItem: OutEndpoint {               // also EmptyEndpoint, InEndpoint, InOutEndpoint
            typealias Service = Catalog
            typealias Output = Item
            let id: Int
            var path: String { "items/\(id)" }      // GET, with the service's credentials if it has some
        }
        let item = try await GetItem(id: 7).call(on: Catalog())

        struct Search: InEndpoint {
            typealias Service = Catalog
            struct Input: Encodable, Sendable { var query: String; var tags: [String] }
            static var inputFormat: InputFormat { .urlQuery }            // .json (default), .urlQuery, .formURLEncoded
            static var authorizationRequirement: AuthorizationRequirement { .none }   // .optional (default), .none, .required
            var path: String { "search" }
        }
        try await Search().call(on: Catalog(), with: .init(query: "lamp", tags: ["a", "b"]))   // ?query=lamp&tags=a&tags=b
        // end snippet
        _ = item

        // snippet: docs/services.md
        var configuration = CacheConfiguration()
        configuration.lifetimes = [
            LifetimeRule("api.example.com/v1/catalog", .seconds(300)),   // that path and below, any port
            LifetimeRule("*.cdn.example.com", .seconds(3600)),            // every path on those hosts
        ]
        let cache = HTTPCache(storage: MemoryStorage(), configuration: configuration)

        struct Categories: OutEndpoint {
            typealias Service = Catalog
            typealias Output = [String]
            static var cacheLifetime: Duration? { .seconds(600) }        // wins over the rules
            var path: String { "categories" }
        }
        // end snippet

        // snippet: docs/services.md
        let client = Pipeline(transport: URLSessionTransport(),
                              hooks: [FailureLogger(), StatusValidator(), cache],   // FailureLogger.onFailure hears of 404 and 503
                              retrierFactory: .exponentialBackoff())
        // end snippet

        // snippet: docs/services.md
        let proxy = WebServiceProxy(session: URLSession.shared, baseURL: URL(string: "https://api.example.com/")!)
        proxy.headers["Authorization"] = "Bearer \(Token.current)"
        try await proxy.invoke(.delete, path: "items/7")                                    // no result
        let sum: Int = try await proxy.invoke(.get, path: "math/sum", arguments: ["values": [1, 2, 3]])
        let saved: Event = try await proxy.invoke(.post, path: "events", body: event)      // JSON body and result
        let text = try await proxy.invoke(.post, path: "upload", content: data, contentType: "image/png") { data, type in
            String(decoding: data, as: UTF8.self)                                            // type is "text/plain", no parameters
        }
        let cached = WebServiceProxy(baseURL: URL(string: "https://api.example.com/")!, pipeline: client)   // cache, retries, hooks
        // end snippet
        _ = (sum, saved, text, cached)

        // snippet: docs/services.md
        struct Weather: ServiceProtocol {
            func handle(_ request: ServiceRequest) async throws -> RecallResponse {
                guard request.path == "/today" else { return respondWithErrorStatus(404, text: "unknown forecast") }
                return try createResponse(headers: ["Cache-Control": "max-age=60"], json: ["sky": "clear"])
            }
        }
        let router = ServiceRouter(fallback: URLSessionTransport())   // host "pmapi"; other hosts go to the network
        try await router.register(Weather(), as: "weather")            // registered(as:) is called
        let pipeline = Pipeline(transport: router, hooks: [HTTPCache()])
        let today = try await pipeline.send(URLRequest(url: URL(string: "http://pmapi/Weather/today")!))
        // end snippet
        _ = today
    }
}
