import Logging
import Recall
import ServiceLifecycle

/// A swift-service-lifecycle `Service` that lets Recall's caches finish cleanly: on graceful
/// shutdown (SIGTERM, SIGINT, or a `ServiceGroup` shutting down) it waits for their background
/// refreshes (`stale-while-revalidate`) and then flushes their storage, so disk writes that were
/// still queued are on disk before the process exits.
///
/// ```swift
/// let group = ServiceGroup(services: [RecallCacheService(caches: [cache], logger: logger), app],
///                          gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// List it **before** the services that use the caches: a `ServiceGroup` shuts services down in
/// the reverse of their order, so the app stops sending first, and the caches finish after it.
///
/// A refresh goes through its pipeline's retrier, so its time limits bound the wait.
public struct RecallCacheService: Service {
    /// The caches to finish.
    public let caches: [HTTPCache]
    /// Where the service says what it did (at `.info`: once, at shutdown).
    public let logger: Logger

    /// Creates the service.
    public init(caches: [HTTPCache], logger: Logger) {
        self.caches = caches
        self.logger = logger
    }

    /// Waits for graceful shutdown (or cancellation), then finishes the caches.
    public func run() async throws {
        // Returns at graceful shutdown; throws when the service is cancelled (the caches are
        // finished all the same: flushing takes milliseconds).
        try? await gracefulShutdown()
        await finish()
    }

    /// Waits for the caches' background refreshes, then flushes their storage.
    public func finish() async {
        logger.info("Recall caches finishing: waiting for background refreshes, then flushing storage", metadata: ["caches": "\(caches.count)"])
        for cache in caches {
            await cache.waitForBackgroundRefreshes()
            await cache.storage.flush()
        }
        logger.info("Recall caches finished: background refreshes done, storage flushed", metadata: ["caches": "\(caches.count)"])
    }
}
