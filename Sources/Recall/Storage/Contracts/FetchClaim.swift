/// What a claim on a fetch answers (``FetchCoordinator/claim(_:storingUnder:)``).
public enum FetchClaim: Sendable, Equatable {
    /// This process fetches: it stores the answer, then calls ``FetchCoordinator/release(_:)``.
    /// `then`: how the cache reads the key's record again before it sends (another process may
    /// have stored it since this one looked).
    case claimed(then: RecordLookup)
    /// Another process holds the claim: wait for it (``FetchCoordinator/wait(for:orStoreOf:)``).
    case heldElsewhere

    /// Whether this process fetches.
    public var isClaimed: Bool {
        if case .claimed = self { return true }
        return false
    }
}
