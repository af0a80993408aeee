import NIOCore
import NIOPosix
import Synchronization

/// Runs database work within a time limit: the caller gets the answer, or
/// ``PostgresStorageError/timedOut(_:)`` when the limit passes first (the work is then cancelled
/// and left to finish on its own), or the error of its cancellation. A slow database costs a
/// request at most the limit.
///
/// The work runs in a task of its own; the limit is a timer on one of NIO's event loops (the
/// ones PostgresNIO's connections run on), not a sleeping task: a task per limit cost a hit
/// about 15 µs and a sixth of the throughput (docs/benchmarks.md, "Next to pgbench").
enum Deadline {
    static func run<Value: Sendable>(
        within limit: Duration,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let race = Race<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation, limit: limit, operation)
            }
        } onCancel: {
            race.finish(with: .failure(CancellationError()))
        }
    }

    /// The work, the timer and the caller: whichever ends first answers; the others are cancelled.
    private final class Race<Value: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Value, any Error>?
            var work: Task<Void, Never>?
            var timer: Timer?
            var finished = false
            var pending: Result<Value, any Error>?
        }

        private let state = Mutex(State())

        func start(
            _ continuation: CheckedContinuation<Value, any Error>, limit: Duration,
            _ operation: @escaping @Sendable () async throws -> Value
        ) {
            // A cancellation that came before the continuation existed answers at once.
            if let early = state.withLock({ state -> Result<Value, any Error>? in
                if state.finished { return state.pending ?? .failure(CancellationError()) }
                state.continuation = continuation
                return nil
            }) {
                continuation.resume(with: early)
                return
            }
            let work = Task {
                do { self.finish(with: .success(try await operation())) } catch { self.finish(with: .failure(error)) }
            }
            let timer = Timer(after: limit) { self.finish(with: .failure(PostgresStorageError.timedOut(limit))) }
            let late = state.withLock { state -> Bool in
                state.work = work
                state.timer = timer
                return state.finished
            }
            if late { work.cancel(); timer.cancel() }
        }

        func finish(with result: Result<Value, any Error>) {
            let (continuation, work, timer) = state.withLock { state -> (CheckedContinuation<Value, any Error>?, Task<Void, Never>?, Timer?) in
                guard !state.finished else { return (nil, nil, nil) }
                state.finished = true
                if state.continuation == nil { state.pending = result }
                defer { state.continuation = nil }
                return (state.continuation, state.work, state.timer)
            }
            work?.cancel()
            timer?.cancel()
            continuation?.resume(with: result)
        }
    }

    /// Calls `action` after `delay`: on one of NIO's shared event loops (cheap to schedule and to
    /// cancel), or — when the application turned NIO's singletons off — in a sleeping task.
    private struct Timer: Sendable {
        private let scheduled: Scheduled<Void>?
        private let task: Task<Void, Never>?

        init(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
            if NIOSingletons.singletonsEnabledSuggestion {
                scheduled = NIOSingletons.posixEventLoopGroup.any().scheduleTask(in: TimeAmount(delay), action)
                task = nil
            } else {
                scheduled = nil
                task = Task {
                    try? await Task.sleep(for: delay)
                    if !Task.isCancelled { action() }
                }
            }
        }

        func cancel() {
            scheduled?.cancel()
            task?.cancel()
        }
    }
}

extension TimeAmount {
    /// `duration`, to the nanosecond (saturating: a limit of centuries is "never").
    init(_ duration: Duration) {
        let (seconds, overflow) = duration.components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (nanoseconds, overflowAgain) = seconds.addingReportingOverflow(duration.components.attoseconds / 1_000_000_000)
        self = .nanoseconds(overflow || overflowAgain ? (duration < .zero ? .min : .max) : nanoseconds)
    }
}
