import Foundation
import Recall
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The code blocks of README.md, docs/architecture.md, docs/caching.md and docs/retry.md,
// compiled (never run). DocSnippetTests checks them against the pages.

private enum MyClientError: Error { case connectRefused, resetByPeer, badCertificate }

// snippet: docs/retry.md
extension MyClientError: TransportErrorConvertible {
    var transportError: TransportError {
        switch self {
        case .connectRefused: TransportError(.cannotConnect)          // never sent: even a POST may retry
        case .resetByPeer: TransportError(.connectionLost)            // maybe processed: idempotent methods only
        case .badCertificate: TransportError(.tls)                    // not retried
        }
    }
}
// end snippet

private struct TokenStore: Sendable { func refresh() async throws -> String { "token" } }
private let tokens = TokenStore()

enum PageSnippets {
    static func readme() async throws {
        // snippet: README.md
        // A per-user cache directory (~/.cache/recall on Linux): DiskStorage refuses a directory that
        // another user owns or can write to, such as a shared path under /tmp.
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
        let cache = HTTPCache(storage: TieredStorage(
            memory: MemoryStorage(),
            lower: try DiskStorage(directory: caches.appendingPathComponent("recall"))
        ))
        let client = Pipeline(
            transport: URLSessionTransport(),
            hooks: [cache],
            retrierFactory: .exponentialBackoff(maxAttempts: 4, deadline: .seconds(10))
        )

        // One line changes from URLSession: `URLSession.shared.data(for:)` → `client.data(for:)`.
        let (data, response) = try await client.data(for: URLRequest(url: URL(string: "https://example.com/")!))
        print(response.statusCode, data.count, cache.statistics)
        // end snippet
        let configuration = URLSessionConfiguration.ephemeral
        // snippet: README.md
        try configuration.sendThroughRecall(client)   // `client` is the Pipeline above
        // end snippet
    }

    static func integrations(billingPipeline: Pipeline) async throws {
        // snippet: docs/integrations.md
        let pipeline = Pipeline(transport: URLSessionTransport(), hooks: [HTTPCache()],
                                retrierFactory: .exponentialBackoff(maxAttempts: 3))
        let configuration = URLSessionConfiguration.default
        try configuration.sendThroughRecall(pipeline)                    // the line that is added
        let session = URLSession(configuration: configuration)           // hand it to any client
        let (data, response) = try await session.data(from: URL(string: "https://api.example.com/items")!)
        // end snippet
        _ = (data, response)
        // snippet: docs/integrations.md
        final class BillingRecall: RecallURLProtocol {
            static let billing = URLProtocolRoutes()
            override class var routes: URLProtocolRoutes { billing }
        }
        let billingConfiguration = URLSessionConfiguration.default
        try billingConfiguration.sendThroughRecall(billingPipeline, hosts: ["billing.example.com"],
                                                   protocolClass: BillingRecall.self)
        // end snippet
    }

    static func architecture(dir: URL) throws {
        var storage: any CacheStorage
        // snippet: docs/architecture.md
        do { storage = try DiskStorage(directory: dir) }
        catch let error as CacheStorageError where error.code == .locked { storage = MemoryStorage() }
        // end snippet
        _ = storage
    }

    static func caching(cacheDirectory: URL) throws {
        // snippet: docs/caching.md
        let storage = TieredStorage(memory: MemoryStorage(byteLimit: 32 << 20),
                                    lower: try DiskStorage(directory: cacheDirectory, byteLimit: 512 << 20))
        let cache = HTTPCache(storage: storage)
        let client = Pipeline(transport: URLSessionTransport(), hooks: [cache], retrierFactory: .exponentialBackoff())
        // end snippet
        _ = client
    }

    static func audience(directory: URL) throws {
        // snippet: docs/caching.md
        var configuration = CacheConfiguration()
        configuration.audience = .oneUser // an app, a command-line tool, a browser-like client
        let cache = HTTPCache(storage: try DiskStorage(directory: directory), configuration: configuration)
        // end snippet
        _ = cache
    }

    static func retry(cache: HTTPCache) {
        // snippet: docs/retry.md
        let client = Pipeline(
            transport: URLSessionTransport(),
            hooks: [IdempotencyKeyHook(), cache],
            retrierFactory: .exponentialBackoff(base: .milliseconds(100), cap: .seconds(10), maxAttempts: 4,
                                                deadline: .seconds(15), attemptTimeout: .seconds(5))
        )
        // end snippet

        // snippet: docs/retry.md
        let factory = BackoffRetrierFactory.exponentialBackoff(maxAttempts: 4).refreshingAuth { request in
            var request = request
            request.setValue("Bearer \(try await tokens.refresh())", forHTTPHeaderField: "Authorization")
            return request
        }
        // end snippet
        _ = (client, factory)
    }
}
