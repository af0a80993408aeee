import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Recall
import RecallAsyncHTTPClient
import RecallTesting
import Testing

/// Issue #54, point 2, over a real `HTTPClient`: bodies the cache does not store pass straight
/// through a pipeline over `AsyncHTTPClientTransport`, over every storage kind — the reader has the
/// first bytes while the origin still holds the rest, then every byte — and the next request goes
/// to the origin again.
@Suite("Bodies not stored pass straight through AsyncHTTPClientTransport", .timeLimit(.minutes(2)))
struct NotStoredPassThroughTests {
    static let size = 1 << 20

    enum Kind: String, CaseIterable, Sendable {
        case noStore, overEntryLimit, overByteLimit, uncacheableStatus, post
    }

    enum Storage: String, CaseIterable, Sendable {
        case memory, disk, tiered
    }

    /// Every kind over every storage, but an entry over a disk's `entryLimit` (the most it reads
    /// whole: a longer body is stored in pieces).
    static let cases: [(Kind, Storage)] = Kind.allCases.flatMap { body in
        Storage.allCases.filter { body != .overEntryLimit || $0 == .memory }.map { (body, $0) }
    }

    @Test("first bytes before the origin sends the rest, every byte after, nothing stored", arguments: cases)
    func passesStraightThrough(_ body: Kind, _ kind: Storage) async throws {
        let origin = try AsyncHTTPClientTransportTests.origin()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-ahc-not-stored-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let entryLimit = body == .overEntryLimit ? 256 << 10 : (body == .overByteLimit ? 128 << 10 : 16 << 20)
        let byteLimit = body == .overByteLimit ? 256 << 10 : 64 << 20
        let storage: any CacheStorage
        switch kind {
        case .memory: storage = MemoryStorage(byteLimit: byteLimit, entryLimit: entryLimit)
        case .disk: storage = try DiskStorage(directory: directory, byteLimit: byteLimit, entryLimit: entryLimit)
        case .tiered:
            storage = TieredStorage(
                memory: MemoryStorage(byteLimit: byteLimit, entryLimit: entryLimit),
                lower: try DiskStorage(directory: directory, byteLimit: byteLimit, entryLimit: entryLimit))
        }
        let cache = HTTPCache(storage: storage)
        let transport = AsyncHTTPClientTransport(client: .shared)
        let pipeline = Pipeline(transport: transport, hooks: [cache])

        let path = "/not-stored-\(body.rawValue)-\(kind.rawValue)-\(UUID().uuidString.prefix(8))"
        let gate = UUID().uuidString
        var query = [("stream", "\(Self.size)"), ("gate", gate)]
        switch body {
        case .noStore: query.append(("cc", "no-store"))
        case .overEntryLimit, .overByteLimit, .post: query.append(("cc", "max-age=600"))
        case .uncacheableStatus: query.append(("status", "500"))
        }
        var request = URLRequest(url: origin.url(path, query))
        if body == .post {
            request.httpMethod = "POST"
            request.httpBody = Data("a form".utf8)
        }

        for round in 1...2 {
            let response = try await pipeline.send(request)
            var iterator = response.body.makeAsyncIterator()
            var received = try #require(try await iterator.next()).count
            if round == 1 {
                #expect(received < Self.size, "the origin holds the rest until the gate opens")
                _ = try await transport.send(URLRequest(url: origin.url("/__open", [("gate", gate)]))).collected()
            }
            while let chunk = try await iterator.next() { received += chunk.count }
            #expect(received == Self.size, "round \(round)")
        }
        #expect(try await AsyncHTTPClientTransportTests().hits(origin, path) == 2, "the second request went to the origin: nothing was stored")
        await cache.flush()
        #expect(cache.statistics.stores == 0)
    }
}
