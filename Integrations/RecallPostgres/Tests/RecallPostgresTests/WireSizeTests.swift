import Foundation
import Recall
import RecallPostgres
import RecallTesting
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue #53, point 1, over PostgreSQL (the root package's `WireSizeTests` cover the other
/// storages): a streamed answer whose `Content-Length` is hostile traps nothing and stores only
/// what is one length, with a body of that length.
@Suite("PostgresStorage: sizes from the wire", .postgres, .timeLimit(.minutes(2)))
struct PostgresWireSizeTests {
    @Test("Content-Length: each hostile value traps nothing over PostgresStorage (alone and under a memory tier); only `5, 5` is stored")
    func contentLength() async throws {
        let values = [
            "9223372036854775807", "9223372036854775806", "9223372036854775608", "1234567890123456789",
            "123456789012345678901234567890", "-1", "+5", "5, 5", "5,6"
        ]
        try await PostgresFixture.withDatabase { client, _ in
            let storage = try await PostgresFixture.open(client)
            for (index, value) in values.enumerated() {
                for tiered in [false, true] {
                    let path = "/cl\(index)-\(tiered)"
                    let origin = MockTransport()
                    let headers: HeaderFields = ["Content-Length": value, "Cache-Control": "max-age=600"]
                    origin.route("GET", path) { request in
                        let expected = ResponseBody.declaredLength(status: 200, headers: headers, requestMethod: "GET")
                        let body = ResponseBody.producing(expectedLength: expected, url: request.url) { writer in
                            try await writer.write(Data("hello".utf8))
                        }
                        return RecallResponse(status: 200, headers: headers, body: body, url: request.url)
                    }
                    let cache = HTTPCache(storage: tiered ? storage.withMemoryTier() : storage)
                    let pipeline = Pipeline(transport: origin, hooks: [cache])
                    let first = try await pipeline.send(PostgresStorageTests.get(path)).collected()
                    #expect(first.bodyText == "hello", "\(value)")
                    await cache.flush()
                    let second = try await pipeline.send(PostgresStorageTests.get(path)).collected()
                    #expect(second.bodyText == "hello", "\(value)")
                    #expect(second.source == (value == "5, 5" ? .cache : .network), "Content-Length: \(value), tiered: \(tiered)")
                }
            }
            await storage.shutdown()
        }
    }
}
