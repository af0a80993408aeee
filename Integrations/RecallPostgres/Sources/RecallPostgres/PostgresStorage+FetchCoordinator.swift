import Recall

/// A ``PostgresStorage`` is also the fleet's ``/Recall/FetchCoordinator``: claims of fetches in
/// `recall_leases`, waits for another replica's claim, releases (its `FleetCoordination`).
extension PostgresStorage: FetchCoordinator {
    /// Claims the fetch `name` for ``Configuration/leaseTime``; `true` also when the database
    /// cannot say (fetching twice beats not fetching). Renewed every third of the lease while
    /// the fetch is under way, for ``Configuration/longestFetch`` at most.
    public func claim(_ name: String) async -> Bool {
        await fleet.claim(name, storingUnder: nil).isClaimed
    }

    /// Claims as ``claim(_:)`` does; while the claim holds, the store under `key` (its answer)
    /// gets ``Configuration/coordinationTimeout`` and goes on during a pause. The claim also says
    /// whether a record may be under `key` now (one is, or the claim's statement saw a claim on
    /// `name` that may have stored since): the read that follows is then patient, or a miss
    /// without a round trip (``bytes(for:lookup:)``).
    public func claim(_ name: String, storingUnder key: String) async -> FetchClaim {
        await fleet.claim(name, storingUnder: key)
    }

    /// Waits until the claim on `name` is released or lapses, checking every
    /// ``Configuration/leasePoll`` — while its holder renews it, as long as the holder may
    /// (``Configuration/longestFetch``, plus a lease).
    public func wait(for name: String) async {
        _ = await fleet.wait(for: name, orStoreOf: nil)
    }

    /// Waits as ``wait(for:)`` does, or until another replica announces a store under `key`
    /// (its notification, which this process's listener hears): the claim's holder stored its
    /// answer, even if its release is late or lost. The read that follows is patient
    /// (``bytes(for:lookup:)``).
    public func wait(for name: String, orStoreOf key: String) async -> RecordLookup {
        await fleet.wait(for: name, orStoreOf: key)
    }

    /// Releases this process's claim on `name`.
    public func release(_ name: String) async {
        await fleet.release(name)
    }
}
