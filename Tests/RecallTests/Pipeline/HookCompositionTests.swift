import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Recall
import RecallTesting
import Testing

/// Hooks compose: the pipeline and the request context name no concrete hook, and each hook's
/// per-request state belongs to that hook instance, so two caches (memory over disk), or a cache
/// behind other hooks, work in any order under concurrent requests.
@Suite("Hook composition: two caches, a cache behind another hook", .timeLimit(.minutes(1)))
struct HookCompositionTests {
    /// An origin whose answers wait at `gate`, counting what it was asked.
    fileprivate static func origin(gate: Gate) -> MockTransport {
        let mock = MockTransport()
        mock.route(
            "GET", "/",
            handler: { request in
                await gate.wait()
                return RecallResponse(
                    status: 200, headers: ["Cache-Control": "max-age=600"], body: Data((request.url?.path ?? "").utf8),
                    url: request.url)
            })
        for index in 0..<8 {
            mock.route(
                "GET", "/item/\(index)",
                handler: { request in
                    await gate.wait()
                    return RecallResponse(
                        status: 200, headers: ["Cache-Control": "max-age=600"], body: Data((request.url?.path ?? "").utf8),
                        url: request.url)
                })
        }
        return mock
    }

    /// Sends `count` concurrent requests for each of `paths` and returns the bodies, in order.
    fileprivate static func burst(_ pipeline: Pipeline, paths: [String], count: Int) async throws -> [String] {
        try await withThrowingTaskGroup(of: String.self) { group in
            for path in paths {
                for _ in 0..<count {
                    group.addTask {
                        let response = try await pipeline.send(URLRequest(url: URL(string: "https://origin.test" + path)!))
                        return String(decoding: response.data, as: UTF8.self)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// A memory cache over a disk cache in one pipeline, before a gated origin.
    private struct MemoryOverDisk {
        let directory = temporaryDirectory("composition")
        let outer: HTTPCache
        let inner: HTTPCache
        let gate = Gate()
        let origin: MockTransport
        let pipeline: Pipeline

        init(namespaced: Bool) throws {
            var configuration = CacheConfiguration()
            if namespaced { configuration.namespace = "memory" }
            outer = HTTPCache(storage: MemoryStorage(), configuration: configuration)
            if namespaced { configuration.namespace = "disk" }
            inner = HTTPCache(storage: try DiskStorage(directory: directory), configuration: configuration)
            origin = HookCompositionTests.origin(gate: gate)
            pipeline = Pipeline(transport: origin, hooks: [outer, inner])
        }

        /// `count` concurrent requests for each of `paths` while the origin holds its answers:
        /// every request answers, one per path reaches the origin, the outer cache leads one per
        /// path and the others follow it, and each cache stores one response per path.
        func firstBurst(_ paths: [String], count: Int) async throws {
            let followers = paths.count * (count - 1)
            let burst = Task { try await HookCompositionTests.burst(pipeline, paths: paths, count: count) }
            try await waitUntil("\(followers) requests waiting for the outer cache's leaders") { outer.statistics.waiting == followers }
            gate.open()
            #expect(try await burst.value.sorted() == paths.flatMap { Array(repeating: $0, count: count) }.sorted())
            for path in paths { #expect(origin.count(for: path) == 1) }
            await outer.flush()
            await inner.flush()
            let (outerStatistics, innerStatistics) = (outer.statistics, inner.statistics)
            #expect(outerStatistics.misses == paths.count)
            #expect(outerStatistics.coalesced == followers)
            #expect(outerStatistics.hits == followers)
            #expect(outerStatistics.stores == paths.count)
            #expect(innerStatistics.misses == paths.count)
            #expect(innerStatistics.hits == 0)
            #expect(innerStatistics.stores == paths.count)
            #expect(innerStatistics.storage.count == paths.count)
        }

        /// The same burst again: the outer cache answers all of it; the inner one sees none.
        func secondBurst(_ paths: [String], count: Int) async throws {
            let hitsBefore = outer.statistics.hits
            #expect(
                try await HookCompositionTests.burst(pipeline, paths: paths, count: count).sorted()
                    == paths.flatMap { Array(repeating: $0, count: count) }.sorted())
            #expect(outer.statistics.hits == hitsBefore + paths.count * count)
            #expect(inner.statistics.lookups == paths.count)
            for path in paths { #expect(origin.count(for: path) == 1) }
        }
    }

    @Test(
        "memory over disk, with and without namespaces: 8 concurrent requests for one URL all answer, one reaches the origin",
        arguments: [true, false])
    func memoryOverDisk(namespaced: Bool) async throws {
        let caches = try MemoryOverDisk(namespaced: namespaced)
        defer { try? FileManager.default.removeItem(at: caches.directory) }
        try await caches.firstBurst(["/"], count: 8)
        try await caches.secondBurst(["/"], count: 8)
        // Emptied, the outer cache misses and the disk cache below answers.
        await caches.outer.storage.removeAll()
        let again = try await caches.pipeline.send(URLRequest(url: URL(string: "https://origin.test/")!))
        #expect(again.source == .cache)
        #expect(caches.inner.statistics.hits == 1)
        #expect(caches.outer.statistics.misses == 2)
        #expect(caches.origin.count(for: "/") == 1)
    }

    @Test(
        "memory over disk under bursts for many URLs: every request answers, one origin request per URL, statistics add up",
        arguments: [true, false])
    func manyURLs(namespaced: Bool) async throws {
        let caches = try MemoryOverDisk(namespaced: namespaced)
        defer { try? FileManager.default.removeItem(at: caches.directory) }
        let paths = (0..<8).map { "/item/\($0)" }
        try await caches.firstBurst(paths, count: 4)
        try await caches.secondBurst(paths, count: 4)
    }

    /// A hook that answers every request without suspending, counting what it was asked.
    private final class AnsweringHook: ServiceHook {
        let decided = Locked(0)
        let scheduled = Locked(0)

        func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
            decided.withLock { $0 += 1 }
            return .act(.respond(RecallResponse.text("answered", url: request.url)))
        }

        func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
            scheduled.withLock { $0 += 1 }
            return .proceed(request)
        }
    }

    @Test(
        "two caches: the inner one answers the outer one's revalidation with a 304 from its fresher copy; the caller gets the body, and the outer copy is freshened"
    )
    func innerCacheAnswersRevalidation() async throws {
        let mock = MockTransport()
        mock.route("GET", "/doc", .text("the body", headers: ["Cache-Control": "max-age=600", "ETag": "\"v1\""]))
        let outer = HTTPCache(storage: MemoryStorage())
        let inner = HTTPCache(storage: MemoryStorage())
        let url = URL(string: "https://origin.test/doc")!
        // The inner cache holds a fresh copy; the outer one holds a copy that must be revalidated.
        try await Pipeline(transport: mock, hooks: [inner]).send(URLRequest(url: url)).collected()
        mock.route("GET", "/doc", .text("the body", headers: ["Cache-Control": "no-cache", "ETag": "\"v1\""]))
        try await Pipeline(transport: mock, hooks: [outer]).send(URLRequest(url: url)).collected()
        let pipeline = Pipeline(transport: mock, hooks: [outer, inner])
        let answer = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(answer.status == 200, "a caller who asked unconditionally never gets a 304")
        #expect(answer.bodyText == "the body")
        #expect(answer.source == .revalidated)
        #expect(mock.count(for: "/doc") == 2, "the inner cache answered the revalidation")
        #expect(outer.statistics.revalidated == 1 && inner.statistics.hits == 1)
    }

    @Test("any hook may answer without suspending, first or behind another hook: its onSchedule is not called")
    func anyHookAnswersWithoutSuspending() async throws {
        let origin = MockTransport()
        origin.route("GET", "/", .text("origin"))
        let request = URLRequest(url: URL(string: "https://origin.test/")!)

        let first = AnsweringHook()
        let alone = try await Pipeline(transport: origin, hooks: [first]).send(request)
        #expect(String(decoding: alone.data, as: UTF8.self) == "answered")
        #expect(first.decided.withLock { $0 } == 1)
        #expect(first.scheduled.withLock { $0 } == 0)

        let log = HookLog()
        let second = AnsweringHook()
        let behind = try await Pipeline(transport: origin, hooks: [RecordingHook("log", log: log), second]).send(request)
        #expect(String(decoding: behind.data, as: UTF8.self) == "answered")
        #expect(second.decided.withLock { $0 } == 1)
        #expect(second.scheduled.withLock { $0 } == 0)
        #expect(log.events == ["log.schedule", "log.success(200 network)"])
        #expect(origin.requests.isEmpty)
    }

    /// A hook that decides after a suspension: it marks the request it passes on, and counts
    /// what the pipeline called.
    private final class SuspendingHook: ServiceHook {
        let resumed = Locked(0)
        let scheduled = Locked(0)
        let succeeded = Locked<[String]>([])

        func decide(_ request: URLRequest, context: RecallContext) -> HookDecision {
            .suspend(
                HookSuspension { [resumed] in
                    await Task.yield()  // (a real suspension point)
                    resumed.withLock { $0 += 1 }
                    var marked = request
                    marked.setValue("suspended", forHTTPHeaderField: "X-Decided")
                    return .proceed(marked)
                })
        }

        func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
            scheduled.withLock { $0 += 1 }
            return .proceed(request)
        }

        func onSuccess(_ response: RecallResponse, for request: URLRequest, context: RecallContext) async throws -> RecallResponse {
            succeeded.withLock { $0.append(request.value(forHTTPHeaderField: "X-Decided") ?? "unmarked") }
            return response
        }
    }

    @Test(
        "a hook that decides after a suspension, first or behind another hook: the pipeline awaits it in place of onSchedule, and onSuccess gets what it passed on"
    )
    func anyHookDecidesAfterSuspending() async throws {
        let origin = MockTransport()
        origin.route("GET", "/", .text("origin"))
        let request = URLRequest(url: URL(string: "https://origin.test/")!)

        for behind in [false, true] {
            let hook = SuspendingHook()
            let hooks: [any ServiceHook] = behind ? [RecordingHook("log", log: HookLog()), hook] : [hook]
            let answer = try await Pipeline(transport: origin, hooks: hooks).send(request)
            #expect(String(decoding: answer.data, as: UTF8.self) == "origin")
            #expect(hook.resumed.withLock { $0 } == 1)
            #expect(hook.scheduled.withLock { $0 } == 0)
            #expect(hook.succeeded.withLock { $0 } == ["suspended"])
        }
        #expect(origin.requests.map { $0.value(forHTTPHeaderField: "X-Decided") } == ["suspended", "suspended"])
    }

    @Test("a cache behind a logging hook: 8 concurrent requests all answer, one reaches the origin, the hook sees every one")
    func cacheBehindAnotherHook() async throws {
        let log = HookLog()
        let cache = HTTPCache()
        let gate = Gate()
        let origin = Self.origin(gate: gate)
        let pipeline = Pipeline(transport: origin, hooks: [RecordingHook("log", log: log), cache])

        let first = Task { try await Self.burst(pipeline, paths: ["/"], count: 8) }
        try await waitUntil("7 requests waiting for the cache's leader") { cache.statistics.waiting == 7 }
        gate.open()
        #expect(try await first.value == Array(repeating: "/", count: 8))
        #expect(origin.count(for: "/") == 1)
        #expect(try await Self.burst(pipeline, paths: ["/"], count: 8).count == 8)
        #expect(origin.count(for: "/") == 1)
        #expect(cache.statistics.hits == 15)
        #expect(cache.statistics.misses == 1)
        #expect(cache.statistics.coalesced == 7)
        #expect(log.events.filter { $0.hasPrefix("log.schedule") }.count == 16)
        #expect(log.events.filter { $0.hasPrefix("log.success") }.count == 16)
    }
}
