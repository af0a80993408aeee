import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Recall
import RecallAsyncHTTPClient
import RecallTesting
import Testing

/// Issue #13, point 3: Recall over a real `HTTPClient`, against the loopback origin.
@Suite("AsyncHTTPClient transport", .timeLimit(.minutes(1)))
struct AsyncHTTPClientTransportTests {
    /// A loopback origin of this test's own.
    static func origin() throws -> LoopbackOrigin {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/RecallTests/Support/origin_server.py")
        return try LoopbackOrigin(script: script)
    }

    /// The origin's JSON echo of a request.
    struct Echo: Decodable { let method: String; let path: String; let hit: Int; let bodyLength: Int }

    func echo(_ response: RecallResponse) async throws -> Echo {
        try JSONDecoder().decode(Echo.self, from: try await response.body.collect(upTo: 1 << 20))
    }

    let transport = AsyncHTTPClientTransport(client: .shared)

    /// Requests that reached `path` on `origin` so far.
    func hits(_ origin: LoopbackOrigin, _ path: String) async throws -> Int {
        struct Hits: Decodable { let hits: Int }
        let response = try await transport.send(URLRequest(url: origin.url("/__hits", [("path", path)])))
        return try JSONDecoder().decode(Hits.self, from: try await response.body.collect(upTo: 1 << 20)).hits
    }

    @Test("status, header fields and body come back; a request body and fields go out")
    func exchange() async throws {
        let origin = try Self.origin()
        let get = try await transport.send(URLRequest(url: origin.url("/get", [("cc", "max-age=60"), ("header", "X-Multi: a")])))
        #expect(get.status == 200 && get.headers["Cache-Control"] == "max-age=60" && get.headers["X-Multi"] == "a")
        #expect(try await echo(get).method == "GET")
        var post = URLRequest(url: origin.url("/post", [("echo", "1")]))
        post.httpMethod = "POST"
        post.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        post.httpBody = Data("hello ahc".utf8)
        let echoed = try await transport.send(post).collected()
        #expect(echoed.bodyText == "hello ahc" && echoed.headers["Content-Type"] == "text/plain")
        let missing = try await transport.send(URLRequest(url: origin.url("/missing", [("status", "404")])))
        #expect(missing.status == 404, "every status is a response")
    }

    @Test("under a pipeline: hits from the cache, revalidations, a 503 retried")
    func pipeline() async throws {
        let origin = try Self.origin()
        let cache = HTTPCache()
        let pipeline = Pipeline(
            transport: transport, hooks: [cache],
            retrierFactory: .exponentialBackoff(base: .milliseconds(1), maxAttempts: 3, budget: nil))
        let fresh = origin.url("/fresh", [("cc", "max-age=600")])
        try await pipeline.send(URLRequest(url: fresh)).collected()  // (read: a body dropped unread is not stored)
        #expect(try await echo(await pipeline.send(URLRequest(url: fresh))).hit == 1)
        let tagged = origin.url("/tagged", [("cc", "max-age=0"), ("etag", "v1")])
        try await pipeline.send(URLRequest(url: tagged)).collected()
        let revalidated = try await pipeline.send(URLRequest(url: tagged))
        let revalidatedEcho = try await echo(revalidated)
        #expect(revalidated.source == .revalidated && revalidatedEcho.hit == 1)
        let flaky = try await pipeline.send(URLRequest(url: origin.url("/flaky", [("fail_first", "2")])))
        #expect(try await echo(flaky).hit == 3)
        #expect(cache.statistics.hits == 1 && cache.statistics.revalidated == 1)
    }

    @Test(
        "issue #53, point 1, through a real HTTPClient into a disk storage: no Content-Length traps the process (Int.max too, which corelibs' URLSession traps on by itself); none but one length is stored"
    )
    func hostileContentLength() async throws {
        let origin = try Self.origin()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-ahc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try DiskStorage(directory: directory, entryLimit: 1024)
        let cache = HTTPCache(storage: TieredStorage(memory: MemoryStorage(), lower: storage))
        let pipeline = Pipeline(transport: transport, hooks: [cache])
        let values = [
            "9223372036854775807", "9223372036854775806", "9223372036854775608", "1234567890123456789",
            "123456789012345678901234567890", "-1", "+5", "5,6"
        ]
        for (index, value) in values.enumerated() {
            let path = "/hostile-length-\(index)"
            let url = origin.url(path, [("stream", "5"), ("length", value), ("cc", "max-age=600")])
            for _ in 0..<2 {
                // The client may refuse the framing (an error), or read the five bytes: either way, no trap.
                _ = try? await pipeline.send(URLRequest(url: url)).collected()
            }
            #expect(try await hits(origin, path) == 2, "Content-Length: \(value) was stored")
        }
        await cache.flush()
        #expect(cache.statistics.stores == 0 && storage.statistics.count == 0)
    }

    @Test(
        "issue #39 through a real HTTPClient: a one-user cache returns Set-Cookie; a piece without ETag answers ranges inside it; a plain GET completes pieces")
    func conformanceRules() async throws {
        let origin = try Self.origin()
        var oneUser = CacheConfiguration()
        oneUser.audience = .oneUser
        let pipeline = Pipeline(transport: transport, hooks: [HTTPCache(configuration: oneUser)])
        let cookie = origin.url("/cookie", [("cc", "max-age=600"), ("header", "Set-Cookie:session=ahc; Path=/")])
        try await pipeline.send(URLRequest(url: cookie)).collected()
        var cookied = URLRequest(url: cookie)
        cookied.setValue("session=ahc", forHTTPHeaderField: "Cookie")
        let hit = try await pipeline.send(cookied).collected()
        #expect(hit.source == .cache && hit.headers["Set-Cookie"] == "session=ahc; Path=/")

        let pattern = Data("0123456789abcdefghijklmnopqrstuvwxyz".utf8)
        let expected = Data((0..<100).map { pattern[$0 % pattern.count] })
        let untagged = origin.url("/untagged", [("cc", "max-age=600"), ("size", "100"), ("ranges", "1")])
        var tail = URLRequest(url: untagged)
        tail.setValue("bytes=-40", forHTTPHeaderField: "Range")
        #expect(try await pipeline.send(tail).collected().body.bytes == expected.suffix(40))
        var inner = URLRequest(url: untagged)
        inner.setValue("bytes=70-79", forHTTPHeaderField: "Range")
        let innerAnswer = try await pipeline.send(inner).collected()
        #expect(innerAnswer.source == .cache && innerAnswer.status == 206 && innerAnswer.body.bytes == expected[70...79])
        #expect(try await hits(origin, "/untagged") == 1)

        let tagged = origin.url("/tagged-pieces", [("cc", "max-age=600"), ("size", "100"), ("ranges", "1"), ("etag", "p1")])
        var head = URLRequest(url: tagged)
        head.setValue("bytes=0-29", forHTTPHeaderField: "Range")
        try await pipeline.send(head).collected()
        let whole = try await pipeline.send(URLRequest(url: tagged)).collected()
        #expect(whole.status == 200 && whole.body.bytes == expected && whole.headers["Content-Range"] == nil)
        struct Last: Decodable { let range: String?; let ifRange: String? }
        let last = try JSONDecoder().decode(
            Last.self,
            from: try await transport.send(URLRequest(url: origin.url("/__hits", [("path", "/tagged-pieces")])))
                .body.collect(upTo: 1 << 20))
        #expect(last.range == "bytes=30-99" && last.ifRange == "\"p1\"")
        #expect(try await pipeline.send(URLRequest(url: tagged)).collected().source == .cache)
    }

    @Test("interim responses (102, 103) before the answer are skipped: the final answer arrives and is stored, never a 1xx")
    func interimResponses() async throws {
        let origin = try Self.origin()
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: transport, hooks: [cache])
        let url = origin.url("/interim", [("interim", "102"), ("interim", "103"), ("body", "final"), ("cc", "max-age=60")])
        let first = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(first.status == 200 && first.bodyText == "final" && first.headers["Cache-Control"] == "max-age=60")
        #expect(first.headers["Link"] == nil, "an interim response's fields are not the answer's")
        let again = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(again.source == .cache && again.bodyText == "final")
    }

    @Test("a server that closes or resets the connection without answering: connectionLost, retried for a GET")
    func connectionReset() async throws {
        let origin = try Self.origin()
        do {
            _ = try await transport.send(URLRequest(url: origin.url("/drop", [("drop", "1")])))
            Issue.record("answered")
        } catch let error as TransportError {
            #expect(error.code == .connectionLost && !error.requestNeverSent, "\(error)")
        }
        // A reset (TCP RST) rather than a close.
        do {
            _ = try await transport.send(URLRequest(url: origin.url("/reset", [("reset", "1")])))
            Issue.record("answered")
        } catch let error as TransportError {
            #expect(error.code == .connectionLost && !error.requestNeverSent, "\(error)")
        }
        let pipeline = Pipeline(transport: transport, retrierFactory: .exponentialBackoff(base: .milliseconds(1), maxAttempts: 3, budget: nil))
        let recovered = try await pipeline.send(URLRequest(url: origin.url("/drop-once", [("drop_first", "1")])))
        let recoveredEcho = try await echo(recovered)
        #expect(recovered.status == 200 && recoveredEcho.hit == 2)
    }

    @Test("connection refused: cannotConnect and never sent, so even a POST is retried; the cache answers offline")
    func connectionRefused() async throws {
        // AHC retries a refused connection until the request's deadline unless told not to.
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let transport = AsyncHTTPClientTransport(client: client)
        var origin: LoopbackOrigin? = try Self.origin()
        // (The origin closes each connection after its answer: none is left in the client's pool
        // to be found dead, so the next request connects anew and is refused.)
        let stored = try #require(origin?.url("/offline", [("cc", "max-age=0"), ("body", "kept"), ("header", "Connection:close")]))
        let cache = HTTPCache()
        let pipeline = Pipeline(
            transport: transport, hooks: [cache],
            retrierFactory: .exponentialBackoff(base: .milliseconds(1), maxAttempts: 3, budget: nil))
        try await pipeline.send(URLRequest(url: stored)).collected()
        origin = nil  // the server exits (stopping waits for it): its port refuses connections
        do {
            _ = try await transport.send(URLRequest(url: stored))
            Issue.record("answered")
        } catch let error as TransportError {
            #expect(error.code == .cannotConnect && error.requestNeverSent, "\(error)")
        }
        var post = URLRequest(url: stored)
        post.httpMethod = "POST"
        let context = RecallContext(originalRequest: post)
        await #expect(throws: TransportError.self) { try await pipeline.send(post, context: context) }
        #expect(context.attempts == 3, "a request that never left may be sent again, whatever its method")
        let offline = try await pipeline.send(URLRequest(url: stored))
        #expect(offline.source == .stale && offline.bodyText == "kept")
        try await client.shutdown()
    }

    @Test("the pipeline of docs/integrations.md, made as written: with its upstream down, the stored copy answers offline, within the deadline")
    func documentedExampleAnswersOffline() async throws {
        let (upstream, client) = IntegrationSnippets.upstream()
        var origin: LoopbackOrigin? = try Self.origin()
        let stored = try #require(origin?.url("/documented", [("cc", "max-age=0"), ("body", "kept"), ("header", "Connection:close")]))
        #expect(try await upstream.send(URLRequest(url: stored)).collected().source == .network)
        origin = nil  // the server exits (stopping waits for it): its port refuses connections
        let offline = try await upstream.send(URLRequest(url: stored)).collected()
        #expect(offline.source == .stale && offline.bodyText == "kept", "not a RetryError at the 2 s deadline")
        try await client.shutdown()
    }

    @Test("the request's timeoutInterval is AHC's deadline: timedOut")
    func timeout() async throws {
        let origin = try Self.origin()
        // The origin holds its answer for 30 s: no deadline a loaded machine fires late lets it
        // through first (with 3 s, one could).
        var slow = URLRequest(url: origin.url("/slow", [("delay_ms", "30000")]))
        slow.timeoutInterval = 0.3
        let start = ContinuousClock.now
        do {
            _ = try await transport.send(slow)
            Issue.record("answered")
        } catch let error as TransportError {
            #expect(error.code == .timedOut, "\(error)")
        }
        #expect(ContinuousClock.now - start < .seconds(15), "the request ran on past its deadline")
    }

    @Test("cancelling the caller stops the request at once")
    func cancellation() async throws {
        let origin = try Self.origin()
        // The origin holds its answer for 30 s; the call is cancelled once the request reached it.
        let call = Task { try await transport.send(URLRequest(url: origin.url("/hang", [("delay_ms", "30000")]))) }
        try await waitUntil("the request reached the origin") { try await hits(origin, "/hang") > 0 }
        let start = ContinuousClock.now
        call.cancel()
        let outcome = await call.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(ContinuousClock.now - start < .seconds(15), "the request ran on instead of stopping at the cancellation")
    }

    @Test("a body over a limit that was set fails clearly: at the head by its Content-Length, or as its bytes pass the limit")
    func bodyLimit() async throws {
        let origin = try Self.origin()
        let small = AsyncHTTPClientTransport(client: .shared, maxResponseBodyBytes: 1_000)
        let declared = await #expect(throws: TransportError.self) { try await small.send(URLRequest(url: origin.url("/big", [("size", "5000")]))) }
        #expect(declared?.code == .other && declared?.message.contains("maxResponseBodyBytes") == true)
        let streamed = try await small.send(URLRequest(url: origin.url("/endless", [("stream", "5000"), ("length", "omit")])))
        let passed = await #expect(throws: TransportError.self) { try await streamed.body.collect(upTo: 1 << 20) }
        #expect(passed?.code == .other && passed?.message.contains("maxResponseBodyBytes") == true)
        #expect(try await small.send(URLRequest(url: origin.url("/small", [("size", "900")]))).body.collect(upTo: 1_000).count == 900)
    }

    @Test("64 MiB streams through a cached pipeline with no cap: every byte arrives, in chunks; a body the cache can keep is kept")
    func largeBodyStreams() async throws {
        let origin = try Self.origin()
        let cache = HTTPCache(storage: MemoryStorage(byteLimit: 64 << 20))  // (an entry limit of 16 MiB)
        let pipeline = Pipeline(transport: transport, hooks: [cache])
        let large = origin.url("/large", [("stream", "\(64 << 20)"), ("cc", "max-age=600")])
        let response = try await pipeline.send(URLRequest(url: large))
        #expect(response.body.isStreamed && response.body.expectedLength == 64 << 20)
        var received = 0, chunks = 0, matches = true
        for try await chunk in response.body {
            matches = matches && chunk.enumerated().allSatisfy { $0.element == UInt8(truncatingIfNeeded: received + $0.offset) }
            received += chunk.count
            chunks += 1
        }
        #expect(received == 64 << 20 && chunks > 1 && matches)
        #expect(cache.storage.statistics.count == 0, "larger than the storage's entry limit: not kept")

        let small = origin.url("/kept", [("stream", "\(1 << 20)"), ("cc", "max-age=600")])
        let first = try await pipeline.send(URLRequest(url: small)).collected()
        let again = try await pipeline.send(URLRequest(url: small))
        #expect(first.source == .network && again.source == .cache && again.body.bytes == first.body.bytes)
        #expect(try await hits(origin, "/kept") == 1)
    }

    @Test("errors map to the kinds the retrier reads")
    func errorMapping() {
        func kind(_ error: any Error) -> TransportError.Code { AsyncHTTPClientTransport.mapError(error, url: nil).code }
        #expect(kind(HTTPClientError.remoteConnectionClosed) == .connectionLost)
        #expect(kind(HTTPClientError.connectTimeout) == .cannotConnect)
        #expect(AsyncHTTPClientTransport.mapError(HTTPClientError.connectTimeout, url: nil).requestNeverSent)
        #expect(kind(HTTPClientError.readTimeout) == .timedOut && kind(HTTPClientError.deadlineExceeded) == .timedOut)
        #expect(kind(HTTPClientError.cancelled) == .cancelled)
        #expect(kind(HTTPClientError.invalidURL) == .other)
        #expect(
            RetryClassifier.default.retryReason(
                for: Attempt(
                    request: URLRequest(url: URL(string: "http://a.test")!),
                    outcome: .failure(AsyncHTTPClientTransport.mapError(HTTPClientError.remoteConnectionClosed, url: nil)),
                    number: 1, elapsed: .zero,
                    context: RecallContext(originalRequest: URLRequest(url: URL(string: "http://a.test")!)))) != nil)
    }
}
