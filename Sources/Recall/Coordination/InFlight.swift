/// One origin request that other requests wait for (coalescing), resumed when it finishes.
final class InFlight: Sendable {
    private struct State {
        var finished = false
        var nextID = 0
        var waiters: [Int: Waiter] = [:]
    }

    private struct Waiter {
        let continuation: CheckedContinuation<Bool, Never>
        /// Whether ``handOff()`` may choose it (not a task that only waits for the end,
        /// ``waitUntilFinished()``).
        let mayLead: Bool
    }

    private let state = Locked(State())

    /// Waits until ``finish()`` is called, or the waiting task is cancelled (then `false`), or
    /// ``handOff()`` chose this waiter (then `true`: it leads now, and must finish or hand on).
    func wait() async -> Bool {
        await wait(mayLead: true)
    }

    /// Waits until ``finish()`` is called, or the waiting task is cancelled, and is never chosen
    /// by ``handOff()``: for a task that waits for the flight's end but would not fetch in its
    /// place (``RequestCoalescer/waitForAll()``: chosen, it would lead nothing and leave the
    /// followers waiting for good).
    func waitUntilFinished() async {
        _ = await wait(mayLead: false)
    }

    private func wait(mayLead: Bool) async -> Bool {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.finished || Task.isCancelled { return true }
                    state.waiters[id] = Waiter(continuation: continuation, mayLead: mayLead)
                    return false
                }
                if resumeNow { continuation.resume(returning: false) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
        }
    }

    /// The requests waiting now.
    var waiters: Int { state.withLock { $0.waiters.count } }

    /// Resumes every waiter, now and later.
    func finish() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.finished = true
            defer { state.waiters.removeAll() }
            return state.waiters.values.map(\.continuation)
        }
        waiters.forEach { $0.resume(returning: false) }
    }

    /// Resumes the longest-waiting waiter that may lead alone, as the new leader (its
    /// ``wait()`` returns `true`); the others go on waiting. `false` when no such waiter waits
    /// (or it has finished).
    func handOff() -> Bool {
        let chosen = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard !state.finished, let first = state.waiters.lazy.filter(\.value.mayLead).map(\.key).min() else { return nil }
            return state.waiters.removeValue(forKey: first)?.continuation
        }
        chosen?.resume(returning: true)
        return chosen != nil
    }
}
