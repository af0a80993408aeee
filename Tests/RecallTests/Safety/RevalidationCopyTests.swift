import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``DiskStorage`` whose writes in pieces wait at a gate while it is shut: a record rewritten
/// in pieces (a large body's, freshened by a 304) cannot land until the test opens it.
private final class GatedDisk: CacheByteStore {
    let disk: DiskStorage
    let gate = Locked<Gate?>(nil)
    let waiting = Locked(0)

    init(_ disk: DiskStorage) { self.disk = disk }

    func bytes(for key: String) async -> StoredBytes? { await disk.bytes(for: key) }
    func write(_ data: Data, for key: String, expires: Date?) async { await disk.write(data, for: key, expires: expires) }
    func removeCorrupt(_ key: String, ifStill data: Data) async { await disk.removeCorrupt(key, ifStill: data) }
    func reading(_ key: String) async -> (any ByteReading)? { await disk.reading(key) }
    func remove(_ key: String) async { await disk.remove(key) }
    func removeAll() async { await disk.removeAll() }
    func flush() async { await disk.flush() }
    var statistics: StorageStatistics { disk.statistics }
    var entryLimit: Int { disk.entryLimit }
    var secret: [UInt8] { disk.secret }
    var writeOrder: StorageWriteOrder? { disk.writeOrder }

    func beginWriting(for key: String, size: Int?, expires: Date?) async -> (any ByteWriting)? {
        if let gate = gate.withLock({ $0 }) {
            waiting.withLock { $0 += 1 }
            await gate.wait()
        }
        return await disk.beginWriting(for: key, size: size, expires: expires)
    }
}

/// Issue #53, point 6: a 304 for a body kept as a file answers without waiting for the record's
/// rewrite (which copies the body); the rewrite lands after the answer.
@Suite("Safety: a revalidated large body is answered before its record is rewritten", .timeLimit(.minutes(1)))
struct RevalidationCopyTests {
    static let size = 4 << 20

    @Test("through a real socket: the 304's answer reads the old file while the new record waits; the record lands after")
    func answerBeforeTheCopy() async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = GatedDisk(try DiskStorage(directory: directory, byteLimit: 64 << 20, entryLimit: 256 << 10))
        let cache = HTTPCache(storage: storage)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let path = OriginServer.uniquePath("revalidated-large")
        let url = server.url(path, ["stream": String(Self.size), "cc": "no-cache", "etag": "v1"])
        let first = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(first.source == .network && first.body.bytes == StreamingTests.expected(Self.size))
        await cache.flush()
        #expect(storage.statistics.count == 1)

        let gate = Gate()
        storage.gate.withLock { $0 = gate }
        let revalidated = try await pipeline.send(URLRequest(url: url))  // (before the fix: waited at the gate)
        #expect(revalidated.source == .revalidated)
        #expect(try await revalidated.collected().body.bytes == StreamingTests.expected(Self.size))
        try await waitUntil("the record's rewrite waits at the gate") { storage.waiting.withLock { $0 } == 1 }
        storage.gate.withLock { $0 = nil }
        gate.open()
        await cache.flush()

        let again = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(again.source == .revalidated && again.body.bytes == StreamingTests.expected(Self.size))
        #expect(try await server.hits(path) == 3)
        #expect(storage.statistics.count == 1 && storage.statistics.corruptRemoved == 0)
        #expect(cache.statistics.revalidated == 2)
    }
}
