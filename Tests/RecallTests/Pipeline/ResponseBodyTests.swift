import Foundation
import Recall
import Testing

@Suite("ResponseBody: whole or streamed, read once, checked against its length")
struct ResponseBodyTests {
    @Test("a whole body: its bytes at hand, read any number of times, collected within a limit")
    func whole() async throws {
        let body = ResponseBody(Data("hello".utf8))
        #expect(body.bytes == Data("hello".utf8) && !body.isStreamed && body.expectedLength == 5)
        for _ in 0..<2 {
            var chunks: [Data] = []
            for try await chunk in body { chunks.append(chunk) }
            #expect(chunks == [Data("hello".utf8)])
        }
        #expect(try await body.collect(upTo: 5) == Data("hello".utf8))
        await #expect(throws: ResponseBodyError.tooLarge(limit: 4)) { try await body.collect(upTo: 4) }
        var empty: [Data] = []
        for try await chunk in ResponseBody.empty { empty.append(chunk) }
        #expect(empty.isEmpty)
    }

    @Test("a streamed body gives its chunks in order, ends complete at its Content-Length, and is read once")
    func streamed() async throws {
        let (body, writer) = ResponseBody.makeStream(expectedLength: 6)
        #expect(body.isStreamed && body.bytes == nil && body.expectedLength == 6)
        #expect(writer.yield(Data("abc".utf8)))
        let reader = Task { try await body.collect(upTo: 100) }
        try await writer.write(Data("def".utf8))
        writer.finish()
        #expect(try await reader.value == Data("abcdef".utf8))
        await #expect(throws: ResponseBodyError.consumed) { try await body.collect(upTo: 100) }
    }

    @Test("a body that ends short of its Content-Length is a lost connection; one that goes past it an error")
    func lengthChecked() async throws {
        let (short, shortWriter) = ResponseBody.makeStream(expectedLength: 10)
        shortWriter.yield(Data(count: 4))
        shortWriter.finish()
        let lost = await #expect(throws: TransportError.self) { try await short.collect(upTo: 100) }
        #expect(lost?.code == .connectionLost && lost?.message.contains("4 of its 10") == true)

        let (long, longWriter) = ResponseBody.makeStream(expectedLength: 3)
        #expect(!longWriter.yield(Data(count: 4)))
        longWriter.finish()
        let over = await #expect(throws: TransportError.self) { try await long.collect(upTo: 100) }
        #expect(over?.code == .other)

        let (failed, failedWriter) = ResponseBody.makeStream()
        failedWriter.yield(Data(count: 2))
        failedWriter.finish(throwing: TransportError(.connectionLost))
        var received = 0
        let error = await #expect(throws: TransportError.self) { for try await chunk in failed { received += chunk.count } }
        #expect(received == 2 && error?.code == .connectionLost)
    }

    @Test("collecting past the limit fails at once by the declared length, or when the bytes pass it, and stops the producer")
    func collectLimit() async throws {
        let (declared, declaredWriter) = ResponseBody.makeStream(expectedLength: 1000)
        let stopped = Flag()
        declaredWriter.onTermination { stopped.set() }
        await #expect(throws: ResponseBodyError.tooLarge(limit: 10)) { try await declared.collect(upTo: 10) }
        #expect(stopped.isSet && !declaredWriter.yield(Data(count: 1)))

        let (counted, countedWriter) = ResponseBody.makeStream()
        let countedStopped = Flag()
        countedWriter.onTermination { countedStopped.set() }
        countedWriter.yield(Data(count: 8))
        countedWriter.yield(Data(count: 8))
        await #expect(throws: ResponseBodyError.tooLarge(limit: 10)) { try await counted.collect(upTo: 10) }
        #expect(countedStopped.isSet)
    }

    @Test("a body dropped unread, or a reader cancelled while it waits, stops the producer; a body read to its end does not")
    func termination() async throws {
        let dropped = Flag()
        do {
            let (body, writer) = ResponseBody.makeStream()
            writer.onTermination { dropped.set() }
            writer.yield(Data(count: 1))
            _ = body
        }
        #expect(dropped.isSet)

        let (waiting, writer) = ResponseBody.makeStream()
        let cancelled = Flag()
        writer.onTermination { cancelled.set() }
        let reader = Task { try await waiting.collect(upTo: 100) }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        #expect(cancelled.isSet)
        await #expect(throws: CancellationError.self) { try await writer.write(Data(count: 1)) }

        let finished = Flag()
        do {
            let (body, writer) = ResponseBody.makeStream()
            writer.onTermination { finished.set() }
            writer.yield(Data(count: 3))
            writer.finish()
            #expect(try await body.collect(upTo: 3).count == 3)
        }
        #expect(!finished.isSet)
    }

    @Test("write waits for the reader past the high-water mark and keeps the order")
    func paced() async throws {
        let (body, writer) = ResponseBody.makeStream(highWater: 4)
        let producer = Task {
            for index in 0..<100 { try await writer.write(Data([UInt8(index)])) }
            writer.finish()
        }
        let bytes = try await body.collect(upTo: 1000)
        try await producer.value
        #expect(bytes == Data((0..<100).map(UInt8.init)))
    }

    @Test("declaredLength: the Content-Length a body must reach, only where the body is the representation's bytes")
    func declaredLength() {
        let length: HeaderFields = ["Content-Length": "12"]
        #expect(ResponseBody.declaredLength(status: 200, headers: length, requestMethod: "GET") == 12)
        #expect(ResponseBody.declaredLength(status: 200, headers: length, requestMethod: "HEAD") == nil)
        #expect(ResponseBody.declaredLength(status: 304, headers: length, requestMethod: "GET") == nil)
        #expect(ResponseBody.declaredLength(status: 204, headers: length, requestMethod: "GET") == nil)
        #expect(ResponseBody.declaredLength(status: 200, headers: ["Content-Length": "12", "Content-Encoding": "gzip"], requestMethod: "GET") == nil)
        #expect(ResponseBody.declaredLength(status: 200, headers: ["Content-Length": "12", "Content-Encoding": "identity"], requestMethod: "GET") == 12)
        // (A list of one value is that length, RFC 9110 §8.6; differing values, a sign or 19 digits are none.)
        #expect(ResponseBody.declaredLength(status: 200, headers: ["Content-Length": "12, 12"], requestMethod: "GET") == 12)
        #expect(ResponseBody.declaredLength(status: 200, headers: ["Content-Length": "12, 13"], requestMethod: "GET") == nil)
        #expect(ResponseBody.declaredLength(status: 200, headers: ["Content-Length": "+12"], requestMethod: "GET") == nil)
        #expect(ResponseBody.declaredLength(status: 200, headers: ["Content-Length": "9223372036854775807"], requestMethod: "GET") == nil)
        #expect(ResponseBody.declaredLength(status: 200, headers: ["Content-Length": "-1"], requestMethod: "GET") == nil)
        #expect(ResponseBody.declaredLength(status: 200, headers: [:], requestMethod: "GET") == nil)
    }
}

/// A flag set from any thread.
final class Flag: Sendable {
    private let state = Locked(false)
    func set() { state.withLock { $0 = true } }
    var isSet: Bool { state.withLock { $0 } }
}
