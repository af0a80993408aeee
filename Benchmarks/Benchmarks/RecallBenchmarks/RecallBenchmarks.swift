import Benchmark
import Foundation
import MissPathParts
import Recall
import RecallTesting
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Each benchmark does `scaledIterations` operations per sample, so that sub-microsecond work
// is measured in batches (single samples that short are noise). Results are reported per
// operation in docs/benchmarks.md, always next to a baseline measured in the same run.

let benchmarks: @Sendable () -> Void = {
    let batch = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        scalingFactor: .kilo, maxDuration: .seconds(3))
    let single = Benchmark.Configuration(metrics: [.wallClock, .throughput], scalingFactor: .one, maxDuration: .seconds(3))
    // Disk reads of large bodies: batches small enough to give a few dozen samples.
    let hundred = Benchmark.Configuration(
        metrics: [.wallClock, .throughput], scalingFactor: .kilo, maxDuration: .seconds(5),
        maxIterations: 20)

    let url = URL(string: "https://bench.test/items/42?b=2&a=1")!
    let request = URLRequest(url: url)
    let body = Data(repeating: 0x61, count: 1024)

    // MARK: memory hit through the full pipeline

    let mock = MockTransport()
    mock.route("GET", "/items/42", .response(RecallResponse(status: 200, headers: ["Cache-Control": "max-age=86400", "ETag": "\"1\""], body: body)))
    let memoryCache = HTTPCache(storage: MemoryStorage())
    let memoryPipeline = Pipeline(transport: mock, hooks: [memoryCache])

    Benchmark("MemoryHitPipeline", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? await memoryPipeline.send(request))
        }
    } setup: {
        _ = try await memoryPipeline.send(request)
    }

    // MARK: the floor under any memory hit: the same request through the same pipeline, answered
    // by a hook that only keys it and reads one locked table (MissPathParts' MinimalCache)

    let minimalPipeline = Pipeline(transport: mock, hooks: [MinimalCache()])
    Benchmark("MinimalHitPipeline", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? await minimalPipeline.send(request))
        }
    } setup: {
        _ = try await minimalPipeline.send(request)
    }

    // MARK: the same hit over the README's storage: a memory tier over a disk

    let tieredDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-bench-tiered-\(UUID().uuidString.prefix(8))")
    let tieredCache = HTTPCache(storage: TieredStorage(memory: MemoryStorage(), lower: try! DiskStorage(directory: tieredDirectory)))
    let tieredPipeline = Pipeline(transport: mock, hooks: [tieredCache])

    Benchmark("TieredHitPipeline", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? await tieredPipeline.send(request))
        }
    } setup: {
        _ = try await tieredPipeline.send(request)
    } teardown: {
        try? FileManager.default.removeItem(at: tieredDirectory)
    }

    // MARK: a Foundation response made a RecallResponse (every URLSessionTransport answer), against
    // Foundation's own getter of its fields, which the conversion cannot do without

    let eightFields = HTTPURLResponse(
        url: url, statusCode: 200, httpVersion: "HTTP/1.1",
        headerFields: [
            "Cache-Control": "max-age=600", "Content-Length": "1024", "Content-Type": "application/json", "ETag": "\"1\"",
            "Date": "Fri, 27 Nov 2026 22:00:00 GMT", "Last-Modified": "Thu, 26 Nov 2026 22:00:00 GMT", "Server": "origin",
            "Vary": "Accept-Encoding"
        ])!
    Benchmark("ResponseFromFoundation", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(RecallResponse(eightFields, body: body))
        }
    }
    Benchmark("FoundationHeaderGetter", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(eightFields.allHeaderFields)
        }
    }

    // MARK: bare transport (the baseline of the miss benchmark) and a miss with its store

    Benchmark("BareTransport", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? await mock.send(request))
        }
    }

    let missCache = HTTPCache(storage: MemoryStorage())
    let missPipeline = Pipeline(transport: mock, hooks: [missCache])
    var noStore = request
    noStore.setValue("no-cache", forHTTPHeaderField: "Cache-Control")  // forces the origin and a store every time
    Benchmark("MissWithStore", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? await missPipeline.send(noStore))
        }
    }

    // MARK: a miss over a real loopback socket, against the bare transport's round trip

    let origin = LoopbackOrigin_()
    let bareSession = URLSessionTransport()
    let loopbackPipeline = Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache(storage: MemoryStorage())])
    let missCounter = Counter()
    Benchmark("LoopbackBare", configuration: single) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? await bareSession.send(URLRequest(url: origin.url(missCounter.next()))))
        }
    } setup: {
        try origin.start()
    }
    Benchmark("LoopbackMissWithStore", configuration: single) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? await loopbackPipeline.send(URLRequest(url: origin.url(missCounter.next()))))
        }
    } setup: {
        try origin.start()
    }

    // MARK: the canonical key alone

    let keyPolicy = CacheKeyPolicy(ignoredQueryParameters: ["utm_*"])
    let messy = URLRequest(url: URL(string: "HTTPS://Bench.TEST:443/a/./b/../items/%7E42?utm_source=x&z=1&b=2&a=1#top")!)
    Benchmark("CanonicalKey", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(keyPolicy.key(for: messy))
        }
    }

    // MARK: Foundation's URLCache, the baseline a user would otherwise reach for

    let urlCache = URLCache(memoryCapacity: 64 << 20, diskCapacity: 0, diskPath: nil)
    let foundationResponse = HTTPURLResponse(
        url: url, statusCode: 200, httpVersion: "HTTP/1.1",
        headerFields: ["Cache-Control": "max-age=86400"])!
    urlCache.storeCachedResponse(CachedURLResponse(response: foundationResponse, data: body), for: request)
    Benchmark("URLCacheLookup", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(urlCache.cachedResponse(for: request))
        }
    }
    Benchmark("URLCacheStore", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            urlCache.storeCachedResponse(CachedURLResponse(response: foundationResponse, data: body), for: request)
        }
    }

    let lookupStorage = MemoryStorage()
    let lookupCache = HTTPCache(storage: lookupStorage)
    let lookupPipeline = Pipeline(transport: mock, hooks: [lookupCache])
    Benchmark("RecallLookup", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(await lookupStorage.record(for: lookupCache.key(for: request)!))
        }
    } setup: {
        _ = try await lookupPipeline.send(request)
    }

    // The store half of the same work: a response for the request, keyed and stored.
    let storeStorage = MemoryStorage()
    let storeCache = HTTPCache(storage: storeStorage)
    let storedRecord = CacheRecord(
        key: storeCache.key(for: request)!,
        variants: [
            CacheEntry(
                status: 200, headers: ["Cache-Control": "max-age=86400"], body: body, url: url,
                requestTime: Date(), responseTime: Date())
        ])
    Benchmark("RecallStore", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            var record = storedRecord
            record.key = storeCache.key(for: request)!
            await storeStorage.store(record)
        }
    }

    // A full memory storage at its steady state: every store of a new key evicts one (S3-FIFO,
    // the default), as a cache of many URLs does once it has filled.
    let evictingStorage = MemoryStorage(countLimit: 1_000)
    let evictingRecords = (0..<8_192).map { index in
        var record = storedRecord
        record.key = "http://example.com/items/\(index)?page=\(index % 7)&sort=name"
        return record
    }
    let evictingNext = Cursor()
    Benchmark("MemoryStoreEvicting", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations {
            await evictingStorage.store(evictingRecords[evictingNext.advance(modulo: evictingRecords.count)], expires: nil)
        }
    } setup: {
        for record in evictingRecords.prefix(1_000) { await evictingStorage.store(record, expires: nil) }
    }

    // MARK: disk hit with a cold memory tier

    for size in [1 << 10, 16 << 10, 256 << 10] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-bench-\(size)-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        guard let disk = try? DiskStorage(directory: directory) else { continue }
        let diskMock = MockTransport()
        diskMock.route(
            "GET", "/items/42",
            .response(
                RecallResponse(
                    status: 200, headers: ["Cache-Control": "max-age=86400"],
                    body: Data(repeating: 0x62, count: size))))
        let diskPipeline = Pipeline(transport: diskMock, hooks: [HTTPCache(storage: disk)])
        Benchmark("DiskHit\(size >> 10)KB", configuration: size > 64 << 10 ? hundred : batch) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try? await diskPipeline.send(request))
            }
        } setup: {
            _ = try await diskPipeline.send(request)
            await disk.flush()
            // A hot entry of a long-running cache: its file has been unchanged for more than the
            // two seconds after which DiskStorage may hold it open (see HeldFile).
            try await Task.sleep(for: .milliseconds(2_100))
        } teardown: {
            try? FileManager.default.removeItem(at: directory)
        }
        // The record file the hit reads (the one `.rce` file of the directory).
        @Sendable func recordFile() throws -> String {
            guard let name = try FileManager.default.contentsOfDirectory(atPath: directory.path).first(where: { $0.hasSuffix(".rce") })
            else { throw POSIXError(.ENOENT) }
            return directory.appendingPathComponent(name).path
        }
        // The baseline of the disk hit: open, read and close the very file the hit reads, with
        // POSIX calls into a buffer of its size, nothing else.
        Benchmark("PosixRead\(size >> 10)KB", configuration: size > 64 << 10 ? hundred : batch) { benchmark in
            let path = try recordFile()
            var buffer = [UInt8](repeating: 0, count: size + 4096)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                var total = 0
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + total, $0.count - total) }
                    if count <= 0 { break }
                    total += count
                }
                close(descriptor)
                blackHole(total)
            }
        } setup: {
            _ = try await diskPipeline.send(request)
            await disk.flush()
        }
        // The floor of a hit on a held file: the system calls such a hit makes (an `fstat`, the
        // file must be the one held, and a `pread` of the whole file) on a descriptor opened once,
        // nothing else. A disk hit cannot cost less than this and `MinimalHitPipeline` together.
        Benchmark("HeldFileRead\(size >> 10)KB", configuration: size > 64 << 10 ? hundred : batch) { benchmark in
            let descriptor = open(try recordFile(), O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw POSIXError(.ENOENT) }
            defer { close(descriptor) }
            var buffer = [UInt8](repeating: 0, count: size + 4096)
            var status = stat()
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                fstat(descriptor, &status)
                let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, $0.count, 0) }
                blackHole(count + Int(status.st_size))
            }
            benchmark.stopMeasurement()
        } setup: {
            _ = try await diskPipeline.send(request)
            await disk.flush()
        }
    }

    // MARK: concurrent hits

    // Each task sends its own request (a copied URLRequest shares one Foundation object, which
    // concurrent callers do not), 100 hits each per iteration. Throughput = tasks × 100 / time.
    for tasks in [1, 2, 8, 64] {
        Benchmark("ConcurrentHits\(tasks)Tasks", configuration: single) { benchmark in
            for _ in benchmark.scaledIterations {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<tasks {
                        group.addTask {
                            let own = URLRequest(url: url)
                            for _ in 0..<100 { blackHole(try? await memoryPipeline.send(own)) }
                        }
                    }
                }
            }
        } setup: {
            _ = try await memoryPipeline.send(request)
        }
    }

    // MARK: an exponential-backoff retrier on first-try successes, against no retrier

    let retrying = Pipeline(transport: mock, retrierFactory: .exponentialBackoff(maxAttempts: 3))
    let plain = Pipeline(transport: mock)
    Benchmark("PipelineNoRetrier", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try? await plain.send(request)) }
    }
    Benchmark("PipelineBackoffRetrier", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try? await retrying.send(request)) }
    }
    // The same mock claiming nothing about cancellation: each attempt runs in a task of its own
    // (AttemptRace), the price of time limits that hold against a transport that never listens.
    let uncooperative = MockTransport(respondsToCancellation: false)
    uncooperative.route("GET", "/items/42", .response(RecallResponse(status: 200, headers: ["Cache-Control": "max-age=86400"], body: body)))
    let racing = Pipeline(transport: uncooperative)
    Benchmark("PipelineUncooperativeTransport", configuration: batch) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try? await racing.send(request)) }
    }

    // MARK: breaker and budget bookkeeping with many calls in their windows, against PipelineNoRetrier
    // (the first edition scanned every sample per call: 23 µs at 10,000, 194 µs at 80,000)

    for samples in [10_000, 100_000] {
        // A count window holds exactly `samples` outcomes once filled; all succeed, so it never opens.
        let breaker = CircuitBreaker(minimumCalls: samples, window: .count(samples))
        let guarded = Pipeline(transport: mock.withCircuitBreaker(breaker))
        Benchmark("PipelineBreaker\(samples / 1000)k", configuration: batch) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try? await guarded.send(request)) }
        } setup: {
            for _ in 0..<samples { _ = try await guarded.send(request) }
        }
        // A one-hour window: every request of the run stays in it (at least `samples`).
        var policy = RetryPolicy(maxAttempts: 3)
        policy.budget = PercentageBudget(window: .seconds(3_600))
        let budgeted = Pipeline(transport: mock, retrierFactory: .policy(policy))
        Benchmark("PipelineBudget\(samples / 1000)k", configuration: batch) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try? await budgeted.send(request)) }
        } setup: {
            for _ in 0..<samples { _ = try await budgeted.send(request) }
        }
    }
}

/// The loopback origin server of the integration tests, started once (see RecallTesting's
/// `LoopbackOrigin`).
final class LoopbackOrigin_: @unchecked Sendable {
    private let lock = NSLock()
    private var origin: LoopbackOrigin?

    func start() throws {
        lock.lock()
        defer { lock.unlock() }
        guard origin == nil else { return }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Tests/RecallTests/Support/origin_server.py")
        origin = try LoopbackOrigin(script: script)
    }

    /// A distinct, cacheable 1 KB resource for request `number`.
    func url(_ number: Int) -> URL {
        lock.lock()
        defer { lock.unlock() }
        return origin!.url("/bench", [("n", String(number)), ("cc", "max-age=600"), ("size", "1024")])
    }
}

/// A thread-safe counter.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}

/// A position in a list that a benchmark walks round, one step per iteration (the benchmark
/// runs its iterations one after another).
final class Cursor: @unchecked Sendable {
    private var next = 0

    /// The position now; the next call gets the one after it, modulo `count`.
    func advance(modulo count: Int) -> Int {
        defer { next = (next + 1) % count }
        return next
    }
}
