import Foundation
@testable import Recall
import RecallTesting
import Testing

/// Bytes in memory read in pieces, counting the reads; the test says whether its store knows
/// them whole.
private final class MemoryReading: ByteReading {
    let bytes: Data
    private let state: Locked<(reads: Int, known: Bool, noted: Int)>

    func forget() { state.withLock { $0.known = false } }

    init(_ bytes: Data, knownWhole: Bool) {
        self.bytes = bytes
        state = Locked((0, knownWhole, 0))
    }

    var count: Int { bytes.count }
    var reads: Int { state.withLock { $0.reads } }
    var noted: Int { state.withLock { $0.noted } }
    var knownWhole: Bool { state.withLock { $0.known } }

    func read(at offset: Int, count: Int) throws -> Data {
        state.withLock { $0.reads += 1 }
        return bytes.subdata(in: offset..<min(bytes.count, offset + count))
    }

    func noteWhole() { state.withLock { $0.noted += 1 } }
}

/// A body kept in a store (issue #38, point 3): read piece by piece as its reader asks, checked
/// against its checksum unless its store knows the bytes whole.
@Suite("Stored bodies: read on demand, checked once")
struct StoredBodyTests {
    static let body = Data.repeating(Data((0..<256).map { UInt8(truncatingIfNeeded: $0 &* 7) }), count: StoredBodyFile.pieceSize * 2 + 100)

    static func checksum(_ data: Data) -> UInt64 {
        var sum = CacheRecordCodec.StreamingChecksum()
        sum.add(data)
        return sum.value
    }

    @Test("read piece by piece as the reader asks: no read ahead, a reader that stops stops the reads")
    func onDemand() async throws {
        let reading = MemoryReading(Self.body, knownWhole: false)
        let body = ResponseBody(stored: StoredBodyFile(reading: reading, range: 0..<Self.body.count, checksum: Self.checksum(Self.body)))
        #expect(reading.reads == 0)
        var iterator = body.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.count == StoredBodyFile.pieceSize && reading.reads == 1)
        #expect(try await body.collect(upTo: .max) == Self.body, "read again, whole")
        #expect(reading.noted == 1, "a whole read that matched its checksum is reported to the store")
    }

    @Test("a changed body fails its read at the end and removes the record; a store that knows the bytes whole skips the check")
    func checkedUnlessKnown() async throws {
        let removed = Flag()
        let changed = MemoryReading(Self.body, knownWhole: false)
        let wrongSum = Self.checksum(Self.body) ^ 1
        let failing = ResponseBody(stored: StoredBodyFile(reading: changed, range: 0..<Self.body.count, checksum: wrongSum) { removed.set() })
        await #expect(throws: CacheStorageError.self) { try await failing.collect(upTo: .max) }
        #expect(removed.isSet && changed.noted == 0)

        let known = MemoryReading(Self.body, knownWhole: true)
        let trusted = ResponseBody(stored: StoredBodyFile(reading: known, range: 0..<Self.body.count, checksum: wrongSum))
        #expect(try await trusted.collect(upTo: .max) == Self.body, "no checksum pass over bytes the store knows whole")
    }

    @Test("a read left unchecked fails at its end if the store no longer knows the bytes whole; a copy is always checked")
    func trustedUntilChanged() async throws {
        let known = MemoryReading(Self.body, knownWhole: true)
        let file = StoredBodyFile(reading: known, range: 0..<Self.body.count, checksum: Self.checksum(Self.body) ^ 1)
        var cursor = file.cursor()
        _ = try await cursor.next()
        known.forget()  // (the file changed while it was read)
        await #expect(throws: CacheStorageError.self) { while try await cursor.next() != nil {} }

        let stillKnown = MemoryReading(Self.body, knownWhole: true)
        var copy = StoredBodyFile(reading: stillKnown, range: 0..<Self.body.count, checksum: Self.checksum(Self.body) ^ 1).cursor(checked: true)
        await #expect(throws: CacheStorageError.self, "a copy starts from bytes that pass their checksum") { while try await copy.next() != nil {} }
    }

    @Test("a range of bytes the store knows whole is read by seeking, unchecked; a cancelled reader gets CancellationError")
    func rangeAndCancellation() async throws {
        let reading = MemoryReading(Self.body, knownWhole: true)
        let file = StoredBodyFile(reading: reading, range: 10..<Self.body.count, checksum: 0)
        let slice = try #require(ResponseBody(stored: file).slice(1000...1009))
        #expect(try await slice.collect(upTo: .max) == Self.body.subdata(in: 1010..<1020) && reading.reads == 1)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await ResponseBody(stored: file).collect(upTo: .max)
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test(
        "a range of bytes the store does not know whole is served only after the whole body passed its check: a changed one fails before its first byte and removes the record"
    )
    func rangeCheckedFirst() async throws {
        let stored = Self.body.subdata(in: 10..<Self.body.count)
        let unknown = MemoryReading(Self.body, knownWhole: false)
        let file = StoredBodyFile(reading: unknown, range: 10..<Self.body.count, checksum: Self.checksum(stored))
        let slice = try #require(ResponseBody(stored: file).slice(1000...1009))
        #expect(try await slice.collect(upTo: .max) == Self.body.subdata(in: 1010..<1020))
        #expect(unknown.reads == 4 && unknown.noted == 1, "three pieces checked, then the range's one; the body noted whole")

        let removed = Flag()
        let changed = MemoryReading(Self.body, knownWhole: false)
        let failing = StoredBodyFile(reading: changed, range: 10..<Self.body.count, checksum: Self.checksum(stored) ^ 1) { removed.set() }
        var cursor = failing.cursor(1000...1009)
        await #expect(throws: CacheStorageError.self, "no byte of a range of a changed body") { _ = try await cursor.next() }
        #expect(removed.isSet && changed.noted == 0)

        let known = MemoryReading(Self.body, knownWhole: true)
        var changing = StoredBodyFile(reading: known, range: 0..<Self.body.count, checksum: 0).cursor(0...(StoredBodyFile.pieceSize + 9))
        _ = try await changing.next()
        known.forget()  // (the file changed while the range was read)
        await #expect(throws: CacheStorageError.self, "a range read unchecked must still be known whole at its end") {
            while try await changing.next() != nil {}
        }
    }

    @Test("a body kept in a store is not timed: it is read from a local file, not transferred")
    func notTimed() {
        let body = ResponseBody(stored: StoredBodyFile(reading: MemoryReading(Self.body, knownWhole: true), range: 0..<10, checksum: 0))
        let timed = TimedBody.body(body, silence: .seconds(1), remaining: .seconds(1), time: TimeSource(ContinuousClock()), url: nil)
        #expect(timed == body)
        let (stream, _) = ResponseBody.makeStream()
        #expect(TimedBody.body(stream, silence: .seconds(1), remaining: nil, time: TimeSource(ContinuousClock()), url: nil) != stream)
    }
}

/// The window of chunks on their way to the session's thread in `RecallURLProtocol`.
@Suite("DeliveryWindow: reading overlaps delivering, within a bound")
struct DeliveryWindowTests {
    @Test("the reader waits while a chunk would pass the limit, until chunks are delivered; drain waits for all")
    func bound() async throws {
        let window = DeliveryWindow(limit: 10)
        #expect(await window.reserve(6))
        #expect(await window.reserve(4), "10 of 10 bytes: no wait")
        let third = Task { await window.reserve(1) }
        try await waitUntil("the reader waits: 11 bytes would pass the limit") { window.isWaiting }
        window.release(6)
        #expect(await third.value)
        // A chunk larger than the limit waits until nothing is on its way, then goes alone.
        let large = Task { await window.reserve(20) }
        try await waitUntil("the large chunk waits") { window.isWaiting }
        window.release(4)
        window.release(1)
        #expect(await large.value)
        let draining = Task { await window.drain() }
        try await waitUntil("drain waits") { window.isWaiting }
        window.release(20)
        await draining.value
        #expect(!window.isWaiting && !window.isClosed)
    }

    @Test("closed, or its reader cancelled: a waiting reader goes on, and no more is reserved")
    func closed() async throws {
        let window = DeliveryWindow(limit: 1)
        #expect(await window.reserve(5), "nothing on its way: a larger chunk goes alone")
        let waiting = Task { await window.reserve(1) }
        try await waitUntil("the reader waits") { window.isWaiting }
        window.close()
        #expect(await waiting.value == false)
        #expect(await window.reserve(1) == false && window.isClosed)
        await window.drain()  // (returns: closed)

        let other = DeliveryWindow(limit: 1)
        #expect(await other.reserve(1))
        let cancelled = Task { await other.reserve(1) }
        try await waitUntil("the reader waits") { other.isWaiting }
        cancelled.cancel()
        #expect(await cancelled.value == false && other.isClosed, "a cancelled reader stops waiting")
    }
}
