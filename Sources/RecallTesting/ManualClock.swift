import Recall

/// A `Clock` whose time moves only when a test says so, for retry and freshness tests that
/// never sleep for real.
///
/// ```swift
/// let clock = ManualClock()
/// async let response = pipeline.send(request)   // the retrier waits on `clock`
/// await clock.waitForSleepers(1)
/// clock.advance(by: .seconds(2))
/// ```
///
/// With `autoAdvance: true` every sleep returns at once and moves the time to its deadline,
/// which runs a whole retry loop instantly; ``sleeps`` records every wait requested.
public final class ManualClock: Clock, Sendable {
    /// A point on a manual clock: the time since the clock was made.
    public struct Instant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
        /// The time since the clock's zero.
        public var offset: Duration

        /// Creates an instant `offset` after the clock's zero.
        public init(offset: Duration) { self.offset = offset }

        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }

        /// The duration from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }

        /// Orders instants by offset.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }

        /// The offset, such as `2.5 seconds`.
        public var description: String { "\(offset)" }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var sleeps: [Duration] = []
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())
    private let autoAdvance: Bool

    /// Creates a clock at zero. With `autoAdvance`, sleeps complete at once and move time forward.
    public init(autoAdvance: Bool = false) {
        self.autoAdvance = autoAdvance
    }

    /// The current time.
    public var now: Instant { state.withLock { $0.now } }

    /// Zero: a manual clock is exact.
    public var minimumResolution: Duration { .zero }

    /// Every sleep requested so far, as a duration from the time it was requested.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// How many tasks are sleeping on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Suspends until `deadline` is reached by ``advance(by:)``, or the task is cancelled
    /// (then throws `CancellationError`).
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = state.withLock { state in
                    state.sleeps.append(state.now.duration(to: deadline))
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    if autoAdvance {
                        state.now = deadline
                        return .success(())
                    }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let resume { continuation.resume(with: resume) } else { notifyWaiters() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration` and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due.sorted(by: { $0.deadline < $1.deadline }) {
            sleeper.continuation.resume()
        }
    }

    /// Suspends until at least `count` tasks sleep on this clock, so a test can advance time
    /// exactly when the code under test waits.
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.sleepers.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func notifyWaiters() {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let count = state.sleepers.count
            let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
            state.waiters.removeAll { $0.count <= count }
            return ready
        }
        ready.forEach { $0.resume() }
    }
}
