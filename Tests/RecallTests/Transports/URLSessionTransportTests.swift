import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("URLSessionTransport end to end against the loopback origin", .timeLimit(.minutes(1)))
struct URLSessionTransportTests {
    let transport = URLSessionTransport()

    @Test("GET returns status, headers and body from the origin")
    func get() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("get")
        let url = server.url(path, ["cc": "max-age=60", "etag": "v1"], extra: [.init(name: "header", value: "X-Multi: a")])
        let response = try await transport.send(URLRequest(url: url)).collected()
        #expect(response.status == 200)
        #expect(response.source == .network)
        #expect(response.headers["cache-control"] == "max-age=60")
        #expect(response.headers["ETag"] == "\"v1\"")
        #expect(response.headers["X-Multi"] == "a")
        let json = try #require(try JSONSerialization.jsonObject(with: response.data) as? [String: Any])
        #expect(json["method"] as? String == "GET")
        #expect(json["path"] as? String == path)
        #expect(try await server.hits(path) == 1)
    }

    @Test(
        "maxResponseBodyBytes: a body up to the limit arrives; a larger one fails (Content-Length or bytes received), not retried",
        arguments: ["given", "omit"])
    func bodyLimit(length: String) async throws {
        let server = try await OriginServer.shared.value
        let limited = URLSessionTransport(maxResponseBodyBytes: 1_000)
        #expect(limited.maxResponseBodyBytes == 1_000)
        var query = ["stream": "1000"]
        if length == "omit" { query["length"] = "omit" }
        let fits = try await limited.send(URLRequest(url: server.url(OriginServer.uniquePath("fits"), query))).collected()
        #expect(fits.data.count == 1_000)
        query["stream"] = "1001"
        let path = OriginServer.uniquePath("over")
        let pipeline = Pipeline(transport: limited, retrierFactory: .policy(RetryPolicy(maxAttempts: 3)))
        let error = try await #require(throws: TransportError.self) { try await pipeline.send(URLRequest(url: server.url(path, query))).collected() }
        #expect(error.code == .other)
        #expect(error.message.contains("maxResponseBodyBytes of 1000"), "\(error)")
        #expect(try await server.hits(path) == 1)
        #expect(URLSessionTransport().maxResponseBodyBytes == nil)
    }

    @Test("POST sends its body and header fields; the origin echoes the body")
    func postWithBody() async throws {
        let server = try await OriginServer.shared.value
        var request = URLRequest(url: server.url(OriginServer.uniquePath("post"), ["echo": "1"]))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"name":"recall"}"#.utf8)
        let response = try await transport.send(request).collected()
        #expect(response.status == 200)
        #expect(response.bodyText == #"{"name":"recall"}"#)
        #expect(response.headers["Content-Type"] == "application/json")
    }

    @Test("request header fields reach the origin")
    func requestHeaders() async throws {
        let server = try await OriginServer.shared.value
        var request = URLRequest(url: server.url(OriginServer.uniquePath("headers")))
        request.setValue("yes", forHTTPHeaderField: "X-Recall-Test")
        let response = try await transport.send(request).collected()
        let json = try #require(try JSONSerialization.jsonObject(with: response.data) as? [String: Any])
        let headers = try #require(json["headers"] as? [String: String])
        #expect(headers.first { $0.key.lowercased() == "x-recall-test" }?.value == "yes")
    }

    @Test("404 and 503 are responses, not errors", arguments: [404, 503])
    func errorStatuses(status: Int) async throws {
        let server = try await OriginServer.shared.value
        let response = try await transport.send(URLRequest(url: server.url(OriginServer.uniquePath("status"), ["status": "\(status)", "retry_after": "5"])))
        #expect(response.status == status)
        #expect(response.headers["Retry-After"] == "5")
    }

    @Test("connection refused is TransportError.cannotConnect")
    func connectionRefused() async throws {
        // Port 9 (discard) on loopback has no listener here; bind-and-close would race.
        let request = URLRequest(url: URL(string: "http://127.0.0.1:9/nothing")!)
        let error = await #expect(throws: TransportError.self) { try await transport.send(request).collected() }
        #expect(error?.code == .cannotConnect)
        #expect(error?.requestNeverSent == true)
    }

    @Test("a connection closed without an answer is a lost connection (#39), as through AsyncHTTPClient")
    func droppedConnection() async throws {
        let server = try await OriginServer.shared.value
        let request = URLRequest(url: server.url(OriginServer.uniquePath("drop"), ["drop": "1"]))
        let error = await #expect(throws: TransportError.self) { try await transport.send(request).collected() }
        #expect(error?.code == .connectionLost)
    }

    @Test(
        "an unusual Content-Encoding: no worse than plain URLSession — its body where it gets one, else its own error, never a lost connection (#39)",
        arguments: ["Content-Encoding:foo", "Content-Encoding:gzip", "Content-Encoding:x-custom, identity", "Content-Encoding:br"])
    func unusualContentEncoding(header: String) async throws {
        let server = try await OriginServer.shared.value
        let url = server.url(OriginServer.uniquePath("encoding"), ["body": "hello", "header": header])
        let plain: Result<Data, any Error>
        do {
            plain = .success(try await URLSession.shared.data(from: url).0)
        } catch {
            plain = .failure(error)
        }
        switch plain {
        case .success(let data):
            let response = try await transport.send(URLRequest(url: url)).collected()
            #expect(response.status == 200 && response.body.bytes == data, "what plain URLSession delivers")
        case .failure:
            let error = await #expect(throws: TransportError.self) { try await transport.send(URLRequest(url: url)).collected() }
            #expect(error?.code == .other, "a body corelibs could not decode is not a lost connection: \(String(describing: error))")
        }
    }

    @Test(
        "a 3xx without Location whose body corelibs drops: the head arrives, the body fails when read, and the cache stores nothing; with Location the body arrives",
        arguments: [301, 302, 307, 308])
    func redirectWithoutLocation(status: Int) async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("no-location")
        let url = server.url(path, ["status": String(status), "body": "fifteen bytes!!", "cc": "max-age=600"])
        let response = try await URLSessionTransport(redirects: .doNotFollow).send(URLRequest(url: url))
        #expect(response.status == status && response.headers["Content-Length"] == "15")
        await #expect(throws: TransportError.self) { try await response.body.collect(upTo: 1 << 20) }
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(redirects: .doNotFollow), hooks: [cache])
        await #expect(throws: TransportError.self) { try await pipeline.send(URLRequest(url: url)).collected() }
        await #expect(throws: TransportError.self) { try await pipeline.send(URLRequest(url: url)).collected() }
        #expect(cache.statistics.stores == 0 && cache.statistics.hits == 0)
        #expect(try await server.hits(path) == 3)
        let located = server.url(OriginServer.uniquePath("located"), ["status": String(status), "body": "fifteen bytes!!", "header": "Location:/x"])
        #expect(try await URLSessionTransport(redirects: .doNotFollow).send(URLRequest(url: located)).collected().bodyText == "fifteen bytes!!")
        // Of unknown length (no Content-Length, the body ends with the connection): failing too.
        let unknown = server.url(
            OriginServer.uniquePath("no-location-unknown"),
            [
                "status": String(status), "stream": "100", "length": "omit",
                "cc": "max-age=600"
            ])
        let open = try await URLSessionTransport(redirects: .doNotFollow).send(URLRequest(url: unknown))
        #expect(open.status == status)
        await #expect(throws: TransportError.self) { try await open.body.collect(upTo: 1 << 20) }
        // Declared empty: nothing was lost.
        let empty = server.url(OriginServer.uniquePath("no-location-empty"), ["status": String(status), "body": ""])
        #expect(try await URLSessionTransport(redirects: .doNotFollow).send(URLRequest(url: empty)).collected().bodyText == "")
    }

    @Test(
        "interim responses (102, 103) before the answer: corelibs loses the final status and fields, so the transport fails clearly instead of answering 1xx",
        arguments: [["102"], ["103"], ["102", "103"]])
    func interimResponses(codes: [String]) async throws {
        let server = try await OriginServer.shared.value
        let url = server.url(
            OriginServer.uniquePath("interim"), ["body": "final", "cc": "max-age=60"],
            extra: codes.map { URLQueryItem(name: "interim", value: $0) })
        let error = await #expect(throws: TransportError.self) { try await URLSessionTransport().send(URLRequest(url: url)) }
        #expect(error?.code == .other && error?.message.contains("interim response") == true)
        let plain = try await URLSessionTransport().send(URLRequest(url: server.url(OriginServer.uniquePath("no-interim"), ["body": "final"])))
        #expect(plain.status == 200)
    }

    @Test("a server that closes the connection without answering: the stored response answers, offline (#39)")
    func droppedConnectionServesOffline() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("drop-offline")
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        // Stored, stale (max-age=0, no validator), then every later request dropped.
        let url = server.url(path, ["cc": "max-age=0", "body": "kept", "drop_after": "1"])
        let first = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(first.source == .network && first.body.bytes == Data("kept".utf8))
        let offline = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(offline.source == .stale && offline.body.bytes == Data("kept".utf8))
        #expect(cache.statistics.staleServed[.disconnected] == 1)
    }

    @Test("cancelling the task cancels the request and throws CancellationError")
    func cancellation() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("slow")
        // The origin holds its answer for 30 s: however slowly a loaded machine gets to the
        // cancellation, it comes first (with 3 s, a slow run could see the answer instead).
        let request = URLRequest(url: server.url(path, ["delay_ms": "30000"]))
        let task = Task { try await transport.send(request).collected() }
        // Wait until the request reached the origin, then cancel it mid-flight.
        try await waitUntil("the request reached the origin") { try await server.hits(path) > 0 }
        let start = ContinuousClock.now
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(ContinuousClock.now - start < .seconds(15), "the request ran on instead of stopping at the cancellation")
    }

    @Test("a pipeline over URLSessionTransport maps cancellation to CancellationError")
    func pipelineCancellation() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("slow-pipeline")
        let pipeline = Pipeline(transport: transport)
        let task = Task { try await pipeline.data(for: URLRequest(url: server.url(path, ["delay_ms": "30000"]))) }
        try await waitUntil("the request reached the origin") { try await server.hits(path) > 0 }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}

@Suite("TransportError taxonomy", .timeLimit(.minutes(1)))
struct TransportErrorTests {
    @Test(
        "URLError codes map to kinds",
        arguments: [
            (URLError.Code.timedOut, TransportError.Code.timedOut),
            (.cannotConnectToHost, .cannotConnect),
            (.networkConnectionLost, .connectionLost),
            (.cannotFindHost, .dnsFailure),
            (.dnsLookupFailed, .dnsFailure),
            (.secureConnectionFailed, .tls),
            (.serverCertificateUntrusted, .tls),
            (.cancelled, .cancelled),
            (.badURL, .other)
        ])
    func mapping(code: URLError.Code, kind: TransportError.Code) {
        let error = TransportError(URLError(code), url: URL(string: "https://example.com"))
        #expect(error.code == kind)
        #expect(error.urlErrorCode == code.rawValue)
        #expect(error.description.contains("example.com"))
    }

    /// Found in review of issue #36: corelibs' ephemeral configuration keeps a cookie jar, so the
    /// transport sent one caller's `Set-Cookie` back with another caller's request — below the
    /// cache, which partitions by the cookie it sees.
    @Test("the transport keeps no cookie jar: one caller's Set-Cookie never goes out with the next request")
    func noCookieJar() async throws {
        let server = try await OriginServer.shared.value
        let transport = URLSessionTransport()
        let login = server.url(OriginServer.uniquePath("login"), ["header": "Set-Cookie: session=alice; Path=/"])
        _ = try await transport.send(URLRequest(url: login)).collected()
        let other = try await transport.send(URLRequest(url: server.url(OriginServer.uniquePath("inbox")))).collected()
        let echoed = try JSONSerialization.jsonObject(with: other.data) as? [String: Any]
        let headers = (echoed?["headers"] as? [String: String]) ?? [:]
        #expect(!headers.keys.contains { $0.lowercased() == "cookie" }, "sent: \(headers)")
    }
}
