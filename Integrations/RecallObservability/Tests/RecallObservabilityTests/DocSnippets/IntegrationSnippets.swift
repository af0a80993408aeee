import Foundation
import Logging
import Recall
import RecallObservability
import ServiceLifecycle

/// The observability examples of docs/integrations.md, compiled with this package (Recall's
/// `DocSnippetTests` checks that they match the page word for word).
enum IntegrationSnippets {
    static func telemetry(transport: any Transport, cache: HTTPCache, breaker: CircuitBreaker) -> Pipeline {
        // snippet: docs/integrations.md
        let telemetry = RecallTelemetry(logger: Logger(label: "upstream"), cache: cache, breaker: breaker)
        let observed = Pipeline(transport: transport, hooks: [telemetry, cache],
                                retrierFactory: .exponentialBackoff(), observer: telemetry.observe)
        // end snippet
        return observed
    }

    static func shutdown(cache: HTTPCache, logger: Logger) -> ServiceGroup {
        // snippet: docs/integrations.md
        let group = ServiceGroup(services: [RecallCacheService(caches: [cache], logger: logger)],
                                 gracefulShutdownSignals: [.sigterm], logger: logger)
        // end snippet
        return group
    }
}
