import Synchronization

/// Lookups waiting on one of ``ConnectionLanes``' connections, to go down it as one statement:
/// the first (slot 0) leads — it waits for its turn (a statement of the lane finished), takes the
/// keys (``close()``: no one joins after), sends them, and hands each of the others its answer
/// as its row arrives (they wait in ``answer(_:)``).
final class LookupBatch: Sendable {
    typealias Row = PostgresStatements.Lookup.Row

    /// The most keys one statement carries: a batch is a shared fate (one slow record or one
    /// failure reaches all of it), so it stays small.
    static let limit = 32

    private struct State {
        var keys: [String] = []
        var closed = false
        var turned = false, late = false
        var leader: CheckedContinuation<Void, Never>?
        /// Answers delivered before their lookup waited for them, and lookups waiting, by slot.
        var answers: [Int: Result<Row?, any Error>] = [:]
        var waiting: [Int: CheckedContinuation<Row?, any Error>] = [:]
    }

    private let state = Mutex(State())

    /// Adds `key`; its slot, or nil when the batch is full or already taken.
    func join(_ key: String) -> Int? {
        state.withLock { state in
            guard !state.closed, state.keys.count < Self.limit else { return nil }
            state.keys.append(key)
            return state.keys.count - 1
        }
    }

    /// The leader takes the keys: no one joins after.
    func close() -> [String] {
        state.withLock { state in
            state.closed = true
            return state.keys
        }
    }

    /// The leader: returns once ``turn(late:)`` was called (before or after), and whether late.
    func waitForTurn() async -> Bool {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.turned { return true }
                state.leader = continuation
                return false
            }
            if now { continuation.resume() }
        }
        return state.withLock { $0.late }
    }

    /// The leader may send: a statement of the lane finished, the lane's connection changed, or
    /// (`late`) the wait went on too long (the first call counts; later ones do nothing).
    func turn(late: Bool = false) {
        let leader = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.turned else { return nil }
            state.turned = true
            state.late = late
            defer { state.leader = nil }
            return state.leader
        }
        leader?.resume()
    }

    /// The answer for the lookup at `slot` (after the first), once the leader delivers it.
    func answer(_ slot: Int) async throws -> Row? {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<Row?, any Error>? in
                if let answer = state.answers.removeValue(forKey: slot) { return answer }
                state.waiting[slot] = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    /// The leader hands `answer` to the lookup at `slot` (slot 0, its own, is not delivered).
    func deliver(_ answer: Result<Row?, any Error>, to slot: Int) {
        guard slot > 0 else { return }
        let waiting = state.withLock { state -> CheckedContinuation<Row?, any Error>? in
            if let continuation = state.waiting.removeValue(forKey: slot) { return continuation }
            state.answers[slot] = answer
            return nil
        }
        waiting?.resume(with: answer)
    }
}
