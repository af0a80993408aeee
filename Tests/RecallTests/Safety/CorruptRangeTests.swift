import Foundation
@testable import Recall
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A range of a body stored in pieces on disk whose bytes changed on disk (found by an adversarial
/// review: the range was served by seeking, unchecked, with the changed byte in it).
@Suite("A corrupt body on disk: never a range of it", .timeLimit(.minutes(1)))
struct CorruptRangeTests {
    static let size = 64 << 10
    static let body = Data((0..<size).map { UInt8($0 % 251) })

    /// A cache over `disk` whose origin streams ``body`` for `/big`.
    static func harness(_ disk: DiskStorage) -> CacheHarness {
        let h = CacheHarness(storage: disk)
        h.mock.route("GET", "/big") { request in
            RecallResponse(
                status: 200, headers: ["Cache-Control": "max-age=600", "ETag": "\"e\"", "Content-Length": String(size)],
                body: ResponseBody.producing(expectedLength: size, url: request.url) { try await $0.write(body) }, url: request.url)
        }
        return h
    }

    @Test("after a restart, a range of a body changed on disk fails before its first byte, and the next request goes to the origin")
    func rangeOfChangedBody() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let h = Self.harness(try DiskStorage(directory: directory, entryLimit: 4096))
            _ = try await h.get("/big").collected()
            await h.cache.flush()
        }
        // One byte of the body, 100 before its end, changed on disk (the record ends with a 16-byte trailer).
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.hasSuffix(".rce") })
        let path = directory.appendingPathComponent(name)
        var bytes = try Data(contentsOf: path)
        bytes[bytes.count - 16 - 100] ^= 0xFF
        try bytes.write(to: path)

        let h = Self.harness(try DiskStorage(directory: directory, entryLimit: 4096))
        let first = Self.size - 100
        let range = ["Range": "bytes=\(first)-\(first + 9)"]
        let answer = try await h.pipeline.send(h.request("/big", headers: range))
        await #expect(throws: CacheStorageError.self, "no byte of a range of a changed body") { try await answer.collected() }
        #expect(h.hits("/big") == 0)
        await h.cache.flush()

        let again = try await h.pipeline.send(h.request("/big", headers: range)).collected()
        #expect(h.hits("/big") == 1, "the corrupt record was removed: the next request went to the origin")
        // (The origin ignores Range: its whole answer passes, as a server's may.)
        #expect(again.status == 200 && again.body.bytes == Self.body)
        let stored = try await h.pipeline.send(h.request("/big", headers: range)).collected()
        #expect(stored.source == .cache && stored.status == 206 && stored.body.bytes == Self.body[first...(first + 9)])
        #expect(h.hits("/big") == 1)
    }
}
