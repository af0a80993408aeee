import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import InMemoryLogging
import InMemoryTracing
import Logging
import MetricsTestKit
import Recall
import RecallObservability
import RecallTesting
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing
import Tracing

/// Issue #13, points 4 and 5: logs, metrics and traces from one telemetry object, checked with
/// the test backends of swift-log, swift-metrics and swift-distributed-tracing; and the
/// shutdown service.
@Suite("Observability: logs, metrics, traces, shutdown", .timeLimit(.minutes(1)))
struct RecallTelemetryTests {
    struct Setup {
        let logs = InMemoryLogHandler()
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        let mock = MockTransport()
        /// The cache's date, moved on by the test (a response ages without the test waiting).
        let clock = ShiftedDate()
        let cache: HTTPCache
        let breaker: CircuitBreaker
        let pipeline: Pipeline

        init(level: Logger.Level = .trace, minimumCalls: Int = 10) {
            cache = HTTPCache(now: clock.now)
            var logger = Logger(label: "upstream", factory: { [logs] _ in logs })
            logger.logLevel = level
            breaker = CircuitBreaker(minimumCalls: minimumCalls, clock: ManualClock())
            let telemetry = RecallTelemetry(logger: logger, metrics: metrics, tracer: tracer, cache: cache, breaker: breaker)
            pipeline = Pipeline(
                transport: mock.withCircuitBreaker(breaker), hooks: [telemetry, cache],
                retrierFactory: .exponentialBackoff(base: .zero, maxAttempts: 3, budget: nil),
                clock: ManualClock(autoAdvance: true), observer: telemetry.observe)
        }

        func get(_ path: String) async throws -> RecallResponse {
            try await pipeline.send(URLRequest(url: URL(string: "https://api.test\(path)")!))
        }
    }

    @Test("a miss retried once then stored, and a hit: counters, a timer, gauges")
    func metrics() async throws {
        let s = Setup()
        s.mock.route("GET", "/items", .status(503), .text("items", headers: ["Cache-Control": "max-age=60"]))
        _ = try await s.get("/items")
        _ = try await s.get("/items")
        #expect(try s.metrics.expectCounter("recall.cache.requests", [("result", "miss")]).totalValue == 1)
        #expect(try s.metrics.expectCounter("recall.cache.requests", [("result", "hit")]).totalValue == 1)
        #expect(try s.metrics.expectCounter("recall.cache.writes", [("kind", "stored")]).totalValue == 1)
        #expect(try s.metrics.expectCounter("recall.attempts").totalValue == 2)
        #expect(try s.metrics.expectCounter("recall.retries", [("reason", "status 503")]).totalValue == 1)
        #expect(try s.metrics.expectTimer("recall.request.duration", [("method", "GET"), ("outcome", "success")]).values.count == 2)
        #expect(try s.metrics.expectGauge("recall.cache.storage.records").lastValue == 1)
        #expect(try (s.metrics.expectGauge("recall.cache.storage.bytes").lastValue ?? 0) > 0)
        #expect(try s.metrics.expectGauge("recall.circuit.state", [("partition", "api.test")]).lastValue == 0)
    }

    @Test("one span per request, a child span per attempt; a hit has none; the cache result is an attribute")
    func traces() async throws {
        let s = Setup()
        s.mock.route("GET", "/items", .status(503), .text("items", headers: ["Cache-Control": "max-age=60"]))
        _ = try await s.get("/items")
        _ = try await s.get("/items")
        let spans = s.tracer.finishedSpans
        let requests = spans.filter { $0.operationName == "recall.request" }
        let attempts = spans.filter { $0.operationName == "recall.attempt" }
        #expect(requests.count == 2 && attempts.count == 2)
        let first = try #require(requests.first)
        #expect(first.attributes["recall.cache.result"]?.toSpanAttribute() == "miss")
        #expect(first.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(requests.last?.attributes["recall.cache.result"]?.toSpanAttribute() == "hit")
        #expect(attempts.allSatisfy { $0.parentSpanID == first.spanContext.spanID && $0.spanContext.traceID == first.spanContext.traceID })
        #expect(attempts.first?.attributes["recall.retry.reason"]?.toSpanAttribute() == "status 503")
        #expect(attempts.map { $0.attributes["recall.attempt.number"]?.toSpanAttribute() } == [1, 2])
    }

    @Test("a failed request: the span records the error, the log says so at notice")
    func failure() async throws {
        let s = Setup(level: .info)
        s.mock.route("GET", "/down", .error(TransportError(.cannotConnect)))
        await #expect(throws: TransportError.self) { try await s.get("/down") }
        let request = try #require(s.tracer.finishedSpans.first { $0.operationName == "recall.request" })
        #expect(request.status?.code == .error && !request.errors.isEmpty)
        #expect(try s.metrics.expectTimer("recall.request.duration", [("method", "GET"), ("outcome", "failure")]).values.count == 1)
        #expect(s.logs.entries.contains { $0.level == .notice && "\($0.message)".contains("failed") })
    }

    @Test("a production log at .info is quiet while things work: hits, misses, retries stay at debug")
    func quietAtInfo() async throws {
        let s = Setup(level: .info)
        s.mock.route("GET", "/items", .status(503), .text("items", headers: ["Cache-Control": "max-age=60"]))
        for _ in 0..<5 { _ = try await s.get("/items") }
        #expect(s.logs.entries.isEmpty, "\(s.logs.entries.map(\.message))")
        let verbose = Setup(level: .debug)
        verbose.mock.route("GET", "/items", .status(503), .text("items", headers: ["Cache-Control": "max-age=60"]))
        _ = try await verbose.get("/items")
        await verbose.cache.flush()  // the miss is stored, and logged, just after its answer
        let messages = verbose.logs.entries.map { "\($0.message)" }
        #expect(messages.contains("cache miss") && messages.contains { $0.hasPrefix("retry #2") } && messages.contains("cache stored"))
    }

    @Test("an open circuit is counted, logged at notice, and its state is a gauge")
    func breaker() async throws {
        let s = Setup(level: .info, minimumCalls: 2)
        s.mock.route("GET", "/down", .status(500))
        _ = try? await s.get("/down")  // 500, 500: open; the third attempt is refused
        _ = try? await s.get("/down")
        #expect(try s.metrics.expectCounter("recall.circuit.refused").totalValue >= 2, "the third attempt and the next request refused")
        #expect(try s.metrics.expectGauge("recall.circuit.state", [("partition", "api.test")]).lastValue == 2)
        #expect(try s.metrics.expectCounter("recall.retry.gave_up", [("reason", "notRetryable")]).totalValue >= 1)
        #expect(s.logs.entries.contains { $0.level == .notice })
    }

    @Test("a background refresh leaves the answered request's spans alone and opens none of its own")
    func backgroundRefresh() async throws {
        let s = Setup()
        s.mock.route(
            "GET", "/swr", .text("v1", headers: ["Cache-Control": "max-age=0, stale-while-revalidate=60", "ETag": "\"1\""]),
            .text("v2", headers: ["Cache-Control": "max-age=0, stale-while-revalidate=60", "ETag": "\"2\""]))
        _ = try await s.get("/swr")
        s.clock.advance(by: 2)  // the answer is stale now
        #expect(try await s.get("/swr").bodyText == "v1")  // stale; the refresh runs in the background
        await s.cache.waitForBackgroundRefreshes()
        #expect(s.mock.count(for: "/swr") == 2)
        let spans = s.tracer.finishedSpans
        #expect(spans.filter { $0.operationName == "recall.request" }.count == 2)
        #expect(spans.filter { $0.operationName == "recall.attempt" }.count == 1, "the first request's attempt only")
        #expect(s.tracer.activeSpans.isEmpty, "no span left open")
        #expect(try s.metrics.expectCounter("recall.attempts").totalValue == 2, "the refresh's attempt is counted")
    }

    @Test("tracer nil: no spans; URLs redacted; a waiter that fetched itself is a miss, not coalesced; a cancellation is not a notice")
    func details() async throws {
        let logs = InMemoryLogHandler()
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        // The process's tracer is this one (once per process: no other test bootstraps), so
        // `tracer: nil` falling back to it would show.
        InstrumentationSystem.bootstrap(tracer)
        var logger = Logger(label: "details", factory: { _ in logs })
        logger.logLevel = .trace
        let telemetry = RecallTelemetry(logger: logger, metrics: metrics, tracer: nil)
        let mock = MockTransport()
        let gate = AsyncStream<Void>.makeStream()
        mock.route("GET", "/slow") { _ in
            var iterator = gate.stream.makeAsyncIterator()
            await iterator.next()
            return .text("slow", headers: ["Cache-Control": "no-store"])
        }
        let cache = HTTPCache()
        let pipeline = Pipeline(transport: mock, hooks: [telemetry, cache], observer: telemetry.observe)
        let url = URL(string: "https://user:pw@api.test/slow?token=abc&page=2")!
        async let first = pipeline.send(URLRequest(url: url))
        while mock.count(for: "/slow") == 0 { await Task.yield() }
        async let second = pipeline.send(URLRequest(url: url))
        while cache.statistics.waiting == 0 { await Task.yield() }
        gate.continuation.yield()
        gate.continuation.finish()
        _ = try await [first, second]
        #expect(tracer.finishedSpans.isEmpty && tracer.activeSpans.isEmpty, "tracer: nil means no spans, not the global tracer")
        // Two requests: two results (both misses: no-store). The one that waited had to fetch itself
        // after all (nothing was stored): a miss, not coalesced (issue #40).
        #expect(try metrics.expectCounter("recall.cache.requests", [("result", "miss")]).totalValue == 2)
        #expect(((try? metrics.expectCounter("recall.cache.coalesced"))?.totalValue ?? 0) == 0)
        // One the leader's stored answer serves is coalesced, counted once.
        let stored = AsyncStream<Void>.makeStream()
        mock.route("GET", "/kept") { _ in
            var iterator = stored.stream.makeAsyncIterator()
            await iterator.next()
            return .text("kept", headers: ["Cache-Control": "max-age=60"])
        }
        let kept = URL(string: "https://api.test/kept")!
        async let leader = pipeline.send(URLRequest(url: kept))
        while mock.count(for: "/kept") == 0 { await Task.yield() }
        async let follower = pipeline.send(URLRequest(url: kept))
        while cache.statistics.waiting == 0 { await Task.yield() }
        stored.continuation.yield()
        stored.continuation.finish()
        _ = try await [leader, follower]
        #expect(mock.count(for: "/kept") == 1)
        #expect(try metrics.expectCounter("recall.cache.coalesced").totalValue == 1)
        #expect(!logs.entries.contains { "\($0.message)\($0.metadata)".contains("abc") || "\($0.message)".contains("pw@") })
        #expect(logs.entries.contains { "\($0.metadata)".contains("token=REDACTED&page=2") })
        // A caller that gives up: debug, not notice.
        let cancelled = Task { try await pipeline.send(URLRequest(url: URL(string: "https://api.test/never")!)) }
        cancelled.cancel()
        _ = try? await cancelled.value
        #expect(!logs.entries.contains { $0.level >= .notice })
    }

    @Test("graceful shutdown waits for a background refresh under way, then flushes the storage")
    func shutdown() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-shutdown-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try DiskStorage(directory: directory)
        let clock = ShiftedDate()
        let cache = HTTPCache(storage: disk, now: clock.now)
        let mock = MockTransport()
        let gate = AsyncStream<Void>.makeStream()
        let calls = Mutex(0)
        mock.route("GET", "/swr") { _ in
            let call = calls.withLock { count -> Int in
                count += 1; return count
            }
            if call == 2 {  // the refresh: held until the test opens the gate
                var iterator = gate.stream.makeAsyncIterator()
                await iterator.next()
            }
            return .text("v\(call)", headers: ["Cache-Control": "max-age=0, stale-while-revalidate=60", "ETag": "\"\(call)\""])
        }
        let pipeline = Pipeline(transport: mock, hooks: [cache])
        let request = URLRequest(url: URL(string: "https://api.test/swr")!)
        _ = try await pipeline.send(request)
        clock.advance(by: 2)  // the answer is stale now
        #expect(try await pipeline.send(request).bodyText == "v1")  // served stale; the refresh starts
        try await waitUntil("the refresh reached the origin") { calls.withLock { $0 } >= 2 }
        let logs = InMemoryLogHandler()
        let service = RecallCacheService(caches: [cache], logger: Logger(label: "shutdown", factory: { _ in logs }))
        final class Flag: Sendable { let raised = Mutex(false) }
        let finished = Flag()
        try await testGracefulShutdown { trigger in
            let run = Task {
                try await service.run()
                finished.raised.withLock { $0 = true }
            }
            trigger.triggerGracefulShutdown()
            try await waitUntil("the service began to finish") { logs.entries.contains { "\($0.message)".contains("waiting for background refreshes") } }
            #expect(!finished.raised.withLock { $0 }, "the service waits while the refresh is under way")
            gate.continuation.yield()
            gate.continuation.finish()
            try await run.value
        }
        #expect(finished.raised.withLock { $0 })
        #expect(logs.entries.contains { "\($0.message)".contains("storage flushed") })
        #expect(disk.statistics.pendingBytes == 0, "no write left queued")
        // What the refresh fetched is in the file the next process reads.
        let key = try #require(cache.key(for: request))
        #expect(await disk.record(for: key)?.variants.first.map { String(decoding: $0.body, as: UTF8.self) } == "v2")
    }
}
