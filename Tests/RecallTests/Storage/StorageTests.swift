import Foundation
@testable import Recall
import Testing
#if canImport(Glibc)
    import Glibc
#endif

func makeRecord(_ key: String, bodySize: Int = 10, status: Int = 200) -> CacheRecord {
    let entry = CacheEntry(
        status: status, headers: ["Cache-Control": "max-age=60", "ETag": "\"\(key.count)\""],
        body: Data(repeating: UInt8(ascii: "x"), count: bodySize), url: nil,
        requestTime: Date(timeIntervalSince1970: 1_700_000_000), responseTime: Date(timeIntervalSince1970: 1_700_000_001),
        varyValues: [HeaderFields.Field(name: "accept", value: "text/html")])
    return CacheRecord(key: key, variants: [entry])
}

/// The files of a `DiskStorage` directory, without the storage's own bookkeeping (marker, lock).
func cacheFiles(in directory: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        .filter { $0 != ".recall-cache" && $0 != ".lock" }.sorted()
}

func temporaryDirectory(_ name: String = #function) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("recall-tests-\(UUID().uuidString.prefix(8))")
}

@Suite("Storage: memory, disk, tiered; LRU", .timeLimit(.minutes(1)))
struct StorageTests {
    @Test("LRU evicts the least recently used key")
    func lru() {
        var policy = LRUPolicy()
        for key in ["a", "b", "c"] { policy.recordInsert(key, size: 1) }
        policy.recordAccess("a")
        #expect(Self.evictionOrder(&policy) == ["b", "c", "a"])
        #expect(policy.count == 0)
    }

    /// The keys `policy` names as victims, each removed in turn, until it names none.
    static func evictionOrder(_ policy: inout some EvictionPolicy) -> [String] {
        var order: [String] = []
        while order.count < 1000, let victim = policy.victim() {
            order.append(victim)
            policy.recordRemoval(victim)
        }
        return order
    }

    @Test("S3-FIFO keeps hot keys through a scan of one-hit wonders that flushes LRU")
    func s3fifoScanResistance() async {
        for (eviction, survives) in [(Eviction.s3fifo, true), (Eviction.lru, false)] {
            let storage = MemoryStorage(byteLimit: 1 << 30, countLimit: 20, entryLimit: 1 << 20, eviction: eviction)
            for hot in 0..<10 { storage.storeNow(makeRecord("hot\(hot)")) }
            for _ in 0..<3 { for hot in 0..<10 { _ = storage.recordNow(for: "hot\(hot)") } }
            for cold in 0..<100 { storage.storeNow(makeRecord("cold\(cold)")) }  // a scan, each read once
            let kept = (0..<10).filter { storage.recordNow(for: "hot\($0)") != nil }.count
            #expect((kept == 10) == survives, "\(eviction.name) kept \(kept) of 10 hot keys")
            #expect(storage.statistics.count <= 20)
        }
    }

    @Test("a user's own eviction policy is told the keys' text, and the storage evicts what it names")
    func customPolicy() {
        /// Oldest first, logging what it is told.
        struct LoggingFIFO: EvictionPolicy {
            let log: Locked<[String]>
            var order: [String] = []
            mutating func recordInsert(_ key: String, size: Int) {
                log.withLock { $0.append("insert \(key)") }
                order.removeAll { $0 == key }
                order.append(key)
            }
            mutating func recordAccess(_ key: String) { log.withLock { $0.append("read \(key)") } }
            mutating func recordRemoval(_ key: String) {
                log.withLock { $0.append("remove \(key)") }
                order.removeAll { $0 == key }
            }
            mutating func victim() -> String? { order.first }
        }
        let log = Locked<[String]>([])
        let storage = MemoryStorage(countLimit: 2, eviction: Eviction(name: "logging FIFO") { LoggingFIFO(log: log) })
        storage.storeNow(makeRecord("a"))
        storage.storeNow(makeRecord("b"))
        #expect(storage.recordNow(for: "a") != nil)
        #expect(storage.storeNow(makeRecord("c")) == ["a"], "the policy's victim is evicted")
        #expect(storage.recordNow(for: "a") == nil)
        #expect(log.withLock { $0 } == ["insert a", "insert b", "read a", "insert c", "remove a"])
    }

    @Test("S3-FIFO: a key evicted early and seen again goes to the main queue (ghost)")
    func s3fifoGhost() {
        var policy = S3FIFOPolicy()
        for key in ["a", "b", "c"] { policy.recordInsert(key, size: 1) }
        let first = policy.victim()
        #expect(first == "a")
        policy.recordRemoval("a")
        policy.recordInsert("a", size: 1)  // back from the ghost: into main
        #expect(policy.victim() == "b")
        policy.recordRemoval("b")
        #expect(policy.victim() == "c")
    }

    @Test("S3-FIFO: a key inserted again while tracked keeps its place and its reads, with its new size")
    func s3fifoReinsert() {
        var unread = S3FIFOPolicy()
        for key in ["a", "b", "c"] { unread.recordInsert(key, size: 1) }
        unread.recordInsert("a", size: 5)  // replaced: neither a new key nor moved to the back
        #expect(unread.queuedCount == 3)  // (not queued twice)
        #expect(Self.evictionOrder(&unread) == ["a", "b", "c"])
        var read = S3FIFOPolicy()
        for key in ["a", "b", "c"] { read.recordInsert(key, size: 1) }
        read.recordAccess("a")
        read.recordInsert("a", size: 5)
        // "a" keeps its read: promoted when its turn comes, not evicted; "b" goes first.
        #expect(Self.evictionOrder(&read) == ["b", "c", "a"])
    }

    @Test("S3-FIFO: Recall's sizes by default, the paper's on request, nonsense clamped")
    func s3fifoParameters() {
        let defaults = S3FIFOPolicy()
        #expect(defaults.smallRatio == 0.05 && defaults.ghostRatio == 0.5 && defaults.promotionThreshold == 1)
        let paper = S3FIFOPolicy(smallRatio: 0.1, ghostRatio: 0.9)
        #expect(paper.smallRatio == 0.1 && paper.ghostRatio == 0.9)
        let clamped = S3FIFOPolicy(smallRatio: .nan, promotionThreshold: 0, ghostRatio: -1)
        #expect(clamped.smallRatio == 0.05 && clamped.ghostRatio == 0 && clamped.promotionThreshold == 1)
        #expect(S3FIFOPolicy(smallRatio: 5, ghostRatio: .infinity).smallRatio == 0.9)
        #expect(S3FIFOPolicy(ghostRatio: .infinity).ghostRatio == 0.5)
    }

    @Test("MemoryStorage is bounded by count and by bytes, evicting LRU")
    func memoryBounds() async {
        let byCount = MemoryStorage(byteLimit: 1 << 20, countLimit: 2, eviction: .lru)
        await byCount.store(makeRecord("a"))
        await byCount.store(makeRecord("b"))
        _ = await byCount.record(for: "a")
        await byCount.store(makeRecord("c"))
        #expect(await byCount.record(for: "b") == nil)
        #expect(await byCount.record(for: "a") != nil)
        #expect(await byCount.record(for: "c") != nil)
        #expect(byCount.statistics.evictions == 1)
        #expect(byCount.statistics.count == 2)

        let size = makeRecord("k1", bodySize: 1000).byteCount
        let byBytes = MemoryStorage(byteLimit: size * 3, countLimit: 100, entryLimit: size * 2, eviction: .lru)
        for index in 0..<5 { await byBytes.store(makeRecord("k\(index)", bodySize: 1000)) }
        #expect(byBytes.statistics.count == 3)
        #expect(byBytes.statistics.bytes <= size * 3)
        await byBytes.store(makeRecord("huge", bodySize: 10_000))
        #expect(await byBytes.record(for: "huge") == nil)
        #expect(byBytes.statistics.rejected == 1)
        await byBytes.removeAll()
        #expect(byBytes.statistics.count == 0)
        #expect(byBytes.statistics.bytes == 0)
    }

    @Test("the codec round-trips records and rejects every truncation and a flipped byte")
    func codec() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let record = makeRecord("https://x.test/codec", bodySize: 300)
        do {
            let storage = try DiskStorage(directory: directory)
            await storage.store(record)
            await storage.flush()
        }
        let file = try #require(
            try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
                .first { $0.pathExtension == "rce" })
        let bytes = try Data(contentsOf: file)
        // Every truncation point is detected on a fresh open, counted, and the file removed.
        for cut in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 40)) {
            try bytes.prefix(cut).write(to: file)
            let reopened = try DiskStorage(directory: directory)
            #expect(await reopened.record(for: record.key) == nil, "truncated at \(cut) of \(bytes.count)")
            #expect(reopened.statistics.corruptRemoved == 1)
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }
        var flipped = bytes
        flipped[bytes.count - 5] ^= 0xFF
        try flipped.write(to: file)
        let reopened = try DiskStorage(directory: directory)
        #expect(await reopened.record(for: record.key) == nil)
        #expect(reopened.statistics.corruptRemoved == 1)
    }

    @Test("DiskStorage survives a restart: a new instance serves what the old one stored")
    func diskRestart() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let storage = try DiskStorage(directory: directory)
            for index in 0..<20 { await storage.store(makeRecord("https://x.test/\(index)", bodySize: 100 + index)) }
            #expect(await storage.record(for: "https://x.test/3") == makeRecord("https://x.test/3", bodySize: 103))  // pending, visible
            await storage.flush()
        }
        let reopened = try DiskStorage(directory: directory)
        #expect(reopened.statistics.count == 20)
        for index in 0..<20 {
            #expect(await reopened.record(for: "https://x.test/\(index)") == makeRecord("https://x.test/\(index)", bodySize: 100 + index))
        }
        await reopened.remove("https://x.test/0")
        #expect(await reopened.record(for: "https://x.test/0") == nil)
        await reopened.flush()
        #expect(reopened.statistics.count == 19)
    }

    @Test("DiskStorage: directory 0700, files 0600, names are hashes, temporary leftovers are cleaned")
    func diskLayout() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let storage = try DiskStorage(directory: directory)
            await storage.store(makeRecord("https://x.test/secret-path?token=abc"))
            await storage.flush()
            let attributes = try FileManager.default.attributesOfItem(atPath: directory.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".rce") }
            #expect(files.count == 1)
            #expect(files[0].count == 64 + 4)
            #expect(!files[0].contains("secret"))
            let fileAttributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(files[0]).path)
            #expect((fileAttributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }
        let leftover = String(repeating: "ab", count: 32) + ".rce.tmp-1-1"
        try Data("half a write".utf8).write(to: directory.appendingPathComponent(leftover))
        try Data("the user's own file".utf8).write(to: directory.appendingPathComponent("notes.rce.tmp-1-1"))
        _ = try DiskStorage(directory: directory)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!names.contains(leftover))
        #expect(names.contains("notes.rce.tmp-1-1"))  // not a name the cache makes: never touched
    }

    @Test("DiskStorage: a file holding another key is a miss (collision safety), garbage and empty files are removed")
    func diskMismatch() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let storage = try DiskStorage(directory: directory)
            await storage.store(makeRecord("https://x.test/one"))
            await storage.store(makeRecord("https://x.test/two"))
            await storage.flush()
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".rce") }.sorted()
        let first = directory.appendingPathComponent(files[0]), second = directory.appendingPathComponent(files[1])
        // Put one key's record under the other's file name, as a hash collision would.
        try FileManager.default.removeItem(at: second)
        try FileManager.default.copyItem(at: first, to: second)
        var reopened: DiskStorage? = try DiskStorage(directory: directory)
        let one = await reopened?.record(for: "https://x.test/one")
        let two = await reopened?.record(for: "https://x.test/two")
        reopened = nil
        #expect([one, two].compactMap { $0 }.count == 1)
        #expect([one?.key, two?.key].compactMap { $0 }.allSatisfy { $0 == "https://x.test/one" || $0 == "https://x.test/two" })
        #expect(one.map { $0.key == "https://x.test/one" } ?? true)
        #expect(two.map { $0.key == "https://x.test/two" } ?? true)

        try Data().write(to: first)
        try Data(repeating: 0xAB, count: 500).write(to: second)
        let third = try DiskStorage(directory: directory)
        #expect(await third.record(for: "https://x.test/one") == nil)
        #expect(await third.record(for: "https://x.test/two") == nil)
        #expect(third.statistics.corruptRemoved == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".rce") }.isEmpty)
    }

    @Test("DiskStorage: an entry that cannot be read as a file (a directory in its place) is a miss, not a crash")
    func diskUnreadable() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let storage = try DiskStorage(directory: directory)
            await storage.store(makeRecord("https://x.test/unreadable"))
            await storage.flush()
        }
        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.hasSuffix(".rce") })
        let path = directory.appendingPathComponent(file)
        try FileManager.default.removeItem(at: path)
        try FileManager.default.createDirectory(at: path, withIntermediateDirectories: false)
        let reopened = try DiskStorage(directory: directory)
        #expect(await reopened.record(for: "https://x.test/unreadable") == nil)
        #expect(reopened.statistics.corruptRemoved == 1)
        #expect(!FileManager.default.fileExists(atPath: path.path))  // cleaned up
        await reopened.store(makeRecord("https://x.test/unreadable"))
        await reopened.flush()
        #expect(await reopened.record(for: "https://x.test/unreadable") == makeRecord("https://x.test/unreadable"))
    }

    @Test("DiskStorage: per-entry limit and total byte limit with LRU eviction")
    func diskLimits() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try DiskStorage(directory: directory, byteLimit: 5_000, entryLimit: 2_000, eviction: .lru)
        await storage.store(makeRecord("big", bodySize: 3_000))
        await storage.flush()
        #expect(await storage.record(for: "big") == nil)
        #expect(storage.statistics.rejected == 1)
        for index in 0..<10 { await storage.store(makeRecord("k\(index)", bodySize: 1_000)) }
        await storage.flush()
        #expect(storage.statistics.bytes <= 5_000)
        #expect(storage.statistics.evictions >= 6)
        #expect(await storage.record(for: "k9") != nil)
        #expect(await storage.record(for: "k0") == nil)
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".rce") }.count
        #expect(onDisk == storage.statistics.count)
    }

    @Test("a second DiskStorage on the same directory gets a clear error")
    func diskLocked() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try DiskStorage(directory: directory)
        #expect(throws: CacheStorageError.self) { try DiskStorage(directory: directory) }
        _ = first
    }

    @Test("TieredStorage: reads promote from disk to memory; writes and removals reach both")
    func tiered() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try DiskStorage(directory: directory)
        await disk.store(makeRecord("k"))
        await disk.flush()
        let memory = MemoryStorage()
        let tiered = TieredStorage(memory: memory, lower: disk)
        #expect(await memory.record(for: "k") == nil)
        #expect(await tiered.record(for: "k") == makeRecord("k"))
        #expect(await memory.record(for: "k") == makeRecord("k"))
        await tiered.store(makeRecord("n"))
        #expect(await disk.record(for: "n") != nil)
        await tiered.remove("k")
        #expect(await memory.record(for: "k") == nil)
        #expect(await disk.record(for: "k") == nil)
    }

    @Test(
        "MemoryStorage: hits read without waiting while stores, removals and evictions run; the books stay exact",
        arguments: [Eviction.lru, .s3fifo, .wTinyLFU])
    func concurrentReadsAndWrites(eviction: Eviction) async {
        let storage = MemoryStorage(byteLimit: 1 << 30, countLimit: 50, entryLimit: 1 << 20, eviction: eviction)
        let keys = (0..<200).map { "https://c.test/\($0)" }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var random = SeededRandomSource(seed: UInt64(task))
                    for step in 0..<2_000 {
                        let key = keys[Int.random(in: 0..<keys.count, using: &random)]
                        switch step % 10 {
                        case 0..<6:
                            if let record = storage.recordNow(for: key) { #expect(record.key == key) }
                        case 6..<9: storage.storeNow(makeRecord(key))
                        default: storage.removeNow(key)
                        }
                    }
                }
            }
        }
        let held = keys.filter { storage.recordNow(for: $0) != nil }
        let statistics = storage.statistics
        #expect(statistics.count == held.count)
        #expect(statistics.count <= 50)
        #expect(statistics.bytes == held.reduce(0) { $0 + makeRecord($1).byteCount })
        // The policy tracks exactly what is held: filling the storage evicts only held keys and
        // never loops on keys it no longer has.
        for key in keys.prefix(60) { storage.storeNow(makeRecord(key + "/refill")) }
        #expect(storage.statistics.count == 50)
    }
}
