import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// A record whose header and body both say `version`, so a mix of two versions shows.
private func versioned(_ key: String, _ version: Int, bodySize: Int = 6000) -> CacheRecord {
    let entry = CacheEntry(
        status: 200, headers: ["Cache-Control": "max-age=60", "X-Version": String(version)],
        body: Data(repeating: UInt8(truncatingIfNeeded: version), count: bodySize), url: nil,
        requestTime: Date(timeIntervalSince1970: 1_700_000_000), responseTime: Date(timeIntervalSince1970: 1_700_000_001))
    return CacheRecord(key: key, variants: [entry])
}

@Suite("DiskStorage: files held open for rereads", .timeLimit(.minutes(1)))
struct HeldFileTests {
    /// A storage that may hold any file at once (the real one waits until a file is two seconds old).
    private func storage(_ directory: URL, openFileLimit: Int = 64, settledAge: Int = 0) throws -> DiskStorage {
        try DiskStorage(
            directory: directory, byteLimit: 256 << 20, entryLimit: 16 << 20, pendingByteLimit: 16 << 20,
            eviction: .s3fifo, openFileLimit: openFileLimit, settledAge: settledAge)
    }

    private func path(_ directory: URL, _ key: String) -> String {
        directory.appendingPathComponent(DiskStorage.fileName(for: key)).path
    }

    /// Waits until the file system's clock has moved past the change time of the file at `path`,
    /// so a change made to it now gets another change time than it had when it was held (time
    /// stamps are kept at a clock tick's granularity). A probe file written again and again shows
    /// the clock.
    private func tick(past path: String) async throws {
        var held = stat()
        try #require(stat(path, &held) == 0, "no file at \(path)")
        let probe = NSTemporaryDirectory() + "recall-tick-\(UUID().uuidString)"
        defer { unlink(probe) }
        try await waitUntil("the file system's clock moved past the file's change time") {
            let descriptor = open(probe, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
            guard descriptor >= 0 else { return false }
            defer { close(descriptor) }
            var now = stat()
            guard write(descriptor, "x", 1) == 1, fstat(descriptor, &now) == 0 else { return false }
            return (now.st_ctim.tv_sec, now.st_ctim.tv_nsec) > (held.st_ctim.tv_sec, held.st_ctim.tv_nsec)
        }
    }

    /// A pipeline whose cache keeps responses in `storage`, over an origin whose `/a` answers
    /// `body`, fresh for ten minutes; and the request for `/a`, sent once: a miss, stored.
    private func cachingA(in storage: any CacheStorage, body: Data) async throws -> (MockTransport, HTTPCache, Pipeline, URLRequest) {
        let mock = MockTransport()
        mock.route("GET", "/a", .status(200, headers: ["Cache-Control": "max-age=600"], body: body))
        let cache = HTTPCache(storage: storage)
        let pipeline = Pipeline(transport: mock, hooks: [cache])
        let request = URLRequest(url: URL(string: "https://x.test/a")!)
        #expect(try await pipeline.send(request).source == .network)
        await cache.flush()
        return (mock, cache, pipeline, request)
    }

    @Test("a checked file is held and read again to the same record; a fresh one is not held; the table is bounded")
    func heldAndBounded() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory, openFileLimit: 3)
        for index in 0..<5 { await disk.store(versioned("https://x.test/\(index)", index)) }
        await disk.flush()
        #expect(disk.heldFileCount == 0)
        #expect(await disk.record(for: "https://x.test/0") == versioned("https://x.test/0", 0))  // checked, then held
        #expect(disk.heldFileCount == 1)
        for _ in 0..<3 { #expect(await disk.record(for: "https://x.test/0") == versioned("https://x.test/0", 0)) }  // through it
        for index in 1..<5 { #expect(await disk.record(for: "https://x.test/\(index)") == versioned("https://x.test/\(index)", index)) }
        #expect(disk.heldFileCount == 3)
        #expect(disk.statistics.corruptRemoved == 0)

        let none = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: none) }
        let unheld = try storage(none, openFileLimit: 0)
        await unheld.store(versioned("https://x.test/a", 1))
        await unheld.flush()
        #expect(await unheld.record(for: "https://x.test/a") == versioned("https://x.test/a", 1))
        #expect(unheld.heldFileCount == 0)

        let fresh = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: fresh) }
        // Files changed within the settled age (2 s by default; an hour here, so a slow run
        // cannot outlast it) are not held.
        let waiting = try storage(fresh, settledAge: 3600)
        await waiting.store(versioned("https://x.test/a", 1))
        await waiting.flush()
        #expect(await waiting.record(for: "https://x.test/a") == versioned("https://x.test/a", 1))
        #expect(waiting.heldFileCount == 0)
    }

    @Test("a byte changed in place under a held file is caught: the file is checked again, found corrupt, removed")
    func changedInPlace() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory)
        let key = "https://x.test/a"
        await disk.store(versioned(key, 1))
        await disk.flush()
        _ = await disk.record(for: key)
        #expect(disk.heldFileCount == 1)
        #expect(disk.recordWithoutSuspending(for: key) == versioned(key, 1))  // the read without suspending
        try await tick(past: path(directory, key))
        // Same size, one body byte changed, written into the same inode.
        let descriptor = open(path(directory, key), O_WRONLY)
        #expect(descriptor >= 0)
        var byte: UInt8 = 0x7F
        #expect(pwrite(descriptor, &byte, 1, 300) == 1)
        close(descriptor)
        #expect(disk.recordWithoutSuspending(for: key) == nil)  // not at hand: the file changed
        #expect(disk.heldFileCount == 0)
        #expect(await disk.record(for: key) == nil)
        #expect(disk.statistics.corruptRemoved == 1)
        #expect(disk.heldFileCount == 0)
    }

    @Test("a held file removed or replaced behind the storage's back is never read again")
    func replacedOrRemovedAround() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory)
        let key = "https://x.test/a"
        await disk.store(versioned(key, 1))
        await disk.flush()
        _ = await disk.record(for: key)
        #expect(disk.heldFileCount == 1)
        // Another valid record of the key, renamed over the held file (another inode).
        let replacement = directory.appendingPathComponent("replacement").path
        try versioned(key, 2).encoded().write(to: URL(fileURLWithPath: replacement))
        #expect(rename(replacement, path(directory, key)) == 0)
        #expect(disk.recordWithoutSuspending(for: key) == nil)
        #expect(await disk.record(for: key) == versioned(key, 2))
        // Removed (as by `rm` on the cache directory).
        _ = await disk.record(for: key)
        #expect(unlink(path(directory, key)) == 0)
        #expect(await disk.record(for: key) == nil)
        #expect(disk.heldFileCount == 0)
    }

    @Test("stores, removals and removeAll through the storage let go of the held file")
    func changedThroughTheStorage() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory)
        let key = "https://x.test/a"
        await disk.store(versioned(key, 1))
        await disk.flush()
        _ = await disk.record(for: key)
        #expect(disk.heldFileCount == 1)
        await disk.store(versioned(key, 2, bodySize: 6000))  // same size: only the identity tells
        #expect(disk.recordWithoutSuspending(for: key) == nil)  // a write pending
        await disk.flush()
        #expect(disk.heldFileCount == 0)
        #expect(disk.recordWithoutSuspending(for: key) == nil)
        #expect(await disk.record(for: key) == versioned(key, 2))
        #expect(await disk.record(for: key) == versioned(key, 2))
        #expect(disk.heldFileCount == 1)
        await disk.remove(key)
        await disk.flush()
        #expect(disk.heldFileCount == 0)
        #expect(await disk.record(for: key) == nil)
        await disk.store(versioned(key, 3))
        await disk.flush()
        _ = await disk.record(for: key)
        #expect(disk.heldFileCount == 1)
        await disk.removeAll()
        #expect(disk.heldFileCount == 0)
        #expect(await disk.record(for: key) == nil)
    }

    @Test("readers racing stores of new versions get one whole version, never one version's fields with another's body")
    func racingStores() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory, openFileLimit: 4)
        let keys = (0..<6).map { "https://x.test/\($0)" }
        for key in keys { await disk.store(versioned(key, 0)) }
        await disk.flush()
        let mixed = await withTaskGroup(of: Int.self) { group in
            group.addTask {
                for version in 1...60 {
                    for key in keys { await disk.store(versioned(key, version)) }
                    if version % 10 == 0 { await disk.flush() }
                }
                return 0
            }
            for _ in 0..<4 {
                group.addTask {
                    var bad = 0
                    for round in 0..<600 {
                        guard let record = await disk.record(for: keys[round % keys.count]) else { bad += 1; continue }
                        let version = Int(record.variants[0].headers["X-Version"] ?? "") ?? -1
                        if record.variants[0].body != Data(repeating: UInt8(truncatingIfNeeded: version), count: 6000) { bad += 1 }
                    }
                    return bad
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mixed == 0)
        #expect(disk.statistics.corruptRemoved == 0)
    }

    @Test("a cache over a disk storage answers a held file's hit without suspending, and a changed file is read again with every check")
    func cacheHitsThroughHeldFiles() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory)
        let (mock, cache, pipeline, request) = try await cachingA(in: disk, body: Data(repeating: 0x41, count: 4000))
        // Before the file is held, the lookup has to suspend (it opens and checks the file).
        guard case .suspend = cache.decide(request, context: RecallContext(originalRequest: request)) else {
            Issue.record("a file not held yet was answered without a read by name")
            return
        }
        #expect(try await pipeline.send(request).source == .cache)  // read by name, checked, then held
        guard case .act(.respond(let held)) = cache.decide(request, context: RecallContext(originalRequest: request)) else {
            Issue.record("a held file's hit was not answered without suspending")
            return
        }
        #expect(held.source == .cache)
        #expect(held.data == Data(repeating: 0x41, count: 4000))
        #expect(try await pipeline.send(request).body == held.body)
        // A byte of the body changed in place: the hit is not served from the held file; the
        // file fails its checks and the origin is asked again.
        let key = try #require(cache.key(for: request))
        try await tick(past: path(directory, key))
        let descriptor = open(path(directory, key), O_WRONLY)
        #expect(descriptor >= 0)
        var byte: UInt8 = 0x42
        let size = lseek(descriptor, 0, SEEK_END)
        #expect(pwrite(descriptor, &byte, 1, size - 10) == 1)
        close(descriptor)
        let after = try await pipeline.send(request)
        #expect(after.source == .network)
        #expect(after.data == Data(repeating: 0x41, count: 4000))
        #expect(mock.requests.count == 2)
        #expect(disk.statistics.corruptRemoved == 1)
    }

    @Test("a cache over memory over disk answers what the memory tier holds without suspending; the rest reads the disk and is promoted")
    func tieredMemoryTierHits() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory)
        let memory = MemoryStorage()
        let (mock, cache, pipeline, request) = try await cachingA(in: TieredStorage(memory: memory, lower: disk), body: Data("a".utf8))
        guard case .act(.respond(let hit)) = cache.decide(request, context: RecallContext(originalRequest: request)) else {
            Issue.record("a hit in the memory tier was not answered without suspending")
            return
        }
        #expect(hit.data == Data("a".utf8))
        // Gone from the memory tier only (as after an eviction): the lookup suspends, reads the
        // disk and promotes; the next one is answered from memory again.
        let key = try #require(cache.key(for: request))
        await memory.remove(key)
        guard case .suspend = cache.decide(request, context: RecallContext(originalRequest: request)) else {
            Issue.record("a memory-tier miss was answered without reading the disk")
            return
        }
        #expect(try await pipeline.send(request).source == .cache)
        #expect(memory.recordNow(for: key) != nil)
        guard case .act(.respond) = cache.decide(request, context: RecallContext(originalRequest: request)) else {
            Issue.record("the promoted record was not answered without suspending")
            return
        }
        #expect(mock.requests.count == 1)
    }
}
