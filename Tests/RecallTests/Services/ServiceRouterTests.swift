import Foundation
import Recall
import RecallServices
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A service that records its lifecycle callbacks and answers by path.
private final class EchoService: ServiceProtocol {
    let events = Locked<[String]>([])

    func handle(_ request: ServiceRequest) async throws -> RecallResponse {
        switch request.path {
        case "/fail": throw CocoaError(.fileNoSuchFile)
        case "/missing": return respondWithErrorStatus(404, text: "no such thing", headers: ["X-Reason": "test"])
        case "/empty-error": return respondWithErrorStatus(409)
        case "/json": return try createResponse(json: ["path": request.path, "q": request.query("q") ?? ""])
        case "/stream":
            return createResponse(headers: ["Cache-Control": "max-age=60"], length: 3 * 1000) { writer in
                for byte in [UInt8(ascii: "a"), UInt8(ascii: "b"), UInt8(ascii: "c")] { try await writer.write(Data(repeating: byte, count: 1000)) }
            }
        case "/short":
            return createResponse(length: 10) { writer in try await writer.write(Data(count: 4)) }
        default: return createResponse(headers: ["Content-Type": "text/plain"], body: Data("\(request.method) \(request.path)".utf8))
        }
    }

    func registered(as identifier: String) async { events.withLock { $0.append("registered \(identifier)") } }
    func unregistered(from identifier: String) async { events.withLock { $0.append("unregistered \(identifier)") } }
}

@Suite("ServiceRouter", .timeLimit(.minutes(1)))
struct ServiceRouterTests {
    @Test("routes http://pmapi/<identifier>/… to the service with the rest of the path")
    func routing() async throws {
        let router = ServiceRouter()
        try await router.register(EchoService(), as: "echo")
        var request = URLRequest(url: URL(string: "http://pmapi/echo/a/b?q=1")!)
        request.httpMethod = "PUT"
        let response = try await router.send(request)
        #expect(response.status == 200)
        #expect(response.bodyText == "PUT /a/b")
        #expect(response.headers["Content-Length"] == "8")
        #expect(response.url == request.url)
        #expect(try await router.send(URLRequest(url: router.url(for: "echo"))).bodyText == "GET /")
    }

    @Test("the host is configurable and compared case-insensitively; other hosts are an error")
    func host() async throws {
        let router = ServiceRouter(host: "local.services")
        try await router.register(EchoService(), as: "echo")
        #expect(try await router.send(URLRequest(url: URL(string: "http://LOCAL.services/echo/x")!)).status == 200)
        await #expect(throws: ServiceRouterError.self) {
            try await router.send(URLRequest(url: URL(string: "http://pmapi/echo/x")!))
        }
    }

    @Test("an unknown identifier answers 501 with a text body")
    func unknownIdentifier() async throws {
        let router = ServiceRouter()
        let response = try await router.send(URLRequest(url: URL(string: "http://pmapi/nobody/here")!))
        #expect(response.status == 501)
        #expect(response.bodyText.contains("nobody"))
        #expect(response.headers["Content-Type"]?.hasPrefix("text/plain") == true)
        #expect(try await router.send(URLRequest(url: URL(string: "http://pmapi/")!)).status == 501)
    }

    @Test("a throwing service answers 500 with the error as text")
    func throwingService() async throws {
        let router = ServiceRouter()
        try await router.register(EchoService(), as: "echo")
        let response = try await router.send(URLRequest(url: URL(string: "http://pmapi/echo/fail")!))
        #expect(response.status == 500)
        #expect(response.bodyText.contains("echo"))
    }

    @Test("helpers: respondWithErrorStatus and createResponse")
    func helpers() async throws {
        let router = ServiceRouter()
        try await router.register(EchoService(), as: "echo")
        let missing = try await router.send(URLRequest(url: URL(string: "http://pmapi/echo/missing")!))
        #expect(missing.status == 404)
        #expect(missing.bodyText == "no such thing")
        #expect(missing.headers["X-Reason"] == "test")
        let empty = try await router.send(URLRequest(url: URL(string: "http://pmapi/echo/empty-error")!))
        #expect(empty.status == 409)
        #expect(empty.data.isEmpty)
        let json = try await router.send(URLRequest(url: URL(string: "http://pmapi/echo/json?q=swift")!))
        #expect(json.headers["Content-Type"] == "application/json")
        #expect(try JSONDecoder().decode([String: String].self, from: json.data) == ["path": "/json", "q": "swift"])
    }

    @Test("registered and unregistered callbacks; identifiers are unique and valid")
    func lifecycle() async throws {
        let router = ServiceRouter()
        let service = EchoService()
        try await router.register(service, as: "echo")
        #expect(router.identifiers == ["echo"])
        await #expect(throws: ServiceRouterError.alreadyRegistered("echo")) { try await router.register(EchoService(), as: "echo") }
        await #expect(throws: ServiceRouterError.invalidIdentifier("a/b")) { try await router.register(EchoService(), as: "a/b") }
        await #expect(throws: ServiceRouterError.invalidIdentifier("")) { try await router.register(EchoService(), as: "") }
        #expect(await router.unregister("echo"))
        #expect(await router.unregister("echo") == false)
        #expect(service.events.withLock { $0 } == ["registered echo", "unregistered echo"])
        #expect(try await router.send(URLRequest(url: URL(string: "http://pmapi/echo/x")!)).status == 501)
    }

    @Test("services are called concurrently")
    func concurrency() async throws {
        let router = ServiceRouter()
        let inFlight = Locked((now: 0, peak: 0, gaveUp: false))
        try await router.register(as: "slow") { request in
            inFlight.withLock {
                $0.now += 1; $0.peak = max($0.peak, $0.now)
            }
            // Each call is held until another one is in flight too, rather than for 20 ms that a
            // loaded machine may spend before the next call starts. A router that called services
            // one at a time never gets there: the first call gives up after 10 s, the others at once.
            do {
                try await waitUntil("another call in flight", seconds: 10) { inFlight.withLock { $0.peak >= 2 || $0.gaveUp } }
            } catch is WaitTimedOut {
                inFlight.withLock { $0.gaveUp = true }
            }
            inFlight.withLock { $0.now -= 1 }
            return .text(request.path)
        }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<32 {
                group.addTask { try await router.send(URLRequest(url: URL(string: "http://pmapi/slow/\(index)")!)).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 32))
        #expect(inFlight.withLock { $0.peak } > 1)
    }

    @Test("a pipeline wraps the router")
    func pipelineOverRouter() async throws {
        let router = ServiceRouter()
        try await router.register(EchoService(), as: "echo")
        let log = HookLog()
        let pipeline = Pipeline(transport: router, hooks: [RecordingHook("hook", log: log)])
        let (data, response) = try await pipeline.data(for: URLRequest(url: URL(string: "http://pmapi/echo/x")!))
        #expect(String(decoding: data, as: UTF8.self) == "GET /x")
        #expect(response.statusCode == 200)
        #expect(log.events == ["hook.schedule", "hook.success(200 network)"])
    }

    @Test("a service streams its body through its writer: chunks in order, through a cache that keeps it; one cut short is an error")
    func streaming() async throws {
        let router = ServiceRouter()
        try await router.register(EchoService(), as: "echo")
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: router, hooks: [cache])
        let response = try await pipeline.send(URLRequest(url: URL(string: "http://pmapi/echo/stream")!))
        #expect(response.body.isStreamed && response.headers["Content-Length"] == "3000")
        var received = Data()
        for try await chunk in response.body { received.append(chunk) }  // (chunks may come joined: only the bytes count)
        let expected = [UInt8(ascii: "a"), UInt8(ascii: "b"), UInt8(ascii: "c")].map { Data(repeating: $0, count: 1000) }.reduce(Data(), +)
        #expect(received == expected)
        let hit = try await pipeline.send(URLRequest(url: URL(string: "http://pmapi/echo/stream")!))
        #expect(hit.source == .cache && hit.body.bytes == expected)

        let short = try await router.send(URLRequest(url: URL(string: "http://pmapi/echo/short")!))
        let error = await #expect(throws: TransportError.self) { try await short.body.collect(upTo: 100) }
        #expect(error?.code == .connectionLost)
    }
}
