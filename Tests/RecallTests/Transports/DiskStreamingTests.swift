import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
@testable import Recall
import RecallTesting
import Testing

/// Bodies larger than a whole read go to a `DiskStorage` in pieces as they stream, and are
/// served from the file in pieces (issue #38, points 2 and 3), over the loopback origin.
/// (Two minutes: a hang guard, not a timing — under ThreadSanitizer beside the other streaming suites one test takes 50–60 s.)
@Suite("Streaming bodies into and out of a DiskStorage", .timeLimit(.minutes(2)))
struct DiskStreamingTests {
    static let size = 4 << 20
    /// The body of the tests of a body read back from its record: over the whole-read limit and
    /// over what a caller's stream holds unread (1 MiB), and small enough for ThreadSanitizer's runs.
    static let followedSize = 2 << 20

    /// The files of `directory` this process holds open, other than the storage's lock and the
    /// directory itself (read from /proc/self/fd).
    func openFiles(in directory: URL) -> [String] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
            .filter { $0.hasPrefix(directory.path + "/") && !$0.hasSuffix("/.lock") }
    }

    /// Changes the byte at `offset` of the one cache file in `directory`, then sets the file's
    /// modification time to `modified` — or, nil, back to what it was (a crash's torn write leaves
    /// no trace in it).
    func flipByte(at offset: UInt64, in directory: URL, modified: timespec?) throws {
        let file = directory.appendingPathComponent(try #require(cacheFiles(in: directory).first)).path
        let before = try #require(try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date)
        let handle = try #require(FileHandle(forUpdatingAtPath: file))
        defer { try? handle.close() }
        try handle.seek(toOffset: offset)
        let byte = try #require(try handle.read(upToCount: 1))
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: Data([byte[0] ^ 0xFF]))
        let seconds = before.timeIntervalSince1970.rounded(.down)
        let time = modified ?? timespec(tv_sec: Int(seconds), tv_nsec: Int((before.timeIntervalSince1970 - seconds) * 1e9))
        var times = [time, time]
        #expect(futimens(handle.fileDescriptor, &times) == 0)
    }

    func disk(_ directory: URL) throws -> DiskStorage {
        try DiskStorage(directory: directory, byteLimit: 64 << 20, entryLimit: 256 << 10)
    }

    /// A pipeline over `URLSessionTransport` with a cache on ``disk(_:)`` in `directory`.
    func cached(in directory: URL) throws -> (storage: DiskStorage, cache: HTTPCache, pipeline: Pipeline) {
        let storage = try disk(directory)
        let cache = HTTPCache(storage: storage)
        return (storage, cache, Pipeline(transport: URLSessionTransport(), hooks: [cache]))
    }

    @Test("a body over the whole-read limit is stored as it streams and served from the file: whole, a range, after a restart")
    func storedInPieces() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("disk-stream")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = server.url(path, ["stream": "\(Self.size)", "cc": "max-age=600"])
        do {
            let (storage, cache, pipeline) = try cached(in: directory)
            let first = try await pipeline.send(URLRequest(url: url)).collected()
            #expect(first.source == .network && first.body.bytes == StreamingTests.expected(Self.size))
            #expect(cache.statistics.stores == 1 && storage.statistics.count == 1)
            #expect(cacheFiles(in: directory).count == 1 && storage.statistics.bytes > Self.size, "one file, the body in it: \(cacheFiles(in: directory))")
            let hit = try await pipeline.send(URLRequest(url: url))
            #expect(hit.source == .cache && hit.body.isStreamed && hit.body.expectedLength == Self.size)
            #expect(try await hit.body.collect(upTo: 8 << 20) == StreamingTests.expected(Self.size))
            var range = URLRequest(url: url)
            range.setValue("bytes=1000000-1000099", forHTTPHeaderField: "Range")
            let piece = try await pipeline.send(range).collected()
            #expect(piece.status == 206 && piece.body.bytes == StreamingTests.expected(1_000_100).suffix(100))
            #expect(try await server.hits(path) == 1)
        }
        #expect(openFiles(in: directory).isEmpty, "the hits closed their files: \(openFiles(in: directory))")
        let reopened = try disk(directory)
        let again = try await Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache(storage: reopened)]).send(URLRequest(url: url))
        let bytes = try await again.body.collect(upTo: 8 << 20)
        #expect(again.source == .cache && bytes == StreamingTests.expected(Self.size))
    }

    @Test("a body of unknown length kept in memory until it outgrows the whole-read limit, then written in pieces: stored, served from the file")
    func unknownLengthSpills() async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("disk-unknown")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storage, cache, pipeline) = try cached(in: directory)
        let url = server.url(path, ["stream": "\(Self.size)", "length": "omit", "cc": "max-age=600"])
        let first = try await pipeline.send(URLRequest(url: url))
        #expect(first.body.expectedLength == nil, "no Content-Length")
        #expect(try await first.body.collect(upTo: 8 << 20) == StreamingTests.expected(Self.size))
        #expect(cache.statistics.stores == 1 && cache.statistics.notStored.isEmpty)
        #expect(storage.statistics.bytes > Self.size && cacheFiles(in: directory).count == 1, "one file, written in pieces")
        let hit = try await pipeline.send(URLRequest(url: url))
        #expect(hit.source == .cache && hit.body.expectedLength == Self.size)
        #expect(try await hit.body.collect(upTo: 8 << 20) == StreamingTests.expected(Self.size))
        #expect(try await server.hits(path) == 1)

        // Over a storage that does not store in pieces, it is too large: passed on, not kept.
        let memory = HTTPCache(storage: MemoryStorage(byteLimit: 1 << 20))
        let other = server.url(OriginServer.uniquePath("memory-unknown"), ["stream": "\(Self.size)", "length": "omit", "cc": "max-age=600"])
        let passed = try await Pipeline(transport: URLSessionTransport(), hooks: [memory]).send(URLRequest(url: other)).collected()
        #expect(passed.body.bytes == StreamingTests.expected(Self.size) && memory.statistics.notStored == [.tooLarge: 1])
    }

    @Test("a body cut short, or left halfway by its reader, leaves no file, no open file, no running task; the next request goes to the origin")
    func nothingHalfWritten() async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storage, cache, pipeline) = try cached(in: directory)
        let cut = server.url(OriginServer.uniquePath("disk-cut"), ["stream": "\(Self.size)", "truncate": "1", "cc": "max-age=600"])
        let census = TaskCensus()
        try await TaskCensus.$current.withValue(census) {
            await #expect(throws: TransportError.self) { try await pipeline.send(URLRequest(url: cut)).collected() }
            let gate = UUID().uuidString
            let left = server.url(OriginServer.uniquePath("disk-left"), ["stream": "\(Self.size)", "gate": gate, "cc": "max-age=600"])
            do {
                let response = try await pipeline.send(URLRequest(url: left))
                var iterator = response.body.makeAsyncIterator()
                _ = try await iterator.next()
                #expect(census.live > 0, "the tee's tasks run while the body streams")
                response.body.discard()
            }
            try await server.open(gate: gate)
        }
        try await waitUntil("both bodies are given up") { cache.statistics.notStored[.incomplete] == 2 }
        try await waitUntil("no task the requests started is left running") { census.live == 0 }
        await storage.flush()
        #expect(cacheFiles(in: directory).isEmpty, "no record, no temporary file: \(cacheFiles(in: directory))")
        #expect(openFiles(in: directory).isEmpty, "no file left open: \(openFiles(in: directory))")
        #expect(cache.statistics.stores == 0)
    }

    @Test(
        "a caller that has read nothing holds up neither the download nor the store: it reads the body back from the record, and a second request is a hit",
        arguments: [false, true])
    func unreadBodyIsStored(tiered: Bool) async throws {
        let server = try await OriginServer.shared.value
        let path = OriginServer.uniquePath("disk-unread")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // (Over a TieredStorage the record is its lower tier's, read back the same way.)
        let storage: any CacheStorage = tiered ? TieredStorage(memory: MemoryStorage(byteLimit: 1 << 20), lower: try disk(directory)) : try disk(directory)
        let cache = HTTPCache(storage: storage)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let url = server.url(path, ["stream": "\(Self.followedSize)", "cc": "max-age=600"])
        let census = TaskCensus()
        try await TaskCensus.$current.withValue(census) {
            let first = try await pipeline.send(URLRequest(url: url))
            // Nothing of the body read yet: the whole of it is appended to the record, and stored.
            try await waitUntil("the unread body is stored") { cache.statistics.stores == 1 }
            let second = try await pipeline.send(URLRequest(url: url))
            #expect(second.source == .cache)
            #expect(try await second.body.collect(upTo: 8 << 20) == StreamingTests.expected(Self.followedSize))
            #expect(try await first.body.collect(upTo: 8 << 20) == StreamingTests.expected(Self.followedSize), "every byte, read back after the store")
        }
        #expect(try await server.hits(path) == 1)
        try await waitUntil("no task the requests started is left running") { census.live == 0 }
        #expect(openFiles(in: directory).isEmpty, "the record read back was closed: \(openFiles(in: directory))")
    }

    @Test("a record refused while its body streams (its key removed): the caller still gets every byte, in order, and nothing is stored")
    func refusedWhileRead() async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storage, cache, pipeline) = try cached(in: directory)
        let gate = UUID().uuidString
        let url = server.url(OriginServer.uniquePath("disk-refused"), ["stream": "\(Self.followedSize)", "gate": gate, "cc": "max-age=600"])
        let response = try await pipeline.send(URLRequest(url: url))
        var iterator = response.body.makeAsyncIterator()
        var received = try #require(try await iterator.next())
        await storage.removeAll()  // (a write under way when its key is removed does not land: it refuses the rest)
        try await server.open(gate: gate)
        while let chunk = try await iterator.next() { received.append(chunk) }
        #expect(received == StreamingTests.expected(Self.followedSize))
        try await waitUntil("the refused record counts as too large") { cache.statistics.notStored[.tooLarge] == 1 }
        #expect(cache.statistics.stores == 0)
        await storage.flush()
        #expect(cacheFiles(in: directory).isEmpty, "no record, no temporary file: \(cacheFiles(in: directory))")
    }

    @Test("a body larger than the storage's byte limit streams to the caller and is not stored: refused at its head")
    func overTheByteLimit() async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try DiskStorage(directory: directory, byteLimit: 1 << 20, entryLimit: 256 << 10)
        let cache = HTTPCache(storage: storage)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache])
        let gate = UUID().uuidString
        let url = server.url(OriginServer.uniquePath("disk-over"), ["stream": "\(Self.size)", "gate": gate, "cc": "max-age=600"])
        let streaming = try await pipeline.send(URLRequest(url: url))
        #expect(cache.statistics.notStored == [.tooLarge: 1] && storage.statistics.rejected == 1, "refused at the head, by its length")
        #expect(cacheFiles(in: directory).isEmpty, "not a byte written for it")
        try await server.open(gate: gate)
        let response = try await streaming.collected()
        #expect(response.body.bytes == StreamingTests.expected(Self.size))
        #expect(cache.statistics.notStored == [.tooLarge: 1] && storage.statistics.rejected == 1)
        await storage.flush()
        #expect(cacheFiles(in: directory).isEmpty)
    }

    @Test("a stored body changed on disk fails its read (never a complete answer) and is removed; a 304 keeps a stored body, copied")
    func changedAndRevalidated() async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try disk(directory)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache(storage: storage)])
        let path = OriginServer.uniquePath("disk-changed")
        let url = server.url(path, ["stream": "\(Self.size)", "cc": "max-age=600"])
        try await pipeline.send(URLRequest(url: url)).collected()
        await storage.flush()
        // Its modification time set a second back, as a write a tick after the landing would leave
        // it: file systems keep times at a tick's granularity, and within the tick the storage that
        // wrote the file would still know it whole (``CheckedFiles``; a restart checks it: below).
        try flipByte(at: 2 << 20, in: directory, modified: timespec(tv_sec: time(nil) - 1, tv_nsec: 0))
        let hit = try await pipeline.send(URLRequest(url: url))
        #expect(hit.source == .cache)
        await #expect(throws: CacheStorageError.self) { try await hit.body.collect(upTo: 8 << 20) }
        let again = try await pipeline.send(URLRequest(url: url)).collected()
        #expect(again.source == .network && again.body.bytes == StreamingTests.expected(Self.size))

        let tagged = server.url(OriginServer.uniquePath("disk-etag"), ["stream": "\(Self.size)", "cc": "max-age=0", "etag": "v1"])
        try await pipeline.send(URLRequest(url: tagged)).collected()
        let revalidated = try await pipeline.send(URLRequest(url: tagged))
        #expect(revalidated.source == .revalidated)
        #expect(try await revalidated.body.collect(upTo: 8 << 20) == StreamingTests.expected(Self.size))
        let twice = try await pipeline.send(URLRequest(url: tagged))
        #expect(twice.source == .revalidated && twice.body.expectedLength == Self.size)
        #expect(try await twice.body.collect(upTo: 8 << 20) == StreamingTests.expected(Self.size), "the copy made by the first 304")
    }

    @Test("a storage opened anew checks a stored body: a byte changed in place, its modification time kept (a torn write), fails the read")
    func checkedOnceAfterRestart() async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = OriginServer.uniquePath("disk-restart")
        let url = server.url(path, ["stream": "\(Self.size)", "cc": "max-age=600"])
        do {
            let storage = try disk(directory)
            try await Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache(storage: storage)]).send(URLRequest(url: url)).collected()
            await storage.flush()
        }
        try flipByte(at: 3 << 20, in: directory, modified: nil)

        let reopened = try DiskStorage(
            directory: directory, byteLimit: 64 << 20, entryLimit: 256 << 10, pendingByteLimit: 16 << 20,
            eviction: .s3fifo, openFileLimit: 64, settledAge: 0)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache(storage: reopened)])
        let hit = try await pipeline.send(URLRequest(url: url))
        #expect(hit.source == .cache)
        await #expect(throws: CacheStorageError.self) { try await hit.body.collect(upTo: 8 << 20) }
        #expect(try await pipeline.send(URLRequest(url: url)).collected().source == .network, "the changed record was removed")
        #expect(try await pipeline.send(URLRequest(url: url)).collected().body.bytes == StreamingTests.expected(Self.size))
        #expect(try await server.hits(path) == 2)
    }

    @Test("a process killed (SIGKILL) while a body streams into the disk leaves nothing a later process serves")
    func killedMidTee() async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = UUID().uuidString
        let url = server.url(OriginServer.uniquePath("disk-killed"), ["stream": "\(Self.size)", "gate": gate, "cc": "max-age=600"])
        let (process, output) = try ChildProcess.launch("recall-test-child", ["tee", directory.path, url.absoluteString, "--hold"])
        let said = await Self.firstLine(containing: "teeing", of: output)
        #expect(said.contains("teeing"), "the child got the first bytes: \(said)")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try await server.open(gate: gate)
        let reopened = try disk(directory)
        #expect(cacheFiles(in: directory).isEmpty, "the temporary file is removed at open: \(cacheFiles(in: directory))")
        #expect(await reopened.record(for: try #require(HTTPCache(storage: reopened).key(for: URLRequest(url: url)))) == nil)
    }

    @Test("a full disk while a body streams into it: the caller still gets the whole body, nothing is stored, no file is left")
    func fullDisk() async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = server.url(OriginServer.uniquePath("disk-full"), ["stream": "\(Self.size)", "cc": "max-age=600"])
        let result = try await ChildProcess.run(
            "recall-test-child", ["tee", directory.path, url.absoluteString, "--fsize-limit", "\(1 << 20)"],
            deadline: .seconds(60))
        #expect(result.status == 0 && !result.hung, "\(result.error)")
        #expect(result.output.contains("received \(Self.size) stores 0 tooLarge 1 writeFailures 1"), "\(result.output)")
        #expect(cacheFiles(in: directory).isEmpty, "\(cacheFiles(in: directory))")
    }

    /// What `output` says up to its first line containing `word` (all of it, when the child exits first).
    static func firstLine(containing word: String, of output: Pipe) async -> String {
        let descriptor = output.fileHandleForReading.fileDescriptor
        return await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
            DispatchQueue.global().async {
                var seen = Data()
                var buffer = [UInt8](repeating: 0, count: 1_024)
                while !String(decoding: seen, as: UTF8.self).contains(word) {
                    let count = read(descriptor, &buffer, buffer.count)
                    if count < 0, errno == EINTR { continue }
                    if count <= 0 { break }
                    seen.append(contentsOf: buffer[0..<count])
                }
                done.resume(returning: String(decoding: seen, as: UTF8.self))
            }
        }
    }
}
