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
    static func run(timeout: Duration?, time: TimeSource, _ send: @escaping @Sendable () async throws -> Response) async throws -> Response {
        if let timeout, timeout <= .zero { throw TimedOut() }
        let answer = Answer()
        let cut = AttemptCut()
        let work = Task {
            let result: Result<Response, any Error>
            do {
                result = .success(try await AttemptCut.$current.withValue(cut) { try await send() })
            } catch {
                result = .failure(error)
            }
            answer.finish(with: result)
        }
        let timer = timeout.map { timeout in
            Task {
                do { try await time.sleep(for: timeout) } catch { return } // cancelled: the attempt answered first
                if answer.finish(with: .failure(TimedOut())) { cut.cut() }
            }
        }
        defer { timer?.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { answer.wait($0) }
            } onCancel: {
                answer.finish(with: .failure(CancellationError()))
            }
        } catch {
            work.cancel() // timed out or cancelled: stop a transport that listens; one that does not finishes unheard
            throw error
        }
    }

    /// Runs `send` — of a transport that returns promptly once cancelled — within `timeout`, as
    /// a child task racing a timer: the loser is cancelled and, the transport being prompt, the
    /// group ends at once. A transport wrapper hears of the cut through ``AttemptCut`` first.
    static func runCooperative(timeout: Duration, time: TimeSource,
                               _ send: @escaping @Sendable () async throws -> Response) async throws -> Response {
        guard timeout > .zero else { throw TimedOut() }
        let cut = AttemptCut()
        return try await withThrowingTaskGroup(of: Response.self) { group in
            group.addTask { try await AttemptCut.$current.withValue(cut) { try await send() } }
            group.addTask {
                try await time.sleep(for: timeout)
                cut.cut()
                throw TimedOut()
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// The first outcome, handed to the waiting caller once.
    private final class Answer: Sendable {
        private enum State {
            case empty
            case waiting(CheckedContinuation<Response, any Error>)
            case finished(Result<Response, any Error>?)
        }

        private let state = Locked(State.empty)

        /// Takes the caller's continuation; resumes it at once when the outcome is in.
        func wait(_ continuation: CheckedContinuation<Response, any Error>) {
            let ready = state.withLock { state -> Result<Response, any Error>? in
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

        /// Records `result` unless another outcome came first; `true` when it is the answer.
        @discardableResult
        func finish(with result: Result<Response, any Error>) -> Bool {
            let (first, waiting) = state.withLock { state -> (Bool, CheckedContinuation<Response, any Error>?) in
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
            waiting?.resume(with: result)
            return first
        }
    }
}

/// Tells transport wrappers that Recall cut the attempt they are running (its per-attempt
/// timeout or the deadline fired), at the moment it happens — the transport underneath may
/// never return. Read ``current`` when an attempt starts and register with ``onCut(_:)``.
final class AttemptCut: Sendable {
    /// The cut signal of the attempt running in this task, when a ``Pipeline`` runs it.
    @TaskLocal static var current: AttemptCut?

    private let state = Locked((cut: false, handlers: [@Sendable () -> Void]()))

    /// Runs `handler` when the attempt is cut (at once if it already was).
    func onCut(_ handler: @escaping @Sendable () -> Void) {
        let already = state.withLock { state -> Bool in
            if !state.cut { state.handlers.append(handler) }
            return state.cut
        }
        if already { handler() }
    }

    /// Marks the attempt cut and runs the handlers, once.
    func cut() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.cut else { return [] }
            state.cut = true
            defer { state.handlers = [] }
            return state.handlers
        }
        for handler in handlers { handler() }
    }
}
