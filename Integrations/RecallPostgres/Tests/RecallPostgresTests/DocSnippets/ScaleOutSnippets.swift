import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import PostgresNIO
import Recall
import RecallPostgres

/// The examples of docs/scale-out.md, compiled with this package (Recall's `DocSnippetTests`
/// checks that they match the page word for word).
enum ScaleOutSnippets {
    static func setUp(secret: String) async throws -> Pipeline {
        // snippet: docs/scale-out.md
        let client = PostgresClient(configuration: .init(host: "db.internal", port: 5432, username: "app",
                                                         password: secret, database: "app", tls: .prefer(.clientDefault)))
        let run = Task { await client.run() }                         // the client is yours: you run and stop it
        let storage = try await PostgresStorage.open(client: client)  // creates or migrates the tables
        let cache = HTTPCache(storage: storage.withMemoryTier(), coordinator: storage)
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [cache], retrierFactory: .exponentialBackoff())
        // … at exit:
        await storage.shutdown()   // stops listening for invalidations, waits for a maintenance pass
        run.cancel()
        // end snippet
        return pipeline
    }

    static func startWhileDown(client: PostgresClient, logger: Logger) async throws -> HTTPCache {
        // snippet: docs/scale-out.md
        let cache: HTTPCache
        do {
            let storage = try await PostgresStorage.open(client: client)
            cache = HTTPCache(storage: storage.withMemoryTier(), coordinator: storage)
        } catch let error as PostgresStorageError where error.code == .unreachable {
            logger.warning("the cache's database is unreachable, caching in memory: \(error)")
            cache = HTTPCache(storage: MemoryStorage())
        }
        // end snippet
        return cache
    }
}
