import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Recall
import RecallAsyncHTTPClient

/// The AsyncHTTPClient examples of docs/integrations.md, compiled with this package (Recall's
/// `DocSnippetTests` checks that they match the page word for word).
enum IntegrationSnippets {
    static func before() async throws -> Int {
        // snippet: docs/integrations.md
        var request = HTTPClientRequest(url: "https://rates.example.com/EUR")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(2))
        let body = try await response.body.collect(upTo: 1 << 20)
        // end snippet
        request.method = .GET
        return body.readableBytes
    }

    /// The pipeline of the example, made as the page makes it (the tests send through it).
    static func upstream() -> (Pipeline, HTTPClient) {
        // snippet: docs/integrations.md
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false // a refused connection fails at once
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration) // shut down at exit
        let upstream = Pipeline(transport: AsyncHTTPClientTransport(client: client), hooks: [HTTPCache()],
                                retrierFactory: .exponentialBackoff(maxAttempts: 3, deadline: .seconds(2)))
        // end snippet
        return (upstream, client)
    }

    static func after(_ upstream: Pipeline) async throws -> RecallResponse {
        // snippet: docs/integrations.md
        let rates = try await upstream.send(URLRequest(url: URL(string: "https://rates.example.com/EUR")!))
        // end snippet
        return rates
    }

    /// The pipeline of the gateway example (Integrations/RecallGateway), as the page shows it.
    static func gateway(client: HTTPClient) -> Pipeline {
        // snippet: docs/integrations.md
        var configuration = CacheConfiguration()
        configuration.audience = .shared   // public / s-maxage answers serve every user; private ones are never kept
        let cache = HTTPCache(storage: MemoryStorage(), configuration: configuration)
        let pipeline = Pipeline(transport: AsyncHTTPClientTransport(client: client), hooks: [cache],
                                retrierFactory: .exponentialBackoff())
        // end snippet
        return pipeline
    }
}
