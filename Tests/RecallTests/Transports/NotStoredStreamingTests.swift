import Foundation
import RecallTesting
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
    final class Routes: RecallURLProtocol {
        static let mine = URLProtocolRoutes()
        override class var routes: URLProtocolRoutes { mine }
    }

    @Test("first bytes before the origin sends the rest, every byte after, nothing stored", arguments: NotStoredCase.all)
    func passesStraightThrough(_ test: NotStoredCase) async throws {
        let server = try await OriginServer.shared.value
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = HTTPCache(storage: try test.storage(in: directory))
        let route = try Routes.mine.add(Pipeline(transport: URLSessionTransport(), hooks: [cache]))
        defer { Routes.mine.remove(route) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [Routes.self]

        let path = OriginServer.uniquePath("not-stored-\(test.kind.rawValue)-\(test.storage.rawValue)")
        let gate = UUID().uuidString
        let request = test.request(server.url(path, Dictionary(uniqueKeysWithValues: test.query(gate: gate))))
        for round in 1...2 {
            let delegate = CountingDelegate()
            let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            session.dataTask(with: request).resume()
            try await waitUntil("the first bytes reach the delegate") { delegate.received > 0 }
            if round == 1 {
                #expect(delegate.received < NotStoredCase.size && !delegate.completed, "the origin holds the rest until the gate opens")
                try await server.open(gate: gate)
            }
            try await waitUntil("the task completes") { delegate.completed }
            #expect(delegate.received == NotStoredCase.size && delegate.failure == nil, "round \(round)")
        }
        #expect(try await server.hits(path) == 2, "the second request went to the origin: nothing was stored")
        #expect(cache.statistics.stores == 0)
    }
}
