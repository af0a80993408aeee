/// The clock a ``PostgresStorage`` keeps its own schedule on — lease renewals, waits for another
/// replica's claim, pauses, probes, the listener's heartbeat and reconnections, passes that
/// cancel statements that ran too long — read as the time since the storage opened, so any
/// `Clock<Duration>` serves (a `ManualClock` in tests, which then move time instead of waiting
/// for it). A statement's own time limit is not on it: that is a timer of the connection's event
/// loop, on real time (``Deadline``).
struct StorageClock: Sendable {
    private let read: @Sendable () -> Duration
    private let wait: @Sendable (Duration) async throws -> Void

    /// Reads `clock`; its zero is the moment of creation.
    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        read = { start.duration(to: clock.now) }
        wait = { try await clock.sleep(for: $0) }
    }

    /// The time since the clock was made.
    var now: Duration { read() }

    /// Waits `duration` on the clock; throws when the task is cancelled.
    func sleep(for duration: Duration) async throws {
        try await wait(duration)
    }
}
