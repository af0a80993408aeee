import Foundation
import Testing

@testable import Recall

/// The writer URLSessionTransport feeds a streamed body through (issue #54): a producer that
/// cannot wait keeps at most the memory limit in the body, the rest in a temporary file, and the
/// reader gets every byte in order, then the end.
@Suite("SpillingWriter: a body fed by a producer that cannot wait, in bounded memory", .timeLimit(.minutes(1)))
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
        let reading = Task {
            var read = Data(), pieces = 0
            for try await piece in body {
                read.append(piece)
                pieces += 1
                if pieces.isMultiple(of: 5) { try await Task.sleep(for: .milliseconds(1)) }  // (behind, now and then)
            }
            return read
        }
        for (index, chunk) in chunks.enumerated() {
            #expect(spilling.yield(chunk))
            if index.isMultiple(of: 8) { await Task.yield() }
        }
        spilling.finish()
        #expect(try await reading.value == chunks.reduce(into: Data()) { $0.append($1) })
    }

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
        var refused = false
        for _ in 0..<10_000 where !refused {
            refused = !spilling.yield(Data(count: 64 << 10))
            if !refused { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(refused)
    }
}
