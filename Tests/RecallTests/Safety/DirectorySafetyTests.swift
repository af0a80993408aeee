import Foundation
@testable import Recall
import Testing
#if canImport(Glibc)
    import Glibc
#endif

/// Issue #10, points 7–9: the cache directory belongs to the user who named it, and the read
/// path trusts nothing it finds there. Real directories, real links, pipes and owners.
@Suite("Safety: the cache directory and what is found in it", .timeLimit(.minutes(1)))
struct DirectorySafetyTests {
    static func mode(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_mode & 0o7777) : -1
    }

    /// A sparse 1 GiB file next to `directory` (outside the cache), for links to point at.
    static func hugeFile(beside directory: URL) throws -> String {
        let path = directory.path + "-huge"
        try #require(FileManager.default.createFile(atPath: path, contents: nil))
        try #require(truncate(path, 1 << 30) == 0)
        return path
    }

    static func refusal(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    // MARK: 7. No takeover

    @Test("a non-empty directory that is not a Recall cache is refused, and nothing in it is touched")
    func foreignDirectory() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        let files = ["notes.txt": "mine", "draft.tmp-1": "half", "photo.rce.tmp-2-3": "also mine"]
        for (name, text) in files { try Data(text.utf8).write(to: directory.appendingPathComponent(name)) }
        let message = Self.refusal { _ = try DiskStorage(directory: directory) }
        #expect(message?.contains("is not empty and is not a Recall cache") == true, "\(message ?? "accepted")")
        #expect(message?.contains("notes.txt") == true || message?.contains("draft.tmp-1") == true || message?.contains("photo.rce.tmp-2-3") == true)
        #expect(Self.mode(directory.path) == 0o755)  // not chmodded
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory.path)) == Set(files.keys))  // no .lock, nothing deleted
    }

    @Test("an empty directory is adopted; a first-edition cache (only its own file names) is adopted too")
    func adoption() async throws {
        let empty = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: empty) }
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        _ = try DiskStorage(directory: empty)
        #expect(FileManager.default.fileExists(atPath: empty.appendingPathComponent(".recall-cache").path))

        let legacy = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: legacy) }
        try FileManager.default.createDirectory(at: legacy, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data().write(to: legacy.appendingPathComponent(".lock"))
        try Data("old format".utf8).write(to: legacy.appendingPathComponent(DiskStorage.fileName(for: "https://x.test/")))
        let storage = try DiskStorage(directory: legacy)
        #expect(await storage.record(for: "https://x.test/") == nil)  // an old record is a miss, and removed
        #expect(storage.statistics.count == 0)
    }

    @Test("an empty path is refused by the command line, never read as the current directory")
    func emptyPath() async throws {
        let result = try await CommandLineTests.run(["get", "--cache-dir", "", "http://127.0.0.1:9/"])
        #expect(result.status == 2)
        #expect(result.error.contains("--cache-dir needs a directory path"))
    }

    // MARK: 8. No adoption of a directory another user controls

    @Test("a directory writable by others (mode 0777, like a shared /tmp path) is refused with the fix named")
    func worldWritable() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o777)
        let message = Self.refusal { _ = try DiskStorage(directory: directory) }
        #expect(message?.contains("writable by every user") == true, "\(message ?? "accepted")")
        #expect(message?.contains("chmod go-w") == true)
        chmod(directory.path, 0o775)
        #expect(Self.refusal { _ = try DiskStorage(directory: directory) }?.contains("writable by its group") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test(
        "a directory owned by another user is refused (needs root to make one; skipped otherwise)",
        .enabled(if: geteuid() == 0, "creating a directory owned by another user needs root"))
    func otherOwner() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #expect(chown(directory.path, 65_534, 65_534) == 0)  // nobody
        let message = Self.refusal { _ = try DiskStorage(directory: directory) }
        #expect(message?.contains("belongs to user 65534, not to you") == true, "\(message ?? "accepted")")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("a planted .lock symbolic link is refused; nothing is created where it points")
    func lockSymlink() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do { _ = try DiskStorage(directory: directory) }
        let elsewhere = temporaryDirectory().path + "-planted"
        defer { unlink(elsewhere) }
        try FileManager.default.removeItem(atPath: directory.appendingPathComponent(".lock").path)
        #expect(symlink(elsewhere, directory.appendingPathComponent(".lock").path) == 0)
        let message = Self.refusal { _ = try DiskStorage(directory: directory) }
        #expect(message?.contains("symbolic link") == true, "\(message ?? "accepted")")
        #expect(!FileManager.default.fileExists(atPath: elsewhere))
    }

    // MARK: 9. The read path trusts nothing it finds

    @Test("a FIFO at an entry's name is a miss at once, not a hang")
    func fifo() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try DiskStorage(directory: directory)
        await storage.store(makeRecord("https://x.test/fifo"))
        await storage.flush()
        let path = directory.appendingPathComponent(DiskStorage.fileName(for: "https://x.test/fifo")).path
        unlink(path)
        #expect(mkfifo(path, 0o600) == 0)
        #expect(await storage.record(for: "https://x.test/fifo") == nil)
        #expect(storage.statistics.corruptRemoved == 1)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("a file whose size is not the one indexed (replaced behind the storage's back) is read whole, larger or smaller")
    func sizeDiffersFromIndex() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try DiskStorage(directory: directory)
        let key = "https://x.test/resized"
        await storage.store(makeRecord(key, bodySize: 5_000))
        await storage.flush()
        let path = directory.appendingPathComponent(DiskStorage.fileName(for: key)).path
        for size in [9_000, 100] {  // one read of the indexed size + 1 falls short of the larger file and overshoots the smaller
            let replacement = makeRecord(key, bodySize: size)
            try replacement.encoded().write(to: URL(fileURLWithPath: path + ".new"))
            #expect(rename(path + ".new", path) == 0)
            #expect(await storage.record(for: key) == replacement)
        }
        #expect(storage.statistics.corruptRemoved == 0)
    }

    @Test("a symbolic link at an entry's name is never followed, even to a valid record of that key")
    func symlinkNotFollowed() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outside = directory.path + "-outside.rce"
        defer { unlink(outside) }
        let storage = try DiskStorage(directory: directory)
        await storage.store(makeRecord("https://x.test/link"))
        await storage.flush()
        let path = directory.appendingPathComponent(DiskStorage.fileName(for: "https://x.test/link")).path
        #expect(rename(path, outside) == 0)  // the valid record now lives outside, reachable only through the link
        #expect(symlink(outside, path) == 0)
        #expect(await storage.record(for: "https://x.test/link") == nil)  // O_NOFOLLOW: not followed, not read
        #expect(storage.statistics.corruptRemoved == 1)
        #expect(FileManager.default.fileExists(atPath: outside))  // the link is removed, its target is not
    }

    @Test("the directory's path swapped for a link to another directory while open: reads and writes stay in the one opened")
    func pathSwappedWhileOpen() async throws {
        let directory = temporaryDirectory()
        let moved = URL(fileURLWithPath: directory.path + "-moved"), elsewhere = URL(fileURLWithPath: directory.path + "-elsewhere")
        defer { for url in [directory, moved, elsewhere] { try? FileManager.default.removeItem(at: url) } }
        let storage = try DiskStorage(directory: directory)
        let before = makeRecord("https://x.test/before"), after = makeRecord("https://x.test/after")
        await storage.store(before)
        await storage.flush()
        // The cache directory is moved away and its path made a link to a directory of someone else's choosing.
        #expect(rename(directory.path, moved.path) == 0)
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        #expect(symlink(elsewhere.path, directory.path) == 0)
        await storage.store(after)
        await storage.flush()
        #expect(await storage.record(for: "https://x.test/before") == before)  // read from the directory opened
        #expect(await storage.record(for: "https://x.test/after") == after)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)  // nothing written through the link
        let kept = try FileManager.default.contentsOfDirectory(atPath: moved.path)
        for key in ["https://x.test/before", "https://x.test/after"] { #expect(kept.contains(DiskStorage.fileName(for: key))) }
        #expect(storage.statistics.corruptRemoved == 0)
    }

    @Test("the directory deleted while open: reads miss and writes fail (counted), nothing crashes or is written elsewhere")
    func directoryDeletedWhileOpen() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try DiskStorage(directory: directory)
        await storage.store(makeRecord("https://x.test/before"))
        await storage.flush()
        try FileManager.default.removeItem(at: directory)
        #expect(await storage.record(for: "https://x.test/before") == nil)
        await storage.store(makeRecord("https://x.test/after"))
        await storage.flush()
        #expect(await storage.record(for: "https://x.test/after") == nil)
        #expect(storage.statistics.writeFailures == 1)
        #expect(!FileManager.default.fileExists(atPath: directory.path))  // not recreated behind the caller's back
    }

    @Test("at open, links, pipes and oversized files under entry names are removed, not indexed")
    func openIgnoresNonRecords() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let huge = try Self.hugeFile(beside: directory)
        defer { unlink(huge) }
        do { _ = try DiskStorage(directory: directory, entryLimit: 1 << 20) }
        let link = directory.appendingPathComponent(DiskStorage.fileName(for: "a")).path
        let pipe = directory.appendingPathComponent(DiskStorage.fileName(for: "b")).path
        let big = directory.appendingPathComponent(DiskStorage.fileName(for: "c")).path
        #expect(symlink(huge, link) == 0)
        #expect(mkfifo(pipe, 0o600) == 0)
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        #expect(truncate(big, 2 << 20) == 0)
        let storage = try DiskStorage(directory: directory, entryLimit: 1 << 20)
        #expect(storage.statistics.bytes == 0)
        #expect(storage.statistics.count == 0)
        #expect(storage.statistics.corruptRemoved == 3)
        for path in [link, pipe, big] { #expect(!FileManager.default.fileExists(atPath: path)) }
        #expect(FileManager.default.fileExists(atPath: huge))  // the link's target is not touched
    }

    @Test(
        "a crafted record with a valid checksum but an impossible status, time or variant count is a miss, not a trap",
        arguments: ["status", "nan", "infinity", "far-future", "variants", "valid"])
    func craftedRecord(field: String) async throws {
        var payload = CacheRecordCodec.Writer()
        let key = "https://x.test/crafted"
        payload.string(key)
        // One more well-formed variant than a record may hold, or one.
        let variants = field == "variants" ? CacheRecordCodec.maxVariants + 1 : 1
        payload.uint64(UInt64(variants))
        let time: Double =
            switch field {
            case "nan": .nan
            case "infinity": .infinity
            case "far-future": 1e300
            default: 1_700_000_000
            }
        for _ in 0..<variants {
            payload.uint64(field == "status" ? UInt64.max : 200)
            payload.uint64(time.bitPattern)
            payload.uint64(time.bitPattern)
            payload.fields([HeaderFields.Field(name: "Cache-Control", value: "max-age=60")])
            payload.fields([])
            payload.string("")
            payload.bytes(Data("body".utf8))
        }
        var file = Data(CacheRecordCodec.magic)
        file.append(CacheRecordCodec.version)
        var header = CacheRecordCodec.Writer()
        header.uint64(UInt64(payload.data.count))
        header.uint64(CacheRecordCodec.checksum(payload.data))
        file.append(header.data)
        file.append(payload.data)
        guard field != "valid" else {
            // The control: the same bytes with plausible values decode.
            #expect(try CacheRecordCodec.decode(file).variants.first?.status == 200)
            return
        }
        #expect(throws: CacheStorageError.self) { try CacheRecordCodec.decode(file) }

        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do { _ = try DiskStorage(directory: directory) }
        try file.write(to: directory.appendingPathComponent(DiskStorage.fileName(for: key)))
        let storage = try DiskStorage(directory: directory)
        #expect(await storage.record(for: key) == nil)
        #expect(storage.statistics.corruptRemoved == 1)
    }
}
