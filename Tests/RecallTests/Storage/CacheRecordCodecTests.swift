import Foundation
@testable import Recall
import Testing

@Suite("Record format: versions, checksums, bodies read in place")
struct CacheRecordCodecTests {
    /// `record` in an older format `version` as an earlier Recall wrote it: the same layout
    /// under that version's `checksum`.
    private func olderBytes(_ record: CacheRecord, version: UInt8, checksum: (UnsafeRawBufferPointer) -> UInt64) -> Data {
        var bytes = CacheRecordCodec.encode(record)
        bytes[4] = version
        let payload = bytes[CacheRecordCodec.headerSize...]
        let sum = payload.withUnsafeBytes { checksum($0) }
        withUnsafeBytes(of: sum.littleEndian) { bytes.replaceSubrange(13..<21, with: $0) }
        return bytes
    }

    @Test("records written by an earlier Recall (versions 3 to 6) still decode; the current version is written")
    func olderVersions() throws {
        let record = makeRecord("https://x.test/old", bodySize: 10_000)
        let current = CacheRecordCodec.encode(record)
        #expect(current[4] == CacheRecordCodec.version)
        let older: [(UInt8, (UnsafeRawBufferPointer) -> UInt64)] = [
            (CacheRecordCodec.legacyVersion, CacheRecordCodec.legacyChecksum),
            (CacheRecordCodec.legacyPartialVersion, CacheRecordCodec.legacyChecksum),
            (CacheRecordCodec.fourLaneVersion, CacheRecordCodec.fourLaneChecksum),
            (CacheRecordCodec.fourLanePartialVersion, CacheRecordCodec.fourLaneChecksum)
        ]
        for (version, checksum) in older {
            #expect(try CacheRecordCodec.decode(olderBytes(record, version: version, checksum: checksum)) == record, "version \(version)")
            // The checksums differ, so a file is checked with its own version's.
            var mislabelled = current
            mislabelled[4] = version
            #expect(throws: CacheStorageError.self) { try CacheRecordCodec.decode(mislabelled) }
        }
        var unknown = current
        unknown[4] = 9
        #expect(throws: CacheStorageError.self) { try CacheRecordCodec.decode(unknown) }
    }

    @Test("the older checksums are what earlier Recalls computed (fixed values), so their records keep decoding")
    func olderChecksumsPinned() {
        let bytes = (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        #expect(bytes.withUnsafeBytes { CacheRecordCodec.legacyChecksum($0) } == 7_726_406_359_585_199_235)
        #expect(bytes.withUnsafeBytes { CacheRecordCodec.fourLaneChecksum($0) } == 11_040_529_710_658_408_696)
    }

    @Test("any changed bit fails either checksum, at every length around the 32-byte blocks and the 8-byte words")
    func checksumCatchesChanges() {
        var generator = SeededRandomSource(seed: 11)
        for length in 0...200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for checksum in [CacheRecordCodec.checksum as (UnsafeRawBufferPointer) -> UInt64, CacheRecordCodec.fourLaneChecksum] {
                let original = bytes.withUnsafeBytes { checksum($0) }
                for position in 0..<length {
                    for bit in 0..<8 {
                        var changed = bytes
                        changed[position] ^= 1 << bit
                        #expect(changed.withUnsafeBytes { checksum($0) } != original, "length \(length), byte \(position)")
                    }
                }
            }
        }
    }

    @Test("two changed bits fail the checksum, also where wrapping 64-bit sums would cancel (top bits of one stream)")
    func checksumCatchesTwoBitChanges() {
        var generator = SeededRandomSource(seed: 13)
        let bytes = (0..<1_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let original = bytes.withUnsafeBytes { CacheRecordCodec.checksum($0) }
        // The top bit of the same byte of blocks 0 and 2, and of every other pair of blocks:
        // +2³¹ twice, which 64-bit words summed in 64 bits would lose (2 × 2⁶³ wraps to 0).
        for first in stride(from: 7, to: 1_000, by: 32) {
            for second in stride(from: first + 32, to: 1_000, by: 32) {
                var changed = bytes
                changed[first] ^= 0x80
                changed[second] ^= 0x80
                #expect(changed.withUnsafeBytes { CacheRecordCodec.checksum($0) } != original, "bytes \(first), \(second)")
            }
        }
        for _ in 0..<20_000 {  // random pairs of bits anywhere
            let first = Int.random(in: 0..<1_000, using: &generator), second = Int.random(in: 0..<1_000, using: &generator)
            let firstBit = UInt8(1) << UInt8.random(in: 0..<8, using: &generator), secondBit = UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
            guard first != second || firstBit != secondBit else { continue }
            var changed = bytes
            changed[first] ^= firstBit
            changed[second] ^= secondBit
            #expect(changed.withUnsafeBytes { CacheRecordCodec.checksum($0) } != original, "bytes \(first), \(second)")
        }
    }

    @Test("the sums checksum catches what plain sums miss: swapped words of one stream, moved blocks, a zeroed tail")
    func checksumCatchesMoves() {
        var generator = SeededRandomSource(seed: 12)
        let bytes = (0..<4_093).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let original = bytes.withUnsafeBytes { CacheRecordCodec.checksum($0) }
        var swapped = bytes  // words 64 bytes apart: the same stream, so the same plain sum
        for index in 0..<8 { swapped.swapAt(128 + index, 192 + index) }
        var moved = bytes  // two whole blocks exchanged: every stream's plain sum unchanged
        for index in 0..<64 { moved.swapAt(index, 1_024 + index) }
        var zeroed = bytes  // a torn write: the last 1,000 bytes never reached the disk (a length not a multiple of 32)
        for index in 3_093..<4_093 { zeroed[index] = 0 }
        for (name, changed) in [("swapped", swapped), ("moved", moved), ("zeroed", zeroed)] {
            #expect(changed != bytes)
            #expect(changed.withUnsafeBytes { CacheRecordCodec.checksum($0) } != original, "\(name)")
        }
    }

    @Test("a record with a changed payload byte does not decode", arguments: [0, 1, 1_000, 4_099])
    func changedRecordsFail(bodySize: Int) throws {
        let record = makeRecord("https://x.test/\(bodySize)", bodySize: bodySize)
        let bytes = CacheRecordCodec.encode(record)
        #expect(try CacheRecordCodec.decode(bytes) == record)
        for position in CacheRecordCodec.headerSize..<bytes.count {
            var changed = bytes
            changed[position] ^= 0x01
            #expect(throws: CacheStorageError.self) { try CacheRecordCodec.decode(changed) }
        }
    }

    @Test("a large body shares a private buffer and stays valid after the buffer's owner is gone; a small one is copied")
    func bodiesInPlace() throws {
        var decoded: CacheRecord?
        do {
            // Bytes in memory the test frees itself, as DiskStorage's reads are.
            let encoded = CacheRecordCodec.encode(makeRecord("https://x.test/large", bodySize: 64 << 10))
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: encoded.count, alignment: 16)
            encoded.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), count: encoded.count)
            let file = Data(
                bytesNoCopy: buffer, count: encoded.count,
                deallocator: .custom { pointer, _ in
                    memset(pointer, 0xEE, encoded.count)  // a use after free reads garbage, not the body
                    pointer.deallocate()
                })
            decoded = try CacheRecordCodec.decode(file, sharingBuffer: true)
        }
        let body = try #require(decoded?.variants.first?.body)
        #expect(body.count == 64 << 10)
        #expect(body.startIndex == 0)
        #expect(body.allSatisfy { $0 == UInt8(ascii: "x") })
        let small = try CacheRecordCodec.decode(CacheRecordCodec.encode(makeRecord("https://x.test/small", bodySize: 100)))
        #expect(small.variants.first?.body == Data(repeating: UInt8(ascii: "x"), count: 100))
    }

    @Test("bodies are copied unless the buffer is private: changing a served body never changes the stored bytes")
    func bodiesCopiedFromSharedBuffers() throws {
        let stored = CacheRecordCodec.encode(makeRecord("https://x.test/shared", bodySize: 64 << 10))
        var record = try CacheRecordCodec.decode(stored)  // a buffer someone else holds (a pending write, another backend)
        record.variants[0].body[0] = UInt8(ascii: "y")  // in place, were the body the sole owner of shared bytes
        #expect(try CacheRecordCodec.decode(stored).variants[0].body[0] == UInt8(ascii: "x"))
    }

    @Test("with a private buffer, a small body of a large record is copied: it does not keep the record's bytes alive")
    func smallBodiesCopied() throws {
        var two = makeRecord("https://x.test/two", bodySize: 5_000)
        two.variants.append(makeRecord("https://x.test/two", bodySize: 200_000).variants[0])
        let encoded = CacheRecordCodec.encode(two)
        let freed = Locked(false)
        var small: Data?
        do {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: encoded.count, alignment: 16)
            encoded.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), count: encoded.count)
            let file = Data(
                bytesNoCopy: buffer, count: encoded.count,
                deallocator: .custom { pointer, _ in
                    freed.withLock { $0 = true }
                    pointer.deallocate()
                })
            let decoded = try CacheRecordCodec.decode(file, sharingBuffer: true)
            #expect(decoded == two)
            small = decoded.variants[0].body
        }
        #expect(small?.count == 5_000)
        #expect(freed.withLock { $0 })  // only the 5,000-byte body is left, and it is a copy
    }

    @Test("a hit on a write not yet on disk gets its own copy: changing it corrupts neither the write nor the next hit")
    func pendingWriteBodies() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try DiskStorage(directory: directory)
        // The write must still be queued when the hit reads it: it is queued behind a large
        // write that keeps the queue busy, and tried again (with another key) in the rare case
        // the queue was faster. The queued bytes are read too: changing the hit's body must
        // leave them as they were, whether or not they have reached the file meanwhile.
        var record = makeRecord("https://x.test/pending", bodySize: 64 << 10)
        var hit: (record: CacheRecord, queued: Data)?
        for attempt in 0..<20 {
            await storage.store(makeRecord("https://x.test/blocker-\(attempt)", bodySize: 12 << 20))
            record = makeRecord("https://x.test/pending-\(attempt)", bodySize: 64 << 10)
            await storage.store(record)
            let queued = await storage.bytes(for: record.key)?.data
            let read = await storage.record(for: record.key)
            if storage.statistics.pendingBytes > 0, let queued, let read {  // still queued after both reads
                hit = (read, queued)
                break
            }
        }
        guard let queued = hit?.queued, var first = hit?.record else {
            Issue.record("the write queue landed every write before it was read: the pending path was not reached")
            return
        }
        hit = nil  // so that `first` holds its record alone, as a caller would
        first.variants[0].body[0] = 0  // a subscript set changes a sole no-copy Data in place (withUnsafeMutableBytes copies)
        #expect(queued == CacheRecordCodec.encode(record))
        await storage.flush()
        #expect(await storage.record(for: record.key) == record)
        #expect(storage.statistics.corruptRemoved == 0)
    }

    @Test("the checksum of bytes that come in pieces is the checksum of the pieces joined, however they are cut")
    func streamingChecksum() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 7, 31, 32, 33, 64, 100, 1000, 65_537] {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            for _ in 0..<5 {
                var streaming = CacheRecordCodec.StreamingChecksum()
                var offset = 0
                while offset < length {
                    let piece = min(length - offset, Int.random(in: 0...70, using: &generator))
                    streaming.add(bytes.subdata(in: offset..<(offset + piece)))
                    offset += piece
                }
                #expect(streaming.value == CacheRecordCodec.checksum(bytes), "length \(length)")
            }
        }
    }

    @Test("a record written in pieces (version 9) reads back whole; torn, or with a changed byte of head or body, it is corrupt")
    func streamedRecord() throws {
        let record = makeRecord("https://example.com/large", bodySize: 10_000)
        var streaming = CacheRecordCodec.StreamingChecksum()
        var file = CacheRecordCodec.streamedHead(record)
        for start in stride(from: 0, to: 10_000, by: 3_000) {
            let piece = record.variants[0].body.subdata(in: start..<min(start + 3_000, 10_000))
            streaming.add(piece)
            file.append(piece)
        }
        file.append(CacheRecordCodec.streamedTrailer(length: 10_000, checksum: streaming.value))
        #expect(file[4] == CacheRecordCodec.streamedVersion)
        #expect(try CacheRecordCodec.decode(file, expectedKey: record.key) == record)
        #expect(throws: CacheStorageError.self) { try CacheRecordCodec.decode(file.dropLast(), expectedKey: record.key) }
        for offset in [30, file.count - 5_000, file.count - 20] {
            var changed = file
            changed[offset] ^= 0x01
            #expect(throws: CacheStorageError.self, "byte \(offset)") { try CacheRecordCodec.decode(changed, expectedKey: record.key) }
        }
        #expect(!CacheRecordCodec.canStream(CacheRecord(key: "k", variants: record.variants + record.variants)))
    }
}
