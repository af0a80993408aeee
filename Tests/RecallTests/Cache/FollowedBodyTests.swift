import Foundation
import RecallTesting
import Testing

@testable import Recall

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A body stored as it streams into a record that can be read back
/// (``BodyTee/followed(passing:into:readingBack:url:ended:)``), over a record of a test's own: a
/// file it appends to, held at a gate before its first append, or refusing it.
@Suite("Cache: a followed body — the first chunk before its write, every byte once", .timeLimit(.minutes(1)))
struct FollowedBodyTests {
    /// A record written into `path`: each append waits for `held` (when given) and fails when
    /// `refuses` says so for the append's number (from 0).
    private final class FileRecord: RecordReadingBack {
        let path: String
        let held: Gate?
        let refuses: @Sendable (Int) -> Bool
        private let appends = Locked(0)
        private let descriptor: Int32
        let ended = Locked<[String]>([])

        init(path: String, held: Gate? = nil, refuses: @escaping @Sendable (Int) -> Bool = { _ in false }) {
            self.path = path
            self.held = held
            self.refuses = refuses
            descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
        }

        deinit { close(descriptor) }

        func bodyBytes() -> WrittenBytes? {
            WrittenBytes(descriptor: open(path, O_RDONLY), base: 0)
        }

        func append(_ bytes: Data) async throws {
            let number = appends.withLock { count -> Int in
                defer { count += 1 }
                return count
            }
            if let held { await held.wait() }
            if refuses(number) { throw CancellationError() }
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            #expect(written == bytes.count)
        }

        func commit() async throws {}
        func abandon() async {}
    }

    /// A file path of the test's own, removed by the caller.
    private static func path() -> String {
        temporaryDirectory().path + "-followed"
    }

    /// `chunks` streamed through a followed tee into `record`, one at a time (each written once the
    /// one before was taken; the second after `second` opens, when given); the body the caller
    /// reads, and what was kept in the end.
    private static func followed(_ chunks: [Data], into record: FileRecord, second: Gate? = nil) -> (ResponseBody, Locked<String?>) {
        let (upstream, writer) = ResponseBody.makeStream(url: nil, highWater: 1)
        Task {
            for (index, chunk) in chunks.enumerated() {
                if index == 1, let second { await second.wait() }
                try await writer.write(chunk)
            }
            writer.finish()
        }
        let kept = Locked<String?>(nil)
        let body = BodyTee.followed(passing: upstream, into: record, readingBack: record.bodyBytes()!, url: nil) { outcome in
            let name: String
            switch outcome {
            case .written: name = "written"
            case .tooLarge: name = "tooLarge"
            case .incomplete: name = "incomplete"
            case .complete: name = "complete"
            }
            kept.withLock { $0 = name }
        }
        return (body, kept)
    }

    private static let chunks = (0..<4).map { Data(repeating: UInt8(0x41 + $0), count: 1000 + $0) }

    @Test("the first chunk reaches the caller while its write is still held; the rest is read back from the record, in order")
    func firstChunkBeforeItsWrite() async throws {
        let path = Self.path()
        defer { unlink(path) }
        let gate = Gate()
        let second = Gate()
        let record = FileRecord(path: path, held: gate)
        let (body, kept) = Self.followed(Self.chunks, into: record, second: second)
        var iterator = body.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first == Self.chunks[0], "handed over before any write landed")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).isEmpty, "the record has nothing yet")
        second.open()
        gate.open()
        var rest = Data()
        while let chunk = try await iterator.next() { rest.append(chunk) }
        #expect(rest == Self.chunks.dropFirst().reduce(Data(), +))
        #expect(kept.withLock { $0 } == "written")
    }

    @Test("a record that refuses the first chunk, or a later one: the caller gets every byte exactly once", arguments: [0, 2])
    func refusedOnce(at refused: Int) async throws {
        let path = Self.path()
        defer { unlink(path) }
        let record = FileRecord(path: path) { $0 == refused }
        let (body, kept) = Self.followed(Self.chunks, into: record)
        var received = Data()
        for try await chunk in body { received.append(chunk) }
        #expect(received == Self.chunks.reduce(Data(), +))
        #expect(kept.withLock { $0 } == "tooLarge")
    }
}
