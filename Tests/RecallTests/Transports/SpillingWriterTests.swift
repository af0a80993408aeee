import Foundation
import Synchronization
import RecallTesting
import Testing

@testable import Recall

/// The writer URLSessionTransport feeds a streamed body through (issue #54): a producer that
/// cannot wait keeps at most the memory limit in the body, the rest in a temporary file, and the
/// reader gets every byte in order, then the end.
/// (Two minutes: a hang guard, not a timing — under ThreadSanitizer beside the other streaming suites one test takes 50–60 s.)
@Suite("SpillingWriter: a body fed by a producer that cannot wait, in bounded memory", .timeLimit(.minutes(2)))
struct SpillingWriterTests {
    /// `count` chunks of `size` bytes, each filled with its index.
    private static func chunks(_ count: Int, size: Int) -> [Data] {
        (0..<count).map { Data(repeating: UInt8($0 % 251), count: size) }
    }

    @Test("with nobody reading, at most the limit waits in memory; then every byte arrives in order, then the end")
    func boundedThenWhole() async throws {
        let (body, writer) = ResponseBody.makeStream()
        let spilling = SpillingWriter(writer, memoryLimit: 1 << 20)
        let chunks = Self.chunks(160, size: 64 << 10)  // 10 MiB
        for chunk in chunks {
            #expect(spilling.yield(chunk))
            #expect(writer.unread <= (1 << 20) + (64 << 10), "the body holds more than its limit")
        }
        spilling.finish()
        let read = try await body.collect(upTo: 64 << 20)
        #expect(read == chunks.reduce(Data(), +))
    }

    @Test("a reader that keeps up gets the chunks straight through (nothing goes to the file)")
    func keepsUp() async throws {
        let (body, writer) = ResponseBody.makeStream()
        let spilling = SpillingWriter(writer, memoryLimit: 1 << 20)
        let chunks = Self.chunks(64, size: 16 << 10)
        let reading = Task { try await body.collect(upTo: 64 << 20) }
        for chunk in chunks { #expect(spilling.yield(chunk)) }
        spilling.finish()
        #expect(try await reading.value == chunks.reduce(Data(), +))
    }

    @Test("a reader that falls behind and catches up again and again gets every byte in order, from the body and from the file")
    func behindAndCaughtUp() async throws {
        let (body, writer) = ResponseBody.makeStream()
        let spilling = SpillingWriter(writer, memoryLimit: 64 << 10)
        let chunks = Self.chunks(2_000, size: 16 << 10)  // 31 MiB in libcurl's chunks
        // Every 100 pieces the reader waits until the writer is 16 pieces (256 KiB, past the memory
        // limit) ahead of it, or done: behind, then catching up, again and again — by count, not by clock.
        let written = Atomic<Int>(0)
        let reading = Task {
            var read = Data(), pieces = 0
            for try await piece in body {
                read.append(piece)
                pieces += 1
                if pieces.isMultiple(of: 100) {
                    let ahead = min(pieces + 16, chunks.count)
                    try await waitUntil("the writer is ahead of the reader") { written.load(ordering: .acquiring) >= ahead }
                }
            }
            return read
        }
        for (index, chunk) in chunks.enumerated() {
            #expect(spilling.yield(chunk))
            written.store(index + 1, ordering: .releasing)
            if index.isMultiple(of: 8) { await Task.yield() }
        }
        spilling.finish()
        #expect(try await reading.value == chunks.reduce(into: Data()) { $0.append($1) })
    }

    @Test(
        "a file that cannot be made or written (a full disk): the chunks wait in memory instead, and every byte arrives in order",
        arguments: ["no file", "a file that refuses writes"])
    func fileFails(_ failure: String) async throws {
        let (body, writer) = ResponseBody.makeStream()
        let makeFile: @Sendable () -> Int32
        if failure == "no file" {
            makeFile = { -1 }
        } else {
            makeFile = { open("/dev/null", O_RDONLY) }  // (read only: every write fails)
        }
        let spilling = SpillingWriter(writer, memoryLimit: 256 << 10, makeFile: makeFile)
        let chunks = Self.chunks(64, size: 64 << 10)  // 4 MiB, nobody reading
        for chunk in chunks { #expect(spilling.yield(chunk), "the producer is told to go on") }
        spilling.finish()
        #expect(try await body.collect(upTo: 64 << 20) == chunks.reduce(into: Data()) { $0.append($1) })
    }

    #if os(Linux)
        @Test("a file that fails after some chunks went there: those come first, then the ones held in memory")
        func fileFailsHalfWay() async throws {
            let (body, writer) = ResponseBody.makeStream()
            // A file that stops taking writes half way (as a disk that fills up).
            let makeFile: @Sendable () -> Int32 = {
                var template = Array((NSTemporaryDirectory() + "/recall-spill-test-XXXXXX").utf8CString)
                let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
                template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
                return descriptor
            }
            let limited = LimitedFile(makeFile: makeFile)
            let spilling = SpillingWriter(writer, memoryLimit: 256 << 10, makeFile: limited.make)
            let chunks = Self.chunks(64, size: 64 << 10)
            for (index, chunk) in chunks.enumerated() {
                #expect(spilling.yield(chunk))
                if index == 30 { limited.fill() }  // (the disk is full from here on)
            }
            spilling.finish()
            #expect(try await body.collect(upTo: 64 << 20) == chunks.reduce(into: Data()) { $0.append($1) })
        }
    #endif

    @Test("an error after the chunks reaches the reader after them, also from the file")
    func errorAfterTheFile() async throws {
        let (body, writer) = ResponseBody.makeStream()
        let spilling = SpillingWriter(writer, memoryLimit: 256 << 10)
        let chunks = Self.chunks(32, size: 64 << 10)
        for chunk in chunks { spilling.yield(chunk) }
        spilling.finish(throwing: TransportError(.connectionLost, url: nil, message: "cut"))
        var received = Data()
        await #expect(throws: TransportError.self) {
            for try await piece in body { received += piece }
        }
        #expect(received == chunks.reduce(Data(), +))
    }

    @Test("when the reader leaves, the producer is told to stop")
    func readerLeaves() async throws {
        let (body, writer) = ResponseBody.makeStream()
        let spilling = SpillingWriter(writer, memoryLimit: 256 << 10)
        for chunk in Self.chunks(16, size: 64 << 10) { spilling.yield(chunk) }
        body.discard()
        // The task feeding the body from the file learns it at its next write; a chunk after that is refused.
        try await waitUntil("a chunk is refused") { !spilling.yield(Data(count: 64 << 10)) }
    }
}

#if os(Linux)
    /// A spill file that stops taking writes when told to (its descriptor swapped for a read-only one,
    /// as a disk that filled up: writes fail, what was written stays readable).
    private final class LimitedFile: Sendable {
        private let makeFile: @Sendable () -> Int32
        private let descriptor = Locked<Int32>(-1)

        init(makeFile: @escaping @Sendable () -> Int32) {
            self.makeFile = makeFile
        }

        /// The file, made on the first call.
        var make: @Sendable () -> Int32 {
            { [self] in
                descriptor.withLock { descriptor in
                    if descriptor < 0 { descriptor = makeFile() }
                    return descriptor
                }
            }
        }

        /// From now on writes fail: the descriptor is reopened read-only in place (`dup2`).
        func fill() {
            descriptor.withLock { descriptor in
                guard descriptor >= 0 else { return }
                let path = "/proc/self/fd/\(descriptor)"
                let readOnly = open(path, O_RDONLY)
                guard readOnly >= 0 else { return }
                dup2(readOnly, descriptor)
                close(readOnly)
            }
        }
    }
#endif
