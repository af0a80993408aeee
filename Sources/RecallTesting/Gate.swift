import Recall

/// A gate tests open to let waiting work go on: code under test waits at ``wait()`` until the
/// test calls ``open()`` (and passes straight through after that). Orders events without time.
public final class Gate: Sendable {
    /// A closed gate.
    public init() {}

    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// How many are waiting at the gate now.
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits until the gate is open.
    public func wait() async {
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
    public func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}
