import Synchronization

/// Lookups waiting on one of ``ConnectionLanes``' connections, to go down it as one statement:
/// the first (slot 0) leads — it waits for its turn (a statement of the lane finished), sends the
/// batch, and hands each of the others its answer (they wait in ``answer(_:)``).
final class LookupBatch: Sendable {
    typealias Row = PostgresStatements.Lookup.Row

    private struct State {
        var turned = false
        var leader: CheckedContinuation<Void, Never>?
        /// Answers delivered before their lookup waited for them, and lookups waiting, by slot.
        var answers: [Int: Result<Row?, any Error>] = [:]
        var waiting: [Int: CheckedContinuation<Row?, any Error>] = [:]
    }

    private let state = Mutex(State())

    /// The leader: returns once ``turn()`` was called (before or after).
    func waitForTurn() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.turned { return true }
                state.leader = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// A statement of the lane finished: the leader may send (once; later calls do nothing).
    func turn() {
        let leader = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.turned else { return nil }
            state.turned = true
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

    /// The leader hands out `answers`, by slot (its own, slot 0, it keeps).
    func deliver(_ answers: [Result<Row?, any Error>]) {
        let waiting = state.withLock { state -> [(CheckedContinuation<Row?, any Error>, Result<Row?, any Error>)] in
            var ready: [(CheckedContinuation<Row?, any Error>, Result<Row?, any Error>)] = []
            for (slot, answer) in answers.enumerated().dropFirst() {
                if let continuation = state.waiting.removeValue(forKey: slot) {
                    ready.append((continuation, answer))
                } else {
                    state.answers[slot] = answer
                }
            }
            return ready
        }
        for (continuation, answer) in waiting { continuation.resume(with: answer) }
    }
}
