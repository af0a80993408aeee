import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Hummingbird
import NIOHTTP1
import Recall
import RecallServices
import Synchronization
import Testing

// Every name below is written unqualified, in one file that imports Recall beside Hummingbird,
// AsyncHTTPClient and NIOHTTP1 (whose HTTPHeaders and HTTPMethod Vapor re-exports). That this
// file compiles is the test: no Recall name shadows theirs (Response, RequestContext,
// CacheControl, HTTPHeaders, HTTPMethod), each written here as a type.

/// A Hummingbird route that answers through a Recall pipeline: both vocabularies side by side.
struct Upstream: Sendable {
    let pipeline: Pipeline

    func route(_ request: Request, context: some RequestContext) async throws -> Response {
        let answer: RecallResponse = try await pipeline.send(URLRequest(url: URL(string: "https://upstream.test/item")!))
        var headers = HTTPFields()
        if let value = answer.headers["Cache-Control"] { headers[.cacheControl] = value }
        return Response(
            status: .init(code: answer.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try await answer.body.collect(upTo: 1 << 20))))
    }
}

/// A hook using Recall's names, beside NIO's HTTPHeaders and HTTPMethod.
struct Tagging: ServiceHook {
    func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        let method: RequestMethod = RequestMethod(request)
        let fields: HeaderFields = ["X-Method": method.rawValue]
        var outgoing = request
        for field in fields { outgoing.setValue(field.value, forHTTPHeaderField: field.name) }
        return .proceed(outgoing)
    }
}

@Suite("Names: Recall beside Hummingbird, AsyncHTTPClient and NIOHTTP1, unqualified")
struct NamesTests {
    @Test("each library's type is the one its unqualified name means")
    func namesCoexist() {
        let nioHeaders: HTTPHeaders = ["Cache-Control": "max-age=60"]
        let nioMethod: HTTPMethod = .GET
        let recallHeaders: HeaderFields = ["Cache-Control": "max-age=60"]
        let directives = CacheDirectives(recallHeaders["Cache-Control"] ?? "")
        let hummingbirdCache: CacheControl = CacheControl([(MediaType.textPlain, [.maxAge(60)])])
        var outgoing: HTTPClientRequest = HTTPClientRequest(url: "https://upstream.test/item")
        outgoing.method = HTTPMethod.GET
        outgoing.headers = nioHeaders
        let response = RecallResponse.text("ok")
        #expect(nioHeaders["cache-control"] == ["max-age=60"])
        #expect(nioMethod == .GET)
        #expect(directives.maxAge == 60)
        #expect(response.status == 200)
        #expect(String(describing: type(of: hummingbirdCache)) == "CacheControl")
        #expect(RecallResponse.self != Response.self)
        #expect(outgoing.headers["cache-control"] == ["max-age=60"])
    }

    @Test("a Hummingbird route answers through a Recall pipeline with a cache")
    func routeThroughRecall() async throws {
        let origin = Origin()
        let upstream = Upstream(pipeline: Pipeline(transport: origin, hooks: [Tagging(), HTTPCache()]))
        let router = Router()
        router.get("/item") { request, context in try await upstream.route(request, context: context) }
        _ = router  // (the route is made; serving it needs no network for this check)
        let first = try await upstream.pipeline.send(URLRequest(url: URL(string: "https://upstream.test/item")!))
        let second = try await upstream.pipeline.send(URLRequest(url: URL(string: "https://upstream.test/item")!))
        #expect(first.source == .network)
        #expect(second.source == .cache)
        #expect(origin.methods.withLock { $0 } == ["GET"])
    }
}

/// An origin in memory that records the method the hook tagged.
final class Origin: Transport {
    let methods = Mutex<[String]>([])

    func send(_ request: URLRequest) async throws -> RecallResponse {
        methods.withLock { $0.append(request.value(forHTTPHeaderField: "X-Method") ?? "") }
        return RecallResponse.text("item", headers: ["Cache-Control": "max-age=60"], url: request.url)
    }
}
