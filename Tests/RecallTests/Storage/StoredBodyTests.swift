import Foundation
@testable import Recall
import Synchronization
import Testing

/// Bytes in memory read in pieces, counting the reads; the test says whether its store knows
/// them whole.
private final class MemoryReading: ByteReading {
    let bytes: Data
    private let state: Mutex<(reads: Int, known: Bool, noted: Int)>

    init(_ bytes: Data, knownWhole: Bool) {
        self.bytes = bytes
        state = Mutex((0, knownWhole, 0))
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
    static let body = Data((0..<(StoredBodyFile.pieceSize * 2 + 100)).map { UInt8(truncatingIfNeeded: $0 &* 7) })

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

    @Test("a range is read by seeking, unchecked; a cancelled reader gets CancellationError")
    func rangeAndCancellation() async throws {
        let reading = MemoryReading(Self.body, knownWhole: false)
        let file = StoredBodyFile(reading: reading, range: 10..<Self.body.count, checksum: 0)
        let slice = try #require(ResponseBody(stored: file).slice(1000...1009))
        #expect(try await slice.collect(upTo: .max) == Self.body.subdata(in: 1010..<1020) && reading.reads == 1)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await ResponseBody(stored: file).collect(upTo: .max)
        }
        await #expect(throws: CancellationError.self) { try await task.value }
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
    @Test("the reader waits at the limit until a chunk is delivered; drain waits for all")
    func bound() async throws {
        let window = DeliveryWindow(limit: 10)
        #expect(await window.reserve(6))
        #expect(await window.reserve(6), "below the limit: no wait")
        // Each waiter notes whether the release it waits for had happened when it went on.
        let released = Flag(), releasedAll = Flag()
        let third = Task { (await window.reserve(1), released.isSet) }
        try await Task.sleep(for: .milliseconds(10)) // (time to reach its wait; were it not waiting, it would go on now)
        released.set()
        window.release(6)
        let (reserved, afterRelease) = await third.value
        #expect(reserved && afterRelease, "at 12 of 10 bytes the reader waited for a delivery")
        let draining = Task {
            await window.drain()
            return releasedAll.isSet
        }
        window.release(6)
        try await Task.sleep(for: .milliseconds(10))
        releasedAll.set()
        window.release(1)
        #expect(await draining.value, "drain returned once nothing was on its way")
    }

    @Test("closed: a waiting reader goes on, and no more is reserved")
    func closed() async {
        let window = DeliveryWindow(limit: 1)
        #expect(await window.reserve(5))
        let waiting = Task { await window.reserve(1) }
        window.close()
        #expect(await waiting.value == false)
        #expect(await window.reserve(1) == false && window.isClosed)
        await window.drain() // (returns: closed)
    }
}
