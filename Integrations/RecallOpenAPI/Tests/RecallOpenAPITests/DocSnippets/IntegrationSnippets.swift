import Foundation
import OpenAPIRuntime
import Recall
import RecallOpenAPI

/// The OpenAPI examples of docs/integrations.md, compiled with this package (Recall's
/// `DocSnippetTests` checks that they match the page word for word).
enum IntegrationSnippets {
    static func before(serverURL: URL, transport: any ClientTransport) -> Client {
        // snippet: docs/integrations.md
        let client = Client(serverURL: serverURL, transport: transport)
        // end snippet
        return client
    }

    static func after(serverURL: URL, transport: any ClientTransport) async throws -> Components.Schemas.Echo {
        // snippet: docs/integrations.md
        let cached = Client(serverURL: serverURL, transport: transport, middlewares: [
            // Last: after every middleware that adds credentials, so that the cache sees them.
            RecallMiddleware(hooks: [HTTPCache()], retrierFactory: .exponentialBackoff(maxAttempts: 3),
                             credentialsMayBeAddedBelow: false),
        ])
        let items = try await cached.listItems(query: .init(cc: "max-age=60")).ok.body.json
        // end snippet
        return items
    }
}
