import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Recall
import RecallOpenAPI
import RecallTesting
import Testing

/// Issue #54, point 2, through the OpenAPI middleware: bodies the cache does not store pass
/// straight through a real generated client with `RecallMiddleware` over AsyncHTTPClient's
/// transport (URLSession's buffers whole bodies on Linux), over every storage kind — the caller
/// has the first bytes while the origin still holds the rest, then every byte — and the next call
/// goes to the origin again.
@Suite("Bodies not stored pass straight through the OpenAPI middleware", .timeLimit(.minutes(2)))
struct NotStoredPassThroughTests {
    @Test("first bytes before the origin sends the rest, every byte after, nothing stored", arguments: NotStoredCase.all)
    func passesStraightThrough(_ test: NotStoredCase) async throws {
        let (origin, directory, cache, base, client) = try Self.setUp(test, "not-stored-\(test.kind.rawValue)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let opener = URLSessionTransport()

        let gate = UUID().uuidString
        for round in 1...2 {
            let body = try await Self.call(client, test, gate: gate)
            var iterator = body.makeAsyncIterator()
            var received = try #require(try await iterator.next()).count
            if round == 1 {
                #expect(received < NotStoredCase.size, "the origin holds the rest until the gate opens")
                _ = try await opener.send(URLRequest(url: origin.url("/__open", [("gate", gate)]))).collected()
            }
            while let chunk = try await iterator.next() { received += chunk.count }
            #expect(received == NotStoredCase.size, "round \(round)")
        }
        #expect(try await Self.hits(origin, base + "/download") == 2, "the second call went to the origin: nothing was stored")
        await cache.flush()
        #expect(cache.statistics.stores == 0)
    }

    /// The control: the same calls with `public, max-age=600` over the same storages (of the
    /// `noStore` cases, whose limits take the body) are stored — the second is a hit — so the
    /// test above sees a store when one happens.
    @Test("the control: the same body, storable, is stored and the second call is a hit", arguments: NotStoredCase.all.filter { $0.kind == .noStore })
    func storableIsStored(_ test: NotStoredCase) async throws {
        let (origin, directory, cache, base, client) = try Self.setUp(test, "stored")
        defer { try? FileManager.default.removeItem(at: directory) }
        for _ in 1...2 {
            let body = try await client.download(query: .init(stream: "\(NotStoredCase.size)", cc: "public, max-age=600")).ok.body.binary
            #expect(try await Data(collecting: body, upTo: 2 << 20).count == NotStoredCase.size)
            await cache.flush()
        }
        #expect(try await Self.hits(origin, base + "/download") == 1, "the second call was answered from the cache")
    }

    /// A loopback origin of the test's own; a cache over `test`'s storage, its files in a new
    /// directory; a base path of the case's own (the origin counts requests per path); and the
    /// generated client there with `RecallMiddleware` over AsyncHTTPClient.
    private static func setUp(
        _ test: NotStoredCase, _ name: String
    ) throws -> (origin: LoopbackOrigin, directory: URL, cache: HTTPCache, base: String, client: Client) {
        let origin = try RecallMiddlewareTests.origin()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-openapi-\(name)-\(UUID().uuidString)")
        let cache = HTTPCache(storage: try test.storage(in: directory))
        let base = "/\(name)-\(test.storage.rawValue)-\(UUID().uuidString.prefix(8))"
        let client = Client(serverURL: origin.url(base), transport: AsyncHTTPClientTransport(), middlewares: [RecallMiddleware(hooks: [cache])])
        return (origin, directory, cache, base, client)
    }

    private static func hits(_ origin: LoopbackOrigin, _ path: String) async throws -> Int {
        struct Hits: Decodable { let hits: Int }
        let answer = try await URLSessionTransport().send(URLRequest(url: origin.url("/__hits", [("path", path)])))
        return try JSONDecoder().decode(Hits.self, from: try await answer.body.collect(upTo: 1 << 20)).hits
    }

    /// The generated client's call for `test` (its query, its method), and the body it answers.
    private static func call(_ client: Client, _ test: NotStoredCase, gate: String) async throws -> HTTPBody {
        let query = Dictionary(test.query(gate: gate), uniquingKeysWith: { $1 })
        let stream = try #require(query["stream"])
        if test.kind == .post {
            let output = try await client.postDownload(
                query: .init(stream: stream, cc: query["cc"], gate: gate), body: .binary(HTTPBody("a form")))
            switch output {
            case .ok(let answer): return try answer.body.binary
            case .default(_, let answer): return try answer.body.binary
            }
        }
        switch try await client.download(query: .init(stream: stream, cc: query["cc"], gate: gate, status: query["status"])) {
        case .ok(let answer): return try answer.body.binary
        case .default(let status, let answer):
            #expect(test.kind == .uncacheableStatus && status == 500)
            return try answer.body.binary
        }
    }
}
