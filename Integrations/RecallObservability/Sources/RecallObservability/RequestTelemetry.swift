import Recall
import Synchronization
import Tracing

/// What ``RecallTelemetry`` keeps for one logical request, in its ``/Recall/RecallContext``.
final class RequestTelemetry: Sendable {
    struct State {
        var span: (any Span)?
        var attempt: (any Span)?
        var cacheResult: String?
    }

    let start: ContinuousClock.Instant
    let state = Mutex(State())

    init(start: ContinuousClock.Instant) {
        self.start = start
    }
}
