import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #53, point 2: an answer to `POST` stored for later `GET`s (RFC 9110 §9.3.3) keeps its
/// whole body when that body streams; no record keeps a body shorter than its head declares.
@Suite("Safety: a streamed POST answer is stored whole or not at all", .timeLimit(.minutes(1)))
struct PostAnswerTests {
    static let size = 100_000

    /// A `POST /doc` route answering `max-age=600` with `Content-Location: /doc` and a streamed body
    /// of ``size`` bytes: declared (`Content-Length`) or not (chunked).
    private static func route(_ h: CacheHarness, declared: Bool) {
        h.mock.route("POST", "/doc") { request in
            var headers: HeaderFields = ["Cache-Control": "max-age=600", "Content-Location": "/doc"]
            if declared { headers["Content-Length"] = String(size) }
            let body = ResponseBody.producing(expectedLength: declared ? size : nil, url: request.url) { writer in
                for _ in 0..<10 { try await writer.write(Data(repeating: 7, count: size / 10)) }
            }
            return RecallResponse(status: 200, headers: headers, body: body, url: request.url)
        }
    }

    @Test("a streamed POST answer with Content-Location of its own URI answers later GETs with its whole body", arguments: StorageKind.allCases)
    func streamedPostStoredWhole(kind: StorageKind) async throws {
        for declared in [true, false] {
            let h = CacheHarness(over: kind)
            Self.route(h, declared: declared)
            let posted = try await h.pipeline.send(h.request("/doc", method: "POST")).collected()
            #expect(posted.body.bytes?.count == Self.size)
            await h.cache.flush()
            let later = try await h.get("/doc").collected()
            #expect(later.source == .cache, "declared: \(declared)")
            #expect(later.body.bytes == Data(repeating: 7, count: Self.size), "declared: \(declared): \(later.body.bytes?.count ?? -1) bytes served")
            #expect(h.hits("/doc") == 1)
        }
    }

    @Test("a POST answer whose body is cut short is not stored for GETs", arguments: StorageKind.allCases)
    func cutShortNotStored(kind: StorageKind) async throws {
        let h = CacheHarness(over: kind)
        h.mock.route("POST", "/doc") { request in
            let headers: HeaderFields = ["Cache-Control": "max-age=600", "Content-Location": "/doc", "Content-Length": String(Self.size)]
            let body = ResponseBody.producing(expectedLength: Self.size, url: request.url) { writer in
                try await writer.write(Data(repeating: 7, count: 1000))
                throw TransportError(.connectionLost)
            }
            return RecallResponse(status: 200, headers: headers, body: body, url: request.url)
        }
        h.origin("/doc", body: "from the origin")
        await #expect(throws: (any Error).self) { try await h.pipeline.send(h.request("/doc", method: "POST")).collected() }
        await h.cache.flush()
        #expect(try await h.get("/doc").source == .network)
    }

    @Test("a whole body shorter than its Content-Length is never stored (a head kept without its body)", arguments: StorageKind.allCases)
    func wholeBodyMustMatch(kind: StorageKind) async throws {
        let h = CacheHarness(over: kind)
        h.mock.route(
            "GET", "/short",
            .status(200, headers: ["Cache-Control": "max-age=600", "Content-Length": "100000", "Date": HTTPDate.format(h.now.value)], body: Data()))
        h.mock.route(
            "POST", "/posted",
            .status(
                200, headers: ["Cache-Control": "max-age=600", "Content-Location": "/posted", "Content-Length": "100000", "Date": HTTPDate.format(h.now.value)],
                body: Data()))
        try await h.get("/short")
        _ = try await h.pipeline.send(h.request("/posted", method: "POST"))
        h.origin("/posted", body: "from the origin")
        await h.cache.flush()
        #expect(try await h.get("/short").source == .network)
        #expect(try await h.get("/posted").bodyText == "from the origin")
        await h.cache.flush()
        #expect(h.cache.statistics.stores == 1)  // (only the GET of /posted, whose body is whole)
    }

    @Test("through a real socket: a streamed POST answer is served to the next GET whole, from the cache")
    func endToEnd() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("post-answer")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = HTTPCache(storage: TieredStorage(memory: MemoryStorage(), lower: try DiskStorage(directory: directory)))
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = server.url(path, ["stream": String(Self.size), "cc": "max-age=600", "content_location": "self"])
        var post = URLRequest(url: url)
        post.httpMethod = "POST"
        let posted = try await pipeline.send(post)
        #expect(posted.body.isStreamed)  // (over the whole-body threshold: it streams)
        #expect(try await posted.collected().body.bytes == StreamingTests.expected(Self.size))
        await cache.flush()
        let later = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(later.source == .cache)
        #expect(later.body.bytes == StreamingTests.expected(Self.size), "\(later.body.bytes?.count ?? -1) bytes served")
        #expect(try await server.hits(path) == 1)
    }
}
