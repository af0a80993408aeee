import Foundation
import Synchronization

/// Runs a blocking read (of a request body stream) on a thread of its own and hands its result
/// to an `async` caller.
///
/// Not on Dispatch's global pool: on Linux that pool also runs Swift concurrency's executor, and
/// reads that block until a slow writer writes (or forever) took its threads from every task in
/// the process. A thread per streamed body costs a stack while the read lasts and nothing else.
/// Cancelling the caller answers it at once with `CancellationError`; the read sees
/// `shouldStop` turn true at its next chunk, stops and closes its stream.
enum BodyStreamReader {
    /// Runs `read` on a new thread; `read` is given a check to call between chunks.
    static func run<Value: Sendable>(_ read: @escaping @Sendable (_ shouldStop: () -> Bool) throws -> Value) async throws -> Value {
        let stopped = Atomic<Bool>(false)
        let answer = OneAnswer<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                answer.set(continuation)
                let thread = Thread {
                    let result = Result { try read { stopped.load(ordering: .relaxed) } }
                    answer.resume(with: result)
                }
                thread.name = "recall.body-stream"
                thread.start()
            }
        } onCancel: {
            stopped.store(true, ordering: .relaxed)
            answer.resume(with: .failure(CancellationError()))
        }
    }

    /// A continuation resumed once, by whichever comes first (the read or the cancellation),
    /// also when the cancellation comes before the continuation is set.
    private final class OneAnswer<Value: Sendable>: Sendable {
        private let state = Locked<(continuation: CheckedContinuation<Value, any Error>?, early: Result<Value, any Error>?, done: Bool)>((nil, nil, false))

        func set(_ continuation: CheckedContinuation<Value, any Error>) {
            let early = state.withLock { state -> Result<Value, any Error>? in
                guard let early = state.early else {
                    state.continuation = continuation
                    return nil
                }
                return early
            }
            if let early { continuation.resume(with: early) }
        }

        func resume(with result: Result<Value, any Error>) {
            let continuation = state.withLock { state -> CheckedContinuation<Value, any Error>? in
                guard !state.done else { return nil }
                state.done = true
                guard let continuation = state.continuation else {
                    state.early = result
                    return nil
                }
                state.continuation = nil
                return continuation
            }
            continuation?.resume(with: result)
        }
    }
}
