import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let itemURL = URL(string: "https://api.example.com/items")!

/// A hook that answers every request itself, as a cache hit would.
private struct AnsweringHook: ServiceHook {
    func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        .respond(RecallResponse(status: 200, body: Data("cached".utf8), url: request.url, source: .cache))
    }
}

/// A hook that adds a header field on the way in and another on the way out.
private struct HeaderHook: ServiceHook {
    func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        var request = request
        request.setValue("Bearer token", forHTTPHeaderField: "Authorization")
        return .proceed(request)
    }

    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        var response = response
        response.headers.add("X-Seen-Authorization", request.value(forHTTPHeaderField: "Authorization") ?? "none")
        return response
    }
}

private struct HookFailure: Error, Equatable {}

/// A hook that throws from the event named in `phase`.
private struct ThrowingHook: ServiceHook {
    let phase: String
    func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
        if phase == "schedule" { throw HookFailure() }
        return .proceed(request)
    }

    func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
        if phase == "success" { throw HookFailure() }
        return response
    }
}

/// A hook that turns any failure into a stale answer.
private struct RecoveringHook: ServiceHook {
    func onFailure(_ error: any Error, for request: URLRequest, context: RecallContext) async throws -> RecallResponse? {
        RecallResponse(status: 200, body: Data("stale".utf8), source: .stale)
    }
}

/// Retries a fixed number of times after a fixed delay, rewriting the request each time.
private struct CountingRetrierFactory: RetrierFactory {
    let retries: Int
    let delay: Duration

    struct CountingRetrier: Retrier {
        var left: Int
        let delay: Duration
        mutating func decide(after attempt: Attempt) async throws -> RetryDecision {
            guard left > 0, attempt.response?.isSuccess != true else { return .stop }
            left -= 1
            var next = attempt.request
            next.setValue(String(attempt.number + 1), forHTTPHeaderField: "X-Attempt")
            return .retry(after: delay, request: next)
        }
    }

    func makeRetrier(for request: URLRequest) -> any Retrier { CountingRetrier(left: retries, delay: delay) }
}

@Suite("Pipeline semantics", .timeLimit(.minutes(1)))
struct PipelineTests {
    @Test("onSchedule runs outer to inner, onSuccess inner to outer")
    func hookOrder() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .text("ok"))
        let log = HookLog()
        let pipeline = Pipeline(transport: mock, hooks: [RecordingHook("outer", log: log), RecordingHook("inner", log: log)])
        let response = try await pipeline.send(URLRequest(url: itemURL))
        #expect(response.bodyText == "ok")
        #expect(log.events == ["outer.schedule", "inner.schedule", "inner.success(200 network)", "outer.success(200 network)"])
    }

    @Test("the cache re-sends a 304 that matches nothing through the stages inside it only: its inner hooks see the re-send, its outer ones do not")
    func cacheResendsThroughInnerStages() async throws {
        let mock = MockTransport()
        mock.route(
            "GET", "/items", .text("mine", headers: ["Cache-Control": "max-age=10", "ETag": "\"mine\""]),
            .status(304, headers: ["ETag": "\"other\""]), .text("full", headers: ["Cache-Control": "max-age=10", "ETag": "\"other\""]))
        let log = HookLog()
        let clock = ShiftedDate()
        let cache = HTTPCache(storage: MemoryStorage(), now: clock.now)
        let pipeline = Pipeline(transport: mock, hooks: [RecordingHook("outer", log: log), cache, RecordingHook("inner", log: log)])
        _ = try await pipeline.send(URLRequest(url: itemURL))
        clock.advance(by: 20)
        let before = log.events.count
        let response = try await pipeline.send(URLRequest(url: itemURL))
        #expect(response.bodyText == "full")
        #expect(mock.requests.count == 3)
        #expect(mock.requests.last?.value(forHTTPHeaderField: "If-None-Match") == nil)
        #expect(
            log.events.dropFirst(before) == [
                "outer.schedule", "inner.schedule", "inner.success(304 network)", "inner.schedule", "inner.success(200 network)",
                "outer.success(200 network)"
            ])
        // Called outside a pipeline, the cache has no stages to re-send through: a clear error.
        let context = RecallContext(originalRequest: URLRequest(url: itemURL))
        clock.advance(by: 20)
        mock.route("GET", "/items", .status(304, headers: ["ETag": "\"another\""]))
        guard case .proceedThen(let conditional, let followUp) = try await cache.onSchedule(URLRequest(url: itemURL), context: context)
        else {
            Issue.record("a stale response is revalidated")
            return
        }
        await #expect(throws: CacheError.self) {
            try await followUp.onSuccess(try await mock.send(conditional), for: conditional, context: context)
        }
    }

    @Test("an answer from a hook skips inner hooks, retrier and transport; outer hooks see its source")
    func answeringHookShortCircuits() async throws {
        let mock = MockTransport()
        let log = HookLog()
        let pipeline = Pipeline(
            transport: mock,
            hooks: [RecordingHook("outer", log: log), AnsweringHook(), RecordingHook("inner", log: log)],
            retrierFactory: CountingRetrierFactory(retries: 3, delay: .seconds(1)),
            clock: ManualClock()
        )
        let context = RecallContext(originalRequest: URLRequest(url: itemURL))
        let response = try await pipeline.send(URLRequest(url: itemURL), context: context)
        #expect(response.source == .cache)
        #expect(response.bodyText == "cached")
        #expect(mock.requests.isEmpty)
        #expect(context.attempts == 0)
        #expect(log.events == ["outer.schedule", "outer.success(200 cache)"])
    }

    @Test("a rewritten request reaches the transport, and onSuccess sees it")
    func rewrittenRequest() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .text("ok"))
        let pipeline = Pipeline(transport: mock, hooks: [HeaderHook()])
        let response = try await pipeline.send(URLRequest(url: itemURL))
        #expect(mock.requests.first?.value(forHTTPHeaderField: "Authorization") == "Bearer token")
        #expect(response.headers["x-seen-authorization"] == "Bearer token")
    }

    @Test("onSuccess and onFailure run once per logical request, not per attempt")
    func hooksOncePerRequest() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503), .status(503), .text("ok"))
        let log = HookLog()
        let clock = ManualClock(autoAdvance: true)
        let pipeline = Pipeline(
            transport: mock, hooks: [RecordingHook("hook", log: log)],
            retrierFactory: CountingRetrierFactory(retries: 5, delay: .seconds(2)), clock: clock)
        let context = RecallContext(originalRequest: URLRequest(url: itemURL))
        let response = try await pipeline.send(URLRequest(url: itemURL), context: context)
        #expect(response.status == 200)
        #expect(context.attempts == 3)
        #expect(context.retries == 2)
        #expect(log.events == ["hook.schedule", "hook.success(200 network)"])
        #expect(clock.sleeps == [.seconds(2), .seconds(2)])
        #expect(mock.requests.map { $0.value(forHTTPHeaderField: "X-Attempt") } == [nil, "2", "3"])

        mock.reset()
        mock.route("GET", "/items", .error(TransportError(.connectionLost)))
        await #expect(throws: TransportError.self) { try await pipeline.send(URLRequest(url: itemURL)) }
        #expect(mock.requests.count == 6)
        #expect(log.events.suffix(2) == ["hook.schedule", "hook.failure(TransportError)"])
    }

    @Test("the retrier waits on the injected clock before each retry")
    func retrierWaitsOnClock() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503), .text("ok"))
        let clock = ManualClock()
        let pipeline = Pipeline(transport: mock, retrierFactory: CountingRetrierFactory(retries: 1, delay: .seconds(30)), clock: clock)
        let task = Task { try await pipeline.send(URLRequest(url: itemURL)) }
        await clock.waitForSleepers(1)
        #expect(mock.requests.count == 1)
        clock.advance(by: .seconds(29))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        let response = try await task.value
        #expect(response.status == 200)
        #expect(mock.requests.count == 2)
    }

    @Test("an error thrown by a hook fails the request with that error", arguments: ["schedule", "success"])
    func hookErrors(phase: String) async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .text("ok"))
        let log = HookLog()
        let pipeline = Pipeline(transport: mock, hooks: [RecordingHook("outer", log: log), ThrowingHook(phase: phase)])
        await #expect(throws: HookFailure()) { try await pipeline.send(URLRequest(url: itemURL)) }
        #expect(log.events == ["outer.schedule", "outer.failure(HookFailure)"])
        #expect(mock.requests.count == (phase == "schedule" ? 0 : 1))
    }

    @Test("onFailure may recover; outer hooks then see a success")
    func recovery() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .error(TransportError(.cannotConnect)))
        let log = HookLog()
        let pipeline = Pipeline(transport: mock, hooks: [RecordingHook("outer", log: log), RecoveringHook(), RecordingHook("inner", log: log)])
        let response = try await pipeline.send(URLRequest(url: itemURL))
        #expect(response.source == .stale)
        #expect(log.events == ["outer.schedule", "inner.schedule", "inner.failure(TransportError)", "outer.success(200 stale)"])
    }

    @Test("cancelling the caller cancels the attempt in flight and throws CancellationError")
    func cancellationDuringAttempt() async throws {
        let mock = MockTransport()
        let started = AsyncStream<Void>.makeStream()
        mock.route("GET", "/items") { _ in
            started.continuation.yield()
            // Cancellation surfaces the way URLSession reports it.
            do { try await untilCancelled() } catch { throw URLError(.cancelled) }
        }
        let log = HookLog()
        let pipeline = Pipeline(transport: mock, hooks: [RecoveringHook(), RecordingHook("inner", log: log)])
        let task = Task { try await pipeline.send(URLRequest(url: itemURL)) }
        var iterator = started.stream.makeAsyncIterator()
        await iterator.next()
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(log.events == ["inner.schedule", "inner.failure(CancellationError)"])
    }

    @Test("cancelling during a retry wait ends at once with CancellationError")
    func cancellationDuringBackoff() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503))
        let clock = ManualClock()
        let pipeline = Pipeline(transport: mock, retrierFactory: CountingRetrierFactory(retries: 3, delay: .seconds(10)), clock: clock)
        let task = Task { try await pipeline.send(URLRequest(url: itemURL)) }
        await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(mock.requests.count == 1)
    }

    @Test("a retrier may end the request with its own error")
    func retrierFails() async throws {
        struct GiveUp: Error {}
        struct FailingFactory: RetrierFactory {
            struct R: Retrier { func decide(after attempt: Attempt) async throws -> RetryDecision { .fail(GiveUp()) } }
            func makeRetrier(for request: URLRequest) -> any Retrier { R() }
        }
        let mock = MockTransport()
        mock.route("GET", "/items", .status(503))
        let pipeline = Pipeline(transport: mock, retrierFactory: FailingFactory())
        await #expect(throws: GiveUp.self) { try await pipeline.send(URLRequest(url: itemURL)) }
    }

    @Test("data(for:) returns the body and an HTTPURLResponse, as URLSession does")
    func dataForRequest() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .text("hello", status: 404, headers: ["ETag": "\"v1\"", "Vary": "Accept", "vary": "Accept-Language"]))
        let pipeline = Pipeline(transport: mock)
        let (data, response) = try await pipeline.data(for: URLRequest(url: itemURL))
        #expect(String(decoding: data, as: UTF8.self) == "hello")
        #expect(response.statusCode == 404)
        #expect(response.url == itemURL)
        #expect(response.value(forHTTPHeaderField: "etag") == "\"v1\"")
        #expect(response.value(forHTTPHeaderField: "Vary") == "Accept, Accept-Language")
    }

    @Test("pipelines nest: a pipeline is a transport")
    func nesting() async throws {
        let mock = MockTransport()
        mock.route("GET", "/items", .text("ok"))
        let log = HookLog()
        let inner = Pipeline(transport: mock, hooks: [RecordingHook("inner", log: log)])
        let outer = Pipeline(transport: inner, hooks: [RecordingHook("outer", log: log)])
        _ = try await outer.send(URLRequest(url: itemURL))
        #expect(log.events == ["outer.schedule", "inner.schedule", "inner.success(200 network)", "outer.success(200 network)"])
    }

    @Test("hooks carry state from onSchedule to onSuccess in the request context")
    func contextValues() async throws {
        enum Marker: ContextKey { typealias Value = String }
        struct MarkingHook: ServiceHook {
            func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
                context[Marker.self] = "scheduled"
                return .proceed(request)
            }
            func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
                var response = response
                response.headers["X-Marker"] = context[Marker.self] ?? "missing"
                return response
            }
        }
        let mock = MockTransport()
        mock.route("GET", "/items", .text("ok"))
        let response = try await Pipeline(transport: mock, hooks: [MarkingHook()]).send(URLRequest(url: itemURL))
        #expect(response.headers["X-Marker"] == "scheduled")
    }

    @Test("a task a hook starts in onSuccess keeps nothing of the pipeline: a transport valid only during the call is not kept past it")
    func hookTasksKeepNoTransport() async throws {
        /// Starts a task in onSuccess that outlives the call (a store behind the answer, say).
        struct LingeringHook: ServiceHook {
            let gate: Gate
            func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
                Task { [gate] in await gate.wait() }
                return response
            }
        }
        let gate = Gate()
        defer { gate.open() }
        // As an OpenAPI middleware's `next` is: usable only during the call. Were the pipeline
        // (whose transport wraps it) kept by the hook's task — a task-local it inherits, say —
        // the runtime would trap here ("closure argument was escaped").
        func send(through next: @Sendable (URLRequest) async throws -> RecallResponse) async throws -> RecallResponse {
            try await withoutActuallyEscaping(next) { next in
                try await Pipeline(transport: ClosureTransport(next), hooks: [LingeringHook(gate: gate)]).send(URLRequest(url: itemURL))
            }
        }
        let answer = try await send { _ in .text("ok") }
        #expect(answer.bodyText == "ok")
    }
}
