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
    private static func origin(gate: Gate) -> MockTransport {
        let mock = MockTransport()
        mock.route("GET", "/", handler: { request in
            await gate.wait()
            return RecallResponse(status: 200, headers: ["Cache-Control": "max-age=600"], body: Data((request.url?.path ?? "").utf8),
                            url: request.url)
        })
        for index in 0..<8 {
            mock.route("GET", "/item/\(index)", handler: { request in
                await gate.wait()
                return RecallResponse(status: 200, headers: ["Cache-Control": "max-age=600"], body: Data((request.url?.path ?? "").utf8),
                                url: request.url)
            })
        }
        return mock
    }

    /// Sends `count` concurrent requests for each of `paths` and returns the bodies, in order.
    private static func burst(_ pipeline: Pipeline, paths: [String], count: Int) async throws -> [String] {
        try await withThrowingTaskGroup(of: String.self) { group in
            for path in paths {
                for _ in 0..<count {
                    group.addTask {
                        let response = try await pipeline.send(URLRequest(url: URL(string: "https://origin.test" + path)!))
                        return String(decoding: response.body, as: UTF8.self)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// Two caches, memory over disk: one burst of 8 concurrent requests for one URL makes one
    /// origin request and every request answers; the next burst is answered by the outer cache.
    private func memoryOverDisk(namespaced: Bool) async throws {
        let directory = temporaryDirectory("composition-\(namespaced)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var outerConfiguration = CacheConfiguration()
        var innerConfiguration = CacheConfiguration()
        if namespaced {
            outerConfiguration.namespace = "memory"
            innerConfiguration.namespace = "disk"
        }
        let outer = HTTPCache(storage: MemoryStorage(), configuration: outerConfiguration)
        let inner = HTTPCache(storage: try DiskStorage(directory: directory), configuration: innerConfiguration)
        let gate = Gate()
        let origin = Self.origin(gate: gate)
        let pipeline = Pipeline(transport: origin, hooks: [outer, inner])

        let first = Task { try await Self.burst(pipeline, paths: ["/"], count: 8) }
        try await waitUntil("7 requests waiting for the outer cache's leader") { outer.statistics.waiting == 7 }
        gate.open()
        #expect(try await first.value == Array(repeating: "/", count: 8))
        #expect(origin.count(for: "/") == 1)
        await outer.flush()
        await inner.flush()
        var outerStatistics = outer.statistics
        var innerStatistics = inner.statistics
        #expect(outerStatistics.misses == 1)
        #expect(outerStatistics.coalesced == 7)
        #expect(outerStatistics.hits == 7)
        #expect(outerStatistics.stores == 1)
        #expect(innerStatistics.misses == 1)
        #expect(innerStatistics.hits == 0)
        #expect(innerStatistics.stores == 1)

        // The next burst: the outer cache answers every request; the inner one sees none.
        #expect(try await Self.burst(pipeline, paths: ["/"], count: 8) == Array(repeating: "/", count: 8))
        outerStatistics = outer.statistics
        innerStatistics = inner.statistics
        #expect(outerStatistics.hits == 15)
        #expect(innerStatistics.lookups == 1)
        #expect(origin.count(for: "/") == 1)

        // Emptied, the outer cache misses and the disk cache below answers.
        await outer.storage.removeAll()
        let again = try await pipeline.send(URLRequest(url: URL(string: "https://origin.test/")!))
        #expect(again.source == .cache)
        #expect(inner.statistics.hits == 1)
        #expect(outer.statistics.misses == 2)
        #expect(origin.count(for: "/") == 1)
    }

    @Test("memory over disk, each cache with its own namespace: 8 concurrent requests all answer, one reaches the origin")
    func memoryOverDiskNamespaced() async throws {
        try await memoryOverDisk(namespaced: true)
    }

    @Test("memory over disk with default namespaces: the same")
    func memoryOverDiskDefault() async throws {
        try await memoryOverDisk(namespaced: false)
    }

    @Test("memory over disk under bursts for many URLs: every request answers, one origin request per URL, statistics add up",
          arguments: [true, false])
    func manyURLs(namespaced: Bool) async throws {
        let directory = temporaryDirectory("composition-many-\(namespaced)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = CacheConfiguration()
        if namespaced { configuration.namespace = "outer" }
        let outer = HTTPCache(storage: MemoryStorage(), configuration: configuration)
        if namespaced { configuration.namespace = "inner" }
        let disk = try DiskStorage(directory: directory)
        let inner = HTTPCache(storage: disk, configuration: configuration)
        let gate = Gate()
        let origin = Self.origin(gate: gate)
        let pipeline = Pipeline(transport: origin, hooks: [outer, inner])
        let paths = (0..<8).map { "/item/\($0)" }
        let expected = paths.flatMap { Array(repeating: $0, count: 4) }.sorted()

        let burst = Task { try await Self.burst(pipeline, paths: paths, count: 4) }
        try await waitUntil("3 followers per URL waiting") { outer.statistics.waiting == 24 }
        gate.open()
        #expect(try await burst.value.sorted() == expected)
        for path in paths { #expect(origin.count(for: path) == 1) }
        await outer.flush()
        await inner.flush()
        var outerStatistics = outer.statistics
        var innerStatistics = inner.statistics
        #expect(outerStatistics.misses == 8)
        #expect(outerStatistics.coalesced == 24)
        #expect(outerStatistics.hits == 24)
        #expect(outerStatistics.stores == 8)
        #expect(innerStatistics.misses == 8)
        #expect(innerStatistics.stores == 8)
        #expect(innerStatistics.storage.count == 8)

        // The next burst: the outer cache answers all of it.
        #expect(try await Self.burst(pipeline, paths: paths, count: 4).sorted() == expected)
        outerStatistics = outer.statistics
        innerStatistics = inner.statistics
        #expect(outerStatistics.hits == 56)
        #expect(innerStatistics.lookups == 8)
        for path in paths { #expect(origin.count(for: path) == 1) }
    }

    /// A hook that answers every request without suspending, counting what it was asked.
    private final class AnsweringHook: ServiceHook {
        let decided = Locked(0)
        let scheduled = Locked(0)

        func decideWithoutSuspending(_ request: URLRequest, context: RecallContext) -> HookAction? {
            decided.withLock { $0 += 1 }
            return .respond(RecallResponse.text("answered", url: request.url))
        }

        func onSchedule(_ request: URLRequest, context: RecallContext) async throws -> HookAction {
            scheduled.withLock { $0 += 1 }
            return .proceed(request)
        }
    }

    @Test("any hook may answer without suspending, first or behind another hook: its onSchedule is not called")
    func anyHookAnswersWithoutSuspending() async throws {
        let origin = MockTransport()
        origin.route("GET", "/", .text("origin"))
        let request = URLRequest(url: URL(string: "https://origin.test/")!)

        let first = AnsweringHook()
        let alone = try await Pipeline(transport: origin, hooks: [first]).send(request)
        #expect(String(decoding: alone.body, as: UTF8.self) == "answered")
        #expect(first.decided.withLock { $0 } == 1)
        #expect(first.scheduled.withLock { $0 } == 0)

        let log = HookLog()
        let second = AnsweringHook()
        let behind = try await Pipeline(transport: origin, hooks: [RecordingHook("log", log: log), second]).send(request)
        #expect(String(decoding: behind.body, as: UTF8.self) == "answered")
        #expect(second.decided.withLock { $0 } == 1)
        #expect(second.scheduled.withLock { $0 } == 0)
        #expect(log.events == ["log.schedule", "log.success(200 network)"])
        #expect(origin.requests.isEmpty)
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
