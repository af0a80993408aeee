import Foundation
import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Reliability: concurrency stress, limits, isolation", .timeLimit(.minutes(3)))
struct StressTests {
    @Test("64 tasks mixing hits, misses, stores, invalidations and evictions on a tiered memory+disk cache")
    func stress() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-stress-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try DiskStorage(directory: directory, byteLimit: 256 << 10)
        let memory = MemoryStorage(byteLimit: 64 << 10, countLimit: 40)
        let cache = HTTPCache(storage: TieredStorage(memory: memory, lower: disk))
        let mock = MockTransport()
        let versions = Locked([Int: Int]())
        mock.route(nil, "/any", .status(500))
        for index in 0..<100 {
            mock.route("GET", "/item/\(index)") { request in
                let version = versions.withLock { $0[index, default: 0] }
                return .text(
                    "item \(index) v\(version) " + String(repeating: "x", count: 2000),
                    headers: ["Cache-Control": "max-age=\(index % 3 == 0 ? 0 : 60)", "ETag": "\"\(index)-\(version)\"", "X-Index": "\(index)"])
            }
            mock.route("PUT", "/item/\(index)") { _ in
                versions.withLock { $0[index, default: 0] += 1 }
                return RecallResponse(status: 204)
            }
        }
        let pipeline = Pipeline(transport: mock, hooks: [cache])
        let wrong = HookLog()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<64 {
                group.addTask {
                    var rng = SystemRandomNumberGenerator()
                    for _ in 0..<60 {
                        let index = Int.random(in: 0..<100, using: &rng)
                        var request = URLRequest(url: URL(string: "https://stress.test/item/\(index)")!)
                        if task % 8 == 0, Bool.random(using: &rng) { request.httpMethod = "PUT" }
                        let response = try await pipeline.send(request)
                        if request.httpMethod == "GET" || request.httpMethod == nil {
                            // Never another item's body, never a torn one.
                            if response.headers["X-Index"] != "\(index)" || !response.bodyText.hasPrefix("item \(index) v")
                                || response.data.count < 2000
                            {
                                wrong.append("item \(index): \(response.bodyText.prefix(20))")
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        await disk.flush()
        #expect(wrong.events.isEmpty)
        let statistics = cache.statistics
        #expect(statistics.hits > 0)
        #expect(statistics.misses > 0)
        #expect(statistics.invalidations > 0)
        #expect(memory.statistics.evictions > 0)
        #expect(disk.statistics.bytes <= 256 << 10)
    }

    @Test("limits: header bytes, entry size, key length and variants are bounded")
    func limits() async throws {
        var configuration = CacheConfiguration()
        configuration.maxHeaderBytes = 500
        configuration.keyPolicy.maximumLength = 100
        let h = CacheHarness(configuration: configuration, storage: MemoryStorage(byteLimit: 1 << 20, entryLimit: 4096))
        h.origin("/big-headers", headers: ["Cache-Control": "max-age=60", "X-Padding": String(repeating: "p", count: 600)])
        try await h.get("/big-headers")
        #expect(try await h.get("/big-headers").source == .network)
        h.origin("/big-body", headers: ["Cache-Control": "max-age=60"], body: String(repeating: "b", count: 10_000))
        try await h.get("/big-body")
        #expect(try await h.get("/big-body").source == .network)
        let long = "/" + String(repeating: "k", count: 120)
        h.origin(long, headers: ["Cache-Control": "max-age=60"])
        try await h.get(long)
        #expect(try await h.get(long).source == .network)
        h.origin("/ok", headers: ["Cache-Control": "max-age=60"])
        try await h.get("/ok")
        #expect(try await h.get("/ok").source == .cache)
    }

    @Test("isolation: caches with different namespaces on one storage never see each other's entries")
    func namespaces() async throws {
        let storage = MemoryStorage()
        var first = CacheConfiguration()
        first.namespace = "tenant-a"
        var second = CacheConfiguration()
        second.namespace = "tenant-b"
        let a = CacheHarness(configuration: first, storage: storage)
        let b = CacheHarness(configuration: second, storage: storage)
        a.origin("/shared", headers: ["Cache-Control": "max-age=60"], body: "for a")
        b.origin("/shared", headers: ["Cache-Control": "max-age=60"], body: "for b")
        try await a.get("/shared")
        let fromB = try await b.get("/shared")
        #expect(fromB.source == .network)
        #expect(fromB.bodyText == "for b")
        #expect(try await a.get("/shared").bodyText == "for a")
        #expect(try await b.get("/shared").bodyText == "for b")
    }

    @Test("isolation: bypass fields keep credentialed requests out of the cache entirely")
    func bypassFields() async throws {
        var configuration = CacheConfiguration()
        configuration.bypassFields = ["Authorization"]
        let h = CacheHarness(configuration: configuration)
        h.origin("/private", headers: ["Cache-Control": "max-age=60"])
        try await h.get("/private", headers: ["Authorization": "Bearer x"])
        try await h.get("/private", headers: ["Authorization": "Bearer x"])
        #expect(h.hits("/private") == 2)
        #expect(h.cache.statistics.stores == 0)
        #expect(h.cache.statistics.bypassed == 2)
    }
}
