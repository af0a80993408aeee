import Foundation
import Recall

/// A gate tests open to let waiting work go on: code under test waits at ``wait()`` until the
/// test calls ``open()`` (and passes straight through after that). Orders events without time.
final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// How many are waiting at the gate now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits until the gate is open.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let passes = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if passes { continuation.resume() }
        }
    }

    /// Opens the gate: everyone waiting goes on, and so does everyone who comes later.
    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

/// Waits until `condition` holds, yielding between looks. It is not a timing: the test does not
/// depend on how long it takes. A bound of `seconds` (generous, for a machine whose cores are
/// busy) turns a condition that never comes into a failure instead of a hang.
func waitUntil(_ what: String, seconds: Double = 60, _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        if ContinuousClock.now > deadline { throw WaitTimedOut(what: what) }
        try await Task.sleep(for: .microseconds(200))
    }
}

/// A condition that ``waitUntil(_:seconds:_:)`` waited for in vain.
struct WaitTimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "waited in vain for \(what)" }
}
