import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
@testable import Recall
import RecallTesting
import Testing

/// Bodies that stream from the loopback origin through the pipeline, the cache and
/// `RecallURLProtocol`. The origin holds a gated stream after its first 64 KiB until the test
/// opens the gate, so "the caller had bytes before the body ended" is a fact, not a timing.
/// (Two minutes: a hang guard, not a timing — under ThreadSanitizer beside the other streaming suites one test takes 50–60 s.)
@Suite("Streaming bodies end to end over the loopback origin", .timeLimit(.minutes(2)))
struct StreamingTests {
    static let size = 1 << 20

    /// The bytes the origin streams: 0, 1, … 255, 0, …
    static func expected(_ count: Int) -> Data {
        // Byte i is i mod 256: one period, repeated. (Not a `map` over every byte: in a debug
        // build that asks the runtime for generic metadata per byte, seconds per MiB with the
        // cores busy, and it held a thread of the test pool all that time, starving other tests.)
        Data.repeating(Data((0..<256).map { UInt8($0) }), count: count)
    }

    func gated(_ server: OriginServer, _ path: String, gate: String, size: Int = size, _ extra: [String: String] = [:]) -> URL {
        server.url(path, ["stream": "\(size)", "gate": gate, "cc": "max-age=600"].merging(extra) { $1 })
    }

    @Test("the caller has the head and the first bytes before the origin sends the rest; the cache keeps the whole body")
    func headFirstThroughTheCache() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-head")
        let gate = UUID().uuidString
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = gated(server, path, gate: gate)
        let response = try await pipeline.send(URLRequest(url: url))
        #expect(response.status == 200 && response.body.isStreamed && response.body.expectedLength == Self.size)
        var iterator = response.body.makeAsyncIterator()
        var received = Data()
        while received.count < 64 << 10, let chunk = try await iterator.next() { received.append(chunk) }
        #expect(received.count < Self.size, "the origin holds the rest until the gate opens")
        try await server.open(gate: gate)
        while let chunk = try await iterator.next() { received.append(chunk) }
        #expect(received == Self.expected(Self.size))

        let hit = try await pipeline.send(URLRequest(url: url))
        #expect(hit.source == .cache && hit.body.bytes == Self.expected(Self.size))
        #expect(try await server.hits(path) == 1)
    }

    @Test("a caller that stops reading halfway leaves nothing stored; the next request goes to the origin")
    func stopHalfway() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-stop")
        let gate = UUID().uuidString
        let storage = MemoryStorage(byteLimit: 64 << 20)
        let cache = HTTPCache(storage: storage)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = gated(server, path, gate: gate)
        do {
            let response = try await pipeline.send(URLRequest(url: url))
            var iterator = response.body.makeAsyncIterator()
            _ = try await iterator.next()
            response.body.discard()
        }
        try await server.open(gate: gate)
        let again = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(again.source == .network && again.body.bytes == Self.expected(Self.size))
        #expect(try await server.hits(path) == 2)
        #expect(cache.statistics.notStored == [.incomplete: 1] && cache.statistics.stores == 1)
    }

    @Test("a reader cancelled halfway (its task) stops the download: nothing stored, no task left running, timers included")
    func cancelledHalfway() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-cancel")
        let gate = UUID().uuidString
        let cache = HTTPCache(storage: MemoryStorage(byteLimit: 64 << 20))
        var policy = RetryPolicy(maxAttempts: 2)
        policy.attemptTimeout = .seconds(600)  // (a timer per wait for the body, counted too: one left running outlives the test's limit)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache], retrierFactory: .policy(policy))
        let census = TaskCensus()
        let firstChunk = Flag()
        let reader = TaskCensus.$current.withValue(census) {
            Task {
                let response = try await pipeline.send(URLRequest(url: gated(server, path, gate: gate)))
                var bytes = 0
                for try await chunk in response.body {
                    bytes += chunk.count
                    firstChunk.set()
                }
                return bytes
            }
        }
        try await waitUntil("the first chunk is read") { firstChunk.isSet }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        try await server.open(gate: gate)
        try await waitUntil("no task the request started is left running") { census.live == 0 }
        #expect(cache.statistics.notStored == [.incomplete: 1] && cache.statistics.stores == 0)
    }

    @Test("a body cut short of its Content-Length fails the read with connectionLost and is not stored")
    func truncated() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-cut")
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = server.url(path, ["stream": "200000", "truncate": "1", "cc": "max-age=600"])
        for round in 1...2 {
            let response = try await pipeline.send(URLRequest(url: url))
            #expect(response.source == .network)
            let error = await #expect(throws: TransportError.self) { try await response.body.collect(upTo: 1 << 20) }
            #expect(error?.code == .connectionLost)
            #expect(try await server.hits(path) == round)
        }
        #expect(cache.statistics.notStored == [.incomplete: 2] && cache.statistics.stores == 0)
    }

    @Test("a connection reset half way through the body fails the read with connectionLost and is not stored")
    func resetMidBody() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-reset")
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = server.url(path, ["stream": "\(Self.size)", "reset_mid": "1", "cc": "max-age=600"])
        let response = try await pipeline.send(URLRequest(url: url))
        var received = 0
        let error = await #expect(throws: TransportError.self) { for try await chunk in response.body { received += chunk.count } }
        #expect(error?.code == .connectionLost && received < Self.size)
        #expect(cache.statistics.notStored == [.incomplete: 1] && cache.statistics.stores == 0)
    }

    @Test("a body longer than the storage's entry limit streams to the caller and is not stored")
    func overEntryLimit() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-large")
        let storage = MemoryStorage(byteLimit: 64 << 20, entryLimit: 256 << 10)
        let cache = HTTPCache(storage: storage)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = server.url(path, ["stream": "\(Self.size)", "cc": "max-age=600"])
        for _ in 0..<2 {
            let response = try await pipeline.send(URLRequest(url: url)).collected()
            #expect(response.source == .network && response.body.bytes == Self.expected(Self.size))
        }
        #expect(try await server.hits(path) == 2 && storage.statistics.count == 0)
        #expect(cache.statistics.notStored == [.tooLarge: 2] && cache.statistics.stores == 0)
    }

    @Test("concurrent misses of a streamed response share one origin request: the others get the stored body")
    func coalescedFollowers() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-shared")
        let gate = UUID().uuidString
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = gated(server, path, gate: gate)
        let leader = try await pipeline.send(URLRequest(url: url))
        let followers = (0..<4).map { _ in Task { try await pipeline.send(URLRequest(url: url)).collected() } }
        try await waitUntil("the followers wait for the leader") { cache.statistics.waiting == 4 }
        try await server.open(gate: gate)
        #expect(try await leader.body.collect(upTo: 2 << 20) == Self.expected(Self.size))
        for follower in followers {
            let answer = try await follower.value
            #expect(answer.source == .cache && answer.body.bytes == Self.expected(Self.size))
        }
        #expect(try await server.hits(path) == 1)
    }

    @Test("a body too large to keep by its Content-Length lets the concurrent misses fetch at once, without waiting for it")
    func tooLargeAtTheHead() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-large-head")
        let gate = UUID().uuidString
        let cache = HTTPCache(storage: MemoryStorage(byteLimit: 64 << 20, entryLimit: 256 << 10))
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = gated(server, path, gate: gate)
        let leader = try await pipeline.send(URLRequest(url: url))
        // The leader's body is held at the origin: a miss that waited for it would not get its head.
        let other = try await pipeline.send(URLRequest(url: url))
        #expect(other.source == .network && cache.statistics.notStored == [.tooLarge: 2])
        try await server.open(gate: gate)
        #expect(try await leader.body.collect(upTo: 2 << 20).count == Self.size)
        #expect(try await other.body.collect(upTo: 2 << 20).count == Self.size)
        #expect(try await server.hits(path) == 2)
    }

    @Test("a range request whose answer fails while the cache collects it fails, and the next one is not left waiting")
    func failedRangeCollect() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-range-cut")
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache()])
        var request = URLRequest(url: server.url(path, ["stream": "200000", "truncate": "1", "cc": "max-age=600"]))
        request.setValue("bytes=0-99", forHTTPHeaderField: "Range")
        for _ in 0..<2 {
            let error = await #expect(throws: TransportError.self) { try await pipeline.send(request).collected() }
            #expect(error?.code == .connectionLost)
        }
        #expect(try await server.hits(path) == 2)
    }

    @Test("a background refresh (stale-while-revalidate) of a streamed response stores the new response")
    func backgroundRefreshStores() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-swr")
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = server.url(path, ["stream": "100000", "cc": "max-age=0, stale-while-revalidate=600"])
        let first = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(first.source == .network && first.headers["X-Hits"] == "1")
        let stale = try await pipeline.send(URLRequest(url: url))
        #expect(stale.source == .stale && stale.headers["X-Hits"] == "1")
        await cache.waitForBackgroundRefreshes()
        let refreshed = try await pipeline.send(URLRequest(url: url))
        #expect(refreshed.headers["X-Hits"] == "2" && refreshed.body.bytes == Self.expected(100_000), "served from the refreshed entry")
        #expect(try await server.hits(path) >= 2)
    }

    @Test("RecallURLProtocol gives a delegate each chunk as it arrives (progress), and the whole body in the end")
    func protocolStreamsToDelegate() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("stream-protocol")
        let gate = UUID().uuidString
        let configuration = URLSessionConfiguration.ephemeral
        try configuration.sendThroughRecall(Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache()]), protocolClass: Routes.self)
        let delegate = CountingDelegate()
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        session.dataTask(with: gated(server, path, gate: gate)).resume()
        try await waitUntil("the first bytes reach the delegate") { delegate.received > 0 }
        #expect(delegate.received < Self.size && !delegate.completed, "the origin holds the rest until the gate opens")
        try await server.open(gate: gate)
        try await waitUntil("the task completes") { delegate.completed }
        #expect(delegate.received == Self.size && delegate.failure == nil && delegate.chunks > 1)
    }

    @Test(
        "progress as people expect it (#54, point 5): the response's expectedContentLength is the body's length, and chunks come before the end, on a miss, a hit and a pass-through"
    )
    func progressThroughRecall() async throws {
        final class Routes: RecallURLProtocol {
            static let mine = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { mine }
        }
        let server = try await OriginServer.shared.value
        let configuration = URLSessionConfiguration.ephemeral
        try configuration.sendThroughRecall(Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache()]), protocolClass: Routes.self)
        /// Runs one task through a session of that configuration with a counting delegate; the
        /// origin's gate (if any) opens once the first bytes arrived, so chunks before the end are a fact.
        func load(_ url: URL, gate: String?) async throws -> CountingDelegate {
            let delegate = CountingDelegate()
            let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: url).resume()
            try await waitUntil("the first bytes reach the delegate") { delegate.received > 0 }
            if let gate {
                #expect(delegate.received < Self.size && !delegate.completed, "the origin holds the rest until the gate opens")
                try await server.open(gate: gate)
            }
            try await waitUntil("the task completes") { delegate.completed }
            #expect(delegate.received == Self.size && delegate.failure == nil)
            return delegate
        }
        for kind in ["miss", "pass-through"] {
            let path = OriginServer.uniquePath("progress-\(kind)")
            let gate = UUID().uuidString
            let url = gated(server, path, gate: gate, kind == "pass-through" ? ["cc": "no-store"] : [:])
            let first = try await load(url, gate: gate)
            #expect(first.chunks > 1, "\(kind)")
            // (Not the task's countOfBytesExpectedToReceive: corelibs sets it for its own protocols
            // only, and a URLProtocol cannot — it stays 0 through any custom protocol on Linux.)
            #expect(first.expected == Int64(Self.size), "expectedContentLength on the \(kind)")
            guard kind == "miss" else { continue }
            let hit = try await load(url, gate: nil)
            #expect(hit.expected == Int64(Self.size), "expectedContentLength on the hit")
            #expect(try await server.hits(path) == 1, "the second load was a hit")
        }
    }
}

/// Counts what a data task's delegate hears.
final class CountingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let state = Locked((received: 0, chunks: 0, completed: false, failure: String?.none, expected: Int64(-1)))
    /// The task's response's `expectedContentLength` as its first bytes arrived.
    var expected: Int64 { state.withLock { $0.expected } }
    var received: Int { state.withLock { $0.received } }
    var chunks: Int { state.withLock { $0.chunks } }
    var completed: Bool { state.withLock { $0.completed } }
    var failure: String? { state.withLock { $0.failure } }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let expected = dataTask.response?.expectedContentLength ?? -1
        state.withLock {
            if $0.chunks == 0 { $0.expected = expected }
            $0.received += data.count
            $0.chunks += 1
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        state.withLock {
            $0.completed = true
            $0.failure = error.map { "\($0)" }
        }
    }
}
