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
    @Test("first bytes before the origin sends the rest, every byte after, nothing stored", arguments: NotStoredCase.all)
    func passesStraightThrough(_ test: NotStoredCase) async throws {
        let origin = try AsyncHTTPClientTransportTests.origin()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recall-ahc-not-stored-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = HTTPCache(storage: try test.storage(in: directory))
        let transport = AsyncHTTPClientTransport(client: .shared)
        let pipeline = Pipeline(transport: transport, hooks: [cache])

        let path = "/not-stored-\(test.kind.rawValue)-\(test.storage.rawValue)-\(UUID().uuidString.prefix(8))"
        let gate = UUID().uuidString
        let request = test.request(origin.url(path, test.query(gate: gate)))
        for round in 1...2 {
            let response = try await pipeline.send(request)
            var iterator = response.body.makeAsyncIterator()
            var received = try #require(try await iterator.next()).count
            if round == 1 {
                #expect(received < NotStoredCase.size, "the origin holds the rest until the gate opens")
                _ = try await transport.send(URLRequest(url: origin.url("/__open", [("gate", gate)]))).collected()
            }
            while let chunk = try await iterator.next() { received += chunk.count }
            #expect(received == NotStoredCase.size, "round \(round)")
        }
        #expect(try await AsyncHTTPClientTransportTests().hits(origin, path) == 2, "the second request went to the origin: nothing was stored")
        await cache.flush()
        #expect(cache.statistics.stores == 0)
    }
}
