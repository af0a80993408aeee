/// Reads any `Clock<Duration>` as a monotonic "time since start", so Sendable code can
/// measure intervals without knowing the clock's `Instant` type.
package struct TimeSource: Sendable {
    /// The clock being read.
    package let clock: any Clock<Duration>
    private let read: @Sendable () -> Duration

    /// Creates a time source reading `clock`; its zero is the moment of creation.
    package init(_ clock: any Clock<Duration>) {
        self.clock = clock
        self.read = Self.reader(clock)
    }

    /// The time elapsed on the clock since this source was created.
    package func now() -> Duration { read() }

    /// Waits `duration` on the clock (returns at once for zero or less).
    package func sleep(for duration: Duration) async throws {
        if duration > .zero { try await clock.sleep(for: duration) }
    }

    private static func reader<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }
}
