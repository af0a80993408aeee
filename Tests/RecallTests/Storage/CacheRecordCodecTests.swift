import Foundation
@testable import Recall
import Testing

@Suite("Record format: versions, checksums, bodies read in place")
struct CacheRecordCodecTests {
    /// `record` in format version 3 or 4 as an earlier Recall wrote it: the same layout under
    /// the one-lane checksum.
    private func legacyBytes(_ record: CacheRecord, partial: Bool = false) -> Data {
        var bytes = CacheRecordCodec.encode(record)
        bytes[4] = partial ? CacheRecordCodec.legacyPartialVersion : CacheRecordCodec.legacyVersion
        let payload = bytes[CacheRecordCodec.headerSize...]
        let checksum = payload.withUnsafeBytes { CacheRecordCodec.legacyChecksum($0) }
        withUnsafeBytes(of: checksum.littleEndian) { bytes.replaceSubrange(13..<21, with: $0) }
        return bytes
    }

    @Test("records written by an earlier Recall (versions 3 and 4) still decode; the current version is written")
    func legacyVersions() throws {
        let record = makeRecord("https://x.test/old", bodySize: 10_000)
        let current = CacheRecordCodec.encode(record)
        #expect(current[4] == CacheRecordCodec.version)
        #expect(try CacheRecordCodec.decode(legacyBytes(record)) == record)
        #expect(try CacheRecordCodec.decode(legacyBytes(record, partial: true)) == record)
        // The two checksums differ, so a file is checked with its own version's.
        var mislabelled = current
        mislabelled[4] = CacheRecordCodec.legacyVersion
        #expect(throws: CacheStorageError.self) { try CacheRecordCodec.decode(mislabelled) }
        var unknown = current
        unknown[4] = 7
        #expect(throws: CacheStorageError.self) { try CacheRecordCodec.decode(unknown) }
    }

    @Test("any changed byte of the payload fails the checksum, in every lane and in the tail", arguments: [0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 1_000, 4_099])
    func checksumCatchesChanges(bodySize: Int) throws {
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
            let file = Data(bytesNoCopy: buffer, count: encoded.count, deallocator: .custom { pointer, _ in
                memset(pointer, 0xEE, encoded.count) // a use after free reads garbage, not the body
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
        var record = try CacheRecordCodec.decode(stored) // a buffer someone else holds (a pending write, another backend)
        record.variants[0].body[0] = UInt8(ascii: "y") // in place, were the body the sole owner of shared bytes
        #expect(try CacheRecordCodec.decode(stored).variants[0].body[0] == UInt8(ascii: "x"))
        // Shared, but a small body of a large record is copied, so it does not keep the rest alive.
        var two = makeRecord("https://x.test/two", bodySize: 5_000)
        two.variants.append(makeRecord("https://x.test/two", bodySize: 200_000).variants[0])
        let decoded = try CacheRecordCodec.decode(CacheRecordCodec.encode(two), sharingBuffer: true)
        #expect(decoded == two)
    }

    @Test("a hit on a write not yet on disk gets its own copy: changing it corrupts neither the write nor the next hit")
    func pendingWriteBodies() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try DiskStorage(directory: directory)
        let record = makeRecord("https://x.test/pending", bodySize: 64 << 10)
        await storage.store(record)
        var first = try #require(await storage.record(for: record.key)) // from the pending write or the file
        first.variants[0].body[0] = 0 // a subscript set changes a sole no-copy Data in place (withUnsafeMutableBytes copies)
        await storage.flush()
        #expect(await storage.record(for: record.key) == record)
        #expect(storage.statistics.corruptRemoved == 0)
    }
}
