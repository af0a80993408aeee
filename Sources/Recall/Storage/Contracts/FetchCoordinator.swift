/// Lets the processes that share one storage (replicas of a service on one database) fetch a
/// missing response **once for all of them**: the first to miss claims the fetch, the others
/// wait until it has stored the answer, then read it — the cross-process form of the
/// coalescing ``HTTPCache`` does inside one process.
///
/// Give one to ``HTTPCache/init(storage:configuration:coordinator:now:)``. The cache asks it only
/// when a miss (or a revalidation) would go to the origin and no request of this process leads
/// that fetch already, so a process holds at most one claim per request key.
///
/// ```swift
/// let storage = try await PostgresStorage.open(client: client)   // RecallPostgres
/// let cache = HTTPCache(storage: storage, coordinator: storage)
/// ```
///
/// Implementations must bound everything: a claim lapses by itself after a lease time unless
/// its live holder renews it while its fetch is under way (a process that crashed while holding
/// one blocks nobody for longer than a lease; a slow fetch holds it, for a bounded time),
/// ``wait(for:)`` returns when the claim ends and within that bound at the latest, and a
/// coordinator that cannot reach its backend answers `true` from ``claim(_:)`` at once
/// (fetching twice is better than not at all).
public protocol FetchCoordinator: Sendable {
    /// Claims the fetch named `name` (an opaque keyed hash of the request: its key and header
    /// fields). `true`: this process fetches, stores, then calls ``release(_:)``. `false`:
    /// another process holds the claim; call ``wait(for:)``.
    func claim(_ name: String) async -> Bool
    /// Claims as ``claim(_:)`` does, naming the storage key the fetch's answer will be stored
    /// under: a coordinator may give that store the patience the other processes' wait for it
    /// deserves, and say how the cache reads the key's record next (``FetchClaim/claimed(then:)``:
    /// a coordinator that is also the storage may know it holds nothing). The cache calls this
    /// one; the default calls ``claim(_:)`` and says nothing of the read (``RecordLookup/usual``).
    func claim(_ name: String, storingUnder key: String) async -> FetchClaim
    /// Returns when the claim on `name` is released or has lapsed (or the wait's own bound
    /// passed, or the task was cancelled).
    func wait(for name: String) async
    /// Returns as ``wait(for:)`` does, or earlier when a response is stored under the storage key
    /// `key` (the one the claimed fetch will store under) by another process: the answer is
    /// there even if the claim's release is late or lost. Answers how the cache reads the key's
    /// record next (``RecordLookup/patient``: the fleet waited for what is there). The cache calls
    /// this one; the default waits for the claim alone and answers ``RecordLookup/usual``.
    func wait(for name: String, orStoreOf key: String) async -> RecordLookup
    /// Releases this process's claim on `name`, after what it fetched is stored.
    func release(_ name: String) async
}

extension FetchCoordinator {
    /// Claims by name alone (``claim(_:)``); the read after it as usual.
    public func claim(_ name: String, storingUnder key: String) async -> FetchClaim {
        await claim(name) ? .claimed(then: .usual) : .heldElsewhere
    }

    /// Waits for the claim alone (``wait(for:)``); the read after it as usual.
    public func wait(for name: String, orStoreOf key: String) async -> RecordLookup {
        await wait(for: name)
        return .usual
    }
}
