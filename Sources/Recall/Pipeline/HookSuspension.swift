/// The rest of a hook's decision, after a suspension point: what the hook found before it
/// (captured by the closure) and the work that decides on it (see ``HookDecision/suspend(_:)``).
public struct HookSuspension: Sendable {
    private let decision: @Sendable () async throws -> HookAction

    /// A suspension that decides by running `decision`. The pipeline awaits it once, and a hook
    /// that wraps another must do the same: a decision may take what only one request may hold
    /// (``HTTPCache``'s lead of a shared miss, ended by its follow-up).
    public init(_ decision: @escaping @Sendable () async throws -> HookAction) {
        self.decision = decision
    }

    /// Waits for what the hook waited for, and returns what it decides.
    public func resume() async throws -> HookAction {
        try await decision()
    }
}
