import Foundation
@testable import Recall
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Memory hits through the calling core's copies, on their own: a copy answers only while it is
/// the storage's record.
@Suite("MemoryReads: a core's copy is the storage's record, or it is not used", .timeLimit(.minutes(1)))
struct MemoryReadsTests {
    static let locator = CacheLocator(
        configuration: CacheConfiguration(),
        partitioner: CachePartitioner(secret: [1, 2, 3], configuration: CacheConfiguration()))
    static let url = "https://origin.test/a"

    /// Reads `url` through `reads` until the calling core's look finds a copy (each read offers
    /// the storage's record for copying); the last look, with its copy.
    static func lookUntilCopied(_ reads: MemoryReads, at location: CacheLocator.Location) throws -> MemoryReads.Lookup {
        for _ in 0..<200 {
            let look = reads.look(for: url)
            if let look, look.hit != nil { return look }
            _ = reads.record(at: location, copy: look)
        }
        throw CopyNotMade()
    }

    struct CopyNotMade: Error {}

    @Test("the copy answers while current; after a store of the key, the storage's new record does")
    func retiredByAStore() throws {
        let memory = MemoryStorage()
        let reads = MemoryReads(memory: memory, copyBytesPerCore: 1 << 20, missesAreFinal: true)
        let location = try #require(Self.locator.location(ofText: Self.url))
        let old = makeRecord(location.key, bodySize: 10), new = makeRecord(location.key, bodySize: 20)
        memory.storeNow(old)
        let look = try Self.lookUntilCopied(reads, at: location)
        #expect(reads.record(at: location, copy: look) == old)
        #expect((reads.usage?.copies ?? 0) > 0)
        memory.storeNow(new)  // after the look: the copy it found is no longer the storage's record
        #expect(reads.record(at: location, copy: look) == new)
        memory.removeNow(location.key)
        #expect(reads.record(at: location, copy: look) == nil)
        #expect(reads.current(location.key) == nil)
    }

    @Test("without bytes for copies, reads go to the storage")
    func noCopies() throws {
        let memory = MemoryStorage()
        let reads = MemoryReads(memory: memory, copyBytesPerCore: 0, missesAreFinal: true)
        let location = try #require(Self.locator.location(ofText: Self.url))
        memory.storeNow(makeRecord(location.key))
        #expect(reads.look(for: Self.url) == nil && reads.usage == nil)
        #expect(reads.record(at: location, copy: nil)?.key == location.key)
    }
}
