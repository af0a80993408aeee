/// One attempt raced against its time limit and the caller's cancellation, so that the caller
/// gets its answer at the limit **whatever the transport does** — also a transport that ignores
/// cancellation and answers seconds later.
///
/// A transport that claims ``Transport/respondsToCancellation`` runs in the caller's task (with a
/// timer child task when there is a timeout, ``runCooperative(timeout:time:_:)``): cancelling it
/// is enough. Any other transport runs in a task of its own (``run(timeout:time:_:)``). The first of three events answers the caller:
/// the attempt's outcome, the timer (``AttemptRace/TimedOut``), or the caller's cancellation
/// (`CancellationError`). The attempt is then cancelled and left to finish in the background;
/// its late result is dropped (nothing keeps it: the race holds no reference once answered).
/// Transport wrappers that keep books on attempts (``CircuitBreakerTransport``) hear of the cut
/// through ``AttemptCut`` at the moment it happens, not when the transport gets round to returning.
struct AttemptRace: Sendable {
    /// Thrown when the attempt's time limit passed first.
    struct TimedOut: Error {}

    /// Runs `send` within `timeout` (none when `nil`) measured on `time`.
    static func run<Value: Sendable>(
        timeout: Duration?, time: TimeSource,
        _ send: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        if let timeout, timeout <= .zero { throw TimedOut() }
        let answer = Answer<Value>()
        let cut = AttemptCut()
        let work = TaskCensus.task {
            let result: Result<Value, any Error>
            do {
                result = .success(try await AttemptCut.$current.withValue(cut) { try await send() })
            } catch {
                result = .failure(error)
            }
            answer.finish(with: result)
        }
        let timer = timeout.map { timeout in
            TaskCensus.task {
                do { try await time.sleep(for: timeout) } catch { return }  // cancelled: the attempt answered first
                // The breaker hears of the cut before the caller resumes and may start another attempt.
                answer.finish(with: .failure(TimedOut())) { cut.cut(.timedOut) }
            }
        }
        defer { timer?.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { answer.wait($0) }
            } onCancel: {
                answer.finish(with: .failure(CancellationError())) { cut.cut(.cancelled) }
            }
        } catch {
            work.cancel()  // timed out or cancelled: stop a transport that listens; one that does not finishes unheard
            throw error
        }
    }

    /// Runs `send` — of a transport that returns promptly once cancelled — within `timeout`, as
    /// a child task racing a timer: the loser is cancelled and, the transport being prompt, the
    /// group ends at once. A transport wrapper hears of the cut through ``AttemptCut`` first.
    static func runCooperative(
        timeout: Duration, time: TimeSource,
        _ send: @escaping @Sendable () async throws -> RecallResponse
    ) async throws -> RecallResponse {
        guard timeout > .zero else { throw TimedOut() }
        let cut = AttemptCut()
        return try await withThrowingTaskGroup(of: RecallResponse.self) { group in
            group.addTask { try await AttemptCut.$current.withValue(cut) { try await send() } }
            group.addTask {
                try await time.sleep(for: timeout)
                cut.cut(.timedOut)
                throw TimedOut()
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// The first outcome, handed to the waiting caller once.
    private final class Answer<Value: Sendable>: Sendable {
        private enum State {
            case empty
            case waiting(CheckedContinuation<Value, any Error>)
            case finished(Result<Value, any Error>?)
        }

        private let state = Locked(State.empty)

        /// Takes the caller's continuation; resumes it at once when the outcome is in.
        func wait(_ continuation: CheckedContinuation<Value, any Error>) {
            let ready = state.withLock { state -> Result<Value, any Error>? in
                switch state {
                case .empty:
                    state = .waiting(continuation)
                    return nil
                case .finished(let result):
                    state = .finished(nil)
                    return result
                case .waiting:
                    preconditionFailure("an attempt race is awaited once")
                }
            }
            if let ready { continuation.resume(with: ready) }
        }

        /// Records `result` unless another outcome came first; when it is the answer, runs
        /// `claimed` and then resumes the caller, so that what `claimed` does happens first.
        func finish(with result: Result<Value, any Error>, claimed: () -> Void = {}) {
            let (first, waiting) = state.withLock { state -> (Bool, CheckedContinuation<Value, any Error>?) in
                switch state {
                case .empty:
                    state = .finished(result)
                    return (true, nil)
                case .waiting(let continuation):
                    state = .finished(nil)
                    return (true, continuation)
                case .finished:
                    return (false, nil)
                }
            }
            guard first else { return }
            claimed()
            waiting?.resume(with: result)
        }
    }
}

/// Tells transport wrappers that Recall cut the attempt they are running (its per-attempt
/// timeout or the deadline fired, or the caller cancelled), at the moment it happens — the
/// transport underneath may never return. Read ``current`` when an attempt starts and register
/// with ``onCut(_:)``.
final class AttemptCut: Sendable {
    /// Why an attempt was cut.
    enum Reason: Sendable {
        /// Its time limit passed: the attempt failed.
        case timedOut
        /// The caller cancelled: the attempt says nothing of the server.
        case cancelled
    }

    /// The cut signal of the attempt running in this task, when a ``Pipeline`` runs it.
    @TaskLocal static var current: AttemptCut?

    private let state = Locked((reason: Reason?.none, handlers: [@Sendable (Reason) -> Void]()))

    /// Runs `handler` when the attempt is cut (at once if it already was).
    func onCut(_ handler: @escaping @Sendable (Reason) -> Void) {
        let already = state.withLock { state -> Reason? in
            if state.reason == nil { state.handlers.append(handler) }
            return state.reason
        }
        if let already { handler(already) }
    }

    /// Marks the attempt cut for `reason` and runs the handlers, once.
    func cut(_ reason: Reason) {
        let handlers = state.withLock { state -> [@Sendable (Reason) -> Void] in
            guard state.reason == nil else { return [] }
            state.reason = reason
            defer { state.handlers = [] }
            return state.handlers
        }
        for handler in handlers { handler(reason) }
    }
}
