import Foundation
import Testing

@testable import Recall

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Bodies the cache does not store pass straight through the README's path — a `URLSession` with
/// `sendThroughRecall` over `URLSessionTransport` — over every storage kind (issue #54, point 2):
/// the session's delegate has the first bytes while the origin still holds the rest (nothing
/// waits for the body's end), then every byte; and the next request goes to the origin again.
@Suite("Bodies not stored pass straight through sendThroughRecall over URLSessionTransport", .serialized, .timeLimit(.minutes(2)))
struct NotStoredStreamingTests {
    /// 1 MiB: over the small storages' limits below.
    static let size = 1 << 20

    enum Kind: String, CaseIterable, Sendable {
        /// `Cache-Control: no-store`.
        case noStore
        /// `max-age`, but longer than a MemoryStorage takes for one entry (`entryLimit`; a
        /// DiskStorage's `entryLimit` is the most it reads whole: a longer body is stored in pieces).
        case overEntryLimit
        /// `max-age`, but larger than the whole storage (`byteLimit`).
        case overByteLimit
        /// A status that is not stored without explicit freshness (500).
        case uncacheableStatus
        /// A method the cache never stores (POST).
        case post
    }

    enum Storage: String, CaseIterable, Sendable {
        case memory, disk, tiered
    }

    /// Every kind over every storage, but an entry over a disk's `entryLimit`, which is stored.
    static let cases: [(Kind, Storage)] = Kind.allCases.flatMap { body in
        Storage.allCases.filter { body != .overEntryLimit || $0 == .memory }.map { (body, $0) }
    }

    final class Routes: RecallURLProtocol {
        static let mine = URLProtocolRoutes()
        override class var routes: URLProtocolRoutes { mine }
    }

    /// A storage of `kind`, its limits below the body's for the limit cases.
    func storage(_ kind: Storage, for body: Kind, directory: URL) throws -> any CacheStorage {
        let entryLimit = body == .overEntryLimit ? 256 << 10 : (body == .overByteLimit ? 128 << 10 : 16 << 20)
        let byteLimit = body == .overByteLimit ? 256 << 10 : 64 << 20
        func memory() -> MemoryStorage { MemoryStorage(byteLimit: byteLimit, entryLimit: entryLimit) }
        func disk() throws -> DiskStorage { try DiskStorage(directory: directory, byteLimit: byteLimit, entryLimit: entryLimit) }
        switch kind {
        case .memory: return memory()
        case .disk: return try disk()
        case .tiered: return TieredStorage(memory: memory(), lower: try disk())
        }
    }

    @Test("first bytes before the origin sends the rest, every byte after, nothing stored", arguments: cases)
    func passesStraightThrough(_ body: Kind, _ kind: Storage) async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = HTTPCache(storage: try storage(kind, for: body, directory: directory))
        let route = try Routes.mine.add(Pipeline(transport: URLSessionTransport(), hooks: [cache]))
        defer { Routes.mine.remove(route) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [Routes.self]

        let path = OriginServer.uniquePath("not-stored-\(body.rawValue)-\(kind.rawValue)")
        let gate = UUID().uuidString
        var query = ["stream": "\(Self.size)", "gate": gate]
        switch body {
        case .noStore: query["cc"] = "no-store"
        case .overEntryLimit, .overByteLimit, .post: query["cc"] = "max-age=600"
        case .uncacheableStatus: query["status"] = "500"
        }
        var request = URLRequest(url: server.url(path, query))
        if body == .post {
            request.httpMethod = "POST"
            request.httpBody = Data("a form".utf8)
        }

        for round in 1...2 {
            let delegate = CountingDelegate()
            let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: request).resume()
            try await waitUntil("the first bytes reach the delegate") { delegate.received > 0 }
            if round == 1 {
                #expect(delegate.received < Self.size && !delegate.completed, "the origin holds the rest until the gate opens")
                try await server.open(gate: gate)
            }
            try await waitUntil("the task completes") { delegate.completed }
            #expect(delegate.received == Self.size && delegate.failure == nil, "round \(round)")
        }
        #expect(try await server.hits(path) == 2, "the second request went to the origin: nothing was stored")
        #expect(cache.statistics.stores == 0)
    }
}
