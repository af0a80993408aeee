import Dispatch
import Foundation
import Recall
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport that ignores cancellation: it answers `"late"` whatever happens to the task that
/// asked — `delay` seconds after it was asked, or, made with ``init()``, only once the test
/// calls ``release()``. Tests use it to show that Recall's time limits hold against a transport
/// that does not cooperate.
///
/// A test that races Recall against the transport should use the gated form: a delay of real
/// time is a race a busy machine can lose (the "late" answer then arrives first), a gate is not.
///
/// ```swift
/// let stubborn = StubbornTransport()          // answers when released, never before
/// defer { stubborn.release() }
/// let call = Task { try await pipeline.send(request) }
/// await stubborn.waitUntilStarted()           // the attempt is under way
/// call.cancel()
/// ```
public final class StubbornTransport: Transport {
    /// How long each answer takes, in seconds; `.infinity` for a transport made with ``init()``,
    /// which answers only once released.
    public let delay: Double

    private enum Condition {
        case started(Int)
        case idle

        func holds(started: Int, finished: Int) -> Bool {
            switch self {
            case .started(let count): started >= count
            case .idle: finished >= started
            }
        }
    }

    /// Where attempts of a transport made with ``init()`` wait.
    private let gate = Gate()

    private struct State {
        var started = 0
        var finished = 0
        /// Tests waiting for a condition on the counts.
        var waiters: [(condition: Condition, continuation: CheckedContinuation<Void, Never>)] = []

        /// Takes the waiters whose condition now holds.
        mutating func ready() -> [CheckedContinuation<Void, Never>] {
            let (started, finished) = (self.started, self.finished)
            let ready = waiters.filter { $0.condition.holds(started: started, finished: finished) }.map(\.continuation)
            waiters.removeAll { $0.condition.holds(started: started, finished: finished) }
            return ready
        }
    }

    private let state = Locked(State())

    /// A transport answering after `delay` seconds of real time.
    public init(seconds delay: Double) {
        self.delay = delay
    }

    /// A transport whose attempts answer only once ``release()`` is called (and at once after
    /// that): nothing a busy machine does can make the answer come first.
    public init() {
        self.delay = .infinity
    }

    /// Attempts started so far.
    public var started: Int { state.withLock { $0.started } }
    /// Attempts that have answered so far (late or not).
    public var finished: Int { state.withLock { $0.finished } }

    /// Waits `delay` seconds, or until released, ignoring cancellation; then answers `200 late`.
    public func send(_ request: URLRequest) async throws -> RecallResponse {
        resume(
            state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.started += 1
                return state.ready()
            })
        if delay.isFinite {
            let delay = self.delay
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + delay) { done.resume() }
            }
        } else {
            await gate.wait()
        }
        resume(
            state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.finished += 1
                return state.ready()
            })
        return .text("late")
    }

    /// Opens the gate of a transport made with ``init()``: every attempt held answers now, and
    /// later ones at once. Releasing twice does nothing more; a delayed transport ignores it.
    public func release() {
        gate.open()
    }

    /// Suspends until at least `count` attempts have started (they are then under way, held or
    /// waiting out their delay). No time limit of its own: the test's time limit bounds it.
    public func waitUntilStarted(_ count: Int = 1) async {
        await wait(for: .started(count))
    }

    /// Suspends until every attempt started so far has answered. No time limit of its own: the
    /// test's time limit bounds it (a gated transport must be released first).
    public func waitUntilIdle() async {
        await wait(for: .idle)
    }

    private func wait(for condition: Condition) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if condition.holds(started: state.started, finished: state.finished) { return true }
                state.waiters.append((condition, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func resume(_ continuations: [CheckedContinuation<Void, Never>]) {
        for continuation in continuations { continuation.resume() }
    }
}
