import Foundation
@testable import Recall
import Testing

/// Issue #38: a ``DiskStorage`` record written in pieces and read in pieces, by bytes alone.
@Suite("DiskStorage: writes in pieces, reads in pieces")
struct ByteWritingTests {
    func storage(_ directory: URL, entryLimit: Int = 1 << 20) throws -> DiskStorage {
        try DiskStorage(directory: directory, byteLimit: 8 << 20, entryLimit: entryLimit)
    }

    @Test("appended pieces become the key's bytes only at the commit, at once; they read back whole and in pieces")
    func commit() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory)
        await disk.write(Data("before".utf8), for: "k", expires: nil)
        let write = try #require(await disk.beginWriting(for: "k", size: nil, expires: nil))
        try await write.append(Data("hello ".utf8))
        try await write.append(Data("world".utf8))
        #expect(await disk.bytes(for: "k")?.data == Data("before".utf8), "not visible before the commit")
        try await write.commit()
        #expect(await disk.bytes(for: "k")?.data == Data("hello world".utf8))
        let reading = try #require(await disk.reading("k"))
        #expect(reading.count == 11)
        #expect(try reading.read(at: 6, count: 5) == Data("world".utf8))
        #expect(try reading.read(at: 9, count: 100) == Data("ld".utf8))
        #expect(disk.statistics.count == 1 && disk.statistics.bytes == 11)
        #expect(cacheFiles(in: directory) == [DiskStorage.fileName(for: "k")], "no file left behind")
    }

    @Test("an abandoned write, a write over the limit and a write dropped unfinished leave no file and the old bytes")
    func abandon() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try DiskStorage(directory: directory, byteLimit: 10, entryLimit: 10)  // (pieces may make up to the byte limit)
        await disk.write(Data("old".utf8), for: "k", expires: nil)
        await disk.flush()
        let abandoned = try #require(await disk.beginWriting(for: "k", size: nil, expires: nil))
        try await abandoned.append(Data("new".utf8))
        await abandoned.abandon()
        await abandoned.abandon()

        let over = try #require(await disk.beginWriting(for: "k", size: nil, expires: nil))
        try await over.append(Data(count: 8))
        await #expect(throws: CacheStorageError.self) { try await over.append(Data(count: 8)) }
        await over.abandon()
        #expect(disk.statistics.rejected == 1)

        do {
            let dropped = try #require(await disk.beginWriting(for: "k", size: nil, expires: nil))
            try await dropped.append(Data("x".utf8))
        }
        #expect(await disk.bytes(for: "k")?.data == Data("old".utf8))
        #expect(cacheFiles(in: directory) == [DiskStorage.fileName(for: "k")])
    }

    @Test("a reader keeps the bytes it opened when a commit replaces them")
    func readerKeepsItsBytes() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory)
        let first = try #require(await disk.beginWriting(for: "k", size: nil, expires: nil))
        try await first.append(Data(repeating: 1, count: 1000))
        try await first.commit()
        let reading = try #require(await disk.reading("k"))
        let second = try #require(await disk.beginWriting(for: "k", size: nil, expires: nil))
        try await second.append(Data(repeating: 2, count: 10))
        try await second.commit()
        #expect(try reading.read(at: 0, count: 1000) == Data(repeating: 1, count: 1000))
        #expect(try #require(await disk.reading("k")).count == 10)
        await disk.remove("k")
        await disk.flush()
        #expect(await disk.reading("k") == nil)
        #expect(try reading.read(at: 990, count: 10) == Data(repeating: 1, count: 10), "an unlinked file still reads")
    }

    @Test("a commit lands after the whole writes queued before it, and evicts to stay within the byte limit")
    func orderAndEviction() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try DiskStorage(directory: directory, byteLimit: 1000, entryLimit: 1000)
        await disk.write(Data(repeating: 0, count: 600), for: "a", expires: nil)
        let write = try #require(await disk.beginWriting(for: "b", size: nil, expires: nil))
        await disk.write(Data("queued".utf8), for: "b", expires: nil)
        try await write.append(Data(repeating: 3, count: 600))
        try await write.commit()
        #expect(await disk.bytes(for: "b")?.data == Data(repeating: 3, count: 600), "the commit is the latest write")
        #expect(disk.statistics.bytes <= 1000 && disk.statistics.evictions == 1)
    }

    /// A record of `bodySize` body bytes, stored in pieces (the way a streamed body is).
    func storeInPieces(_ key: String, bodySize: Int, in disk: DiskStorage) async throws {
        var record = makeRecord(key, bodySize: 0)
        record.variants[0].headers["Content-Length"] = "\(bodySize)"
        let writing = try #require(await disk.beginStoring(record, expires: nil))
        try await writing.append(Data(repeating: 7, count: bodySize))
        try await writing.commit()
    }

    @Test("a large file the storage wrote is known whole; a storage opened anew knows it once read whole; a change forgets it")
    func knownWhole() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func open() throws -> DiskStorage {
            try DiskStorage(
                directory: directory, byteLimit: 8 << 20, entryLimit: 1000, pendingByteLimit: 1 << 20,
                eviction: .s3fifo, openFileLimit: 4, settledAge: 0)
        }
        do {
            let disk = try open()
            try await storeInPieces("large", bodySize: 4000, in: disk)
            try await storeInPieces("small", bodySize: 10, in: disk)
            #expect(try #require(await disk.reading("large")).knownWhole, "written by this storage")
            #expect(try #require(await disk.reading("small")).knownWhole == false, "read whole, with its checks: not noted")
            let opened = try #require(await disk.reading("large"))
            try await storeInPieces("large", bodySize: 5000, in: disk)
            #expect(opened.knownWhole, "a file renamed over keeps its bytes: a read of it under way stays trusted")
        }
        let disk = try open()
        let reading = try #require(await disk.reading("large"))
        #expect(reading.knownWhole == false, "a storage opened anew checks it")
        reading.noteWhole()
        #expect(try #require(await disk.reading("large")).knownWhole)
        let handle = try #require(FileHandle(forUpdatingAtPath: directory.appendingPathComponent(DiskStorage.fileName(for: "large")).path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([1]))
        try handle.close()
        #expect(try #require(await disk.reading("large")).knownWhole == false, "changed since")
    }

    @Test("a file read whole is noted only once settled: a change within a clock tick could keep its times")
    func noteOnlySettled() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            try await storeInPieces("large", bodySize: 1000, in: try storage(directory, entryLimit: 100))
        }
        let disk = try DiskStorage(
            directory: directory, byteLimit: 8 << 20, entryLimit: 100, pendingByteLimit: 1 << 20,
            eviction: .s3fifo, openFileLimit: 4, settledAge: 3600)  // (the file is younger than that)
        try #require(await disk.reading("large")).noteWhole()
        #expect(try #require(await disk.reading("large")).knownWhole == false)
    }

    @Test("a record that lands is not its own victim: the others make room first (S3-FIFO's small queue would hold only it)")
    func notItsOwnVictim() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try DiskStorage(directory: directory, byteLimit: 1000, entryLimit: 1000)
        for key in ["a", "b"] {
            await disk.write(Data(repeating: 1, count: 400), for: key, expires: nil)
            await disk.flush()
            _ = await disk.bytes(for: key)  // (read: promoted to the main queue when the policy next looks)
        }
        let write = try #require(await disk.beginWriting(for: "new", size: nil, expires: nil))
        try await write.append(Data(repeating: 2, count: 700))
        try await write.commit()
        #expect(await disk.bytes(for: "new")?.data == Data(repeating: 2, count: 700), "the record just landed is kept")
        #expect(disk.statistics.bytes <= 1000 && disk.statistics.evictions >= 1)
    }

    @Test("a removal of the key, or of all, while a write in pieces is under way wins: it does not land, and what came after stays")
    func removalWins() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = try storage(directory)
        func begin(_ key: String) async throws -> any ByteWriting {
            let write = try #require(await disk.beginWriting(for: key, size: nil, expires: nil))
            try await write.append(Data("from before \(key)".utf8))
            return write
        }
        let removed = try await begin("k")
        await disk.remove("k")
        await #expect(throws: CacheStorageError.self, "it stops at once") { try await removed.append(Data("more".utf8)) }
        await #expect(throws: CacheStorageError.self) { try await removed.commit() }
        #expect(await disk.bytes(for: "k") == nil)

        let overtaken = try await begin("k")
        await disk.remove("k")
        await disk.write(Data("after".utf8), for: "k", expires: nil)
        await #expect(throws: CacheStorageError.self) { try await overtaken.commit() }
        #expect(await disk.bytes(for: "k")?.data == Data("after".utf8), "the write made after the removal stays")

        let cleared = try await begin("j")
        await disk.removeAll()  // a logout, say: nothing begun before it may land after it
        await #expect(throws: CacheStorageError.self) { try await cleared.commit() }
        #expect(await disk.bytes(for: "j") == nil && disk.statistics.writeFailures == 0)

        let other = try await begin("m")
        await disk.remove("another")
        try await other.commit()
        #expect(await disk.bytes(for: "m")?.data == Data("from before m".utf8), "another key's removal does not stop it")
        await disk.flush()
        #expect(cacheFiles(in: directory) == [DiskStorage.fileName(for: "m")], "no temporary file left")
    }
}

/// Issue #53, "also": a disk write of a streamed body blocks a thread of its own, never one of
/// Swift concurrency's pool.
@Suite("Disk writes off the cooperative pool")
struct FileWritesTests {
    @Test("a write runs as a Dispatch work item, not on a task's thread; a DiskStorage write in pieces through it lands")
    func writesOffThePool() async throws {
        // (Run as a Dispatch work item, not as part of a task: no task is current there.)
        #expect(try await FileWrites.run { withUnsafeCurrentTask { $0 != nil } } == false)
        #expect(withUnsafeCurrentTask { $0 != nil })
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try DiskStorage(directory: directory, entryLimit: 1024)
        let writing = try #require(await storage.beginWriting(for: "k", size: 3 << 20, expires: nil))
        for _ in 0..<3 { try await writing.append(Data(repeating: 1, count: 1 << 20)) }
        try await writing.commit()
        #expect(await storage.reading("k")?.count == 3 << 20)
    }
}
