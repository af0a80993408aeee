import Foundation
import Logging
import Recall
import Synchronization

/// The fleet's fetch coordination of a ``PostgresStorage`` (its ``/Recall/FetchCoordinator``
/// side): claims of fetches in `recall_leases`, renewed while their fetch is under way; waits for
/// another replica's claim, which end at its release, its lapse (a take-over) or the notice of its
/// store; each answers how the cache reads the key's record next (``/Recall/RecordLookup``: the
/// cache hands it to the byte store's read, ``PostgresStorage/bytes(for:lookup:)``).
///
/// Its statements run within ``PostgresStorage/Configuration/coordinationTimeout`` (or the
/// request timeout if longer) and also during the byte store's pause. Once one fails or is cut,
/// claims are granted at once (each replica still coalesces its own requests) while a probe in
/// the background asks until the database answers again.
final class FleetCoordination: Sendable {
    private struct State {
        /// Each claim this process holds, by name: its holder token, the task renewing it, and
        /// the storage key its answer is stored under (when the cache said).
        var claims: [String: (token: UUID, renewal: Task<Void, Never>, key: String?)] = [:]
        /// Storage keys whose store is a claimed fetch's answer (how many claims).
        var claimedStores: [String: Int] = [:]
        /// The keys requests of this process wait to see stored by another replica, as notices
        /// name them (``FleetListener/noticeName(of:)``): how many wait, and how many such stores
        /// were announced since.
        var storesAwaited: [String: (waiters: Int, stores: Int)] = [:]
        /// Whether the last coordination statement answered in time; while it did not, a probe
        /// in the background asks until the database answers again.
        var answers = true, probing = false
        var shutDown = false
    }

    private let state = Mutex(State())
    private let lanes: ConnectionLanes
    private let configuration: PostgresStorage.Configuration
    private let logger: Logger
    private let clock: StorageClock
    private let counters: StorageCounters
    /// Called when a statement was cut by its time limit (its connection may hang: see
    /// ``PostgresStorage``'s reclaiming of connections).
    private let cut: @Sendable () -> Void

    init(
        lanes: ConnectionLanes, configuration: PostgresStorage.Configuration, logger: Logger, clock: StorageClock,
        counters: StorageCounters, cut: @escaping @Sendable () -> Void
    ) {
        self.lanes = lanes
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        self.counters = counters
        self.cut = cut
    }

    /// The limit of a coordination statement: ``PostgresStorage/Configuration/coordinationTimeout``,
    /// or ``PostgresStorage/Configuration/timeout`` if that is longer.
    var limit: Duration { max(configuration.timeout, configuration.coordinationTimeout) }

    /// Whether the fleet's coordination goes to the database: while its statements answer, also
    /// during a pause (a slow database that answers within the coordination limit keeps the
    /// fleet's one request per key); not after one failed, until the probe hears the database.
    var answers: Bool { state.withLock { $0.answers } }

    // MARK: Claims

    /// Claims the fetch `name` for ``PostgresStorage/Configuration/leaseTime`` — `true` also
    /// when the database cannot say (fetching twice beats not fetching) — and renews it while it
    /// is held. With `key`, the storage key its answer is stored under: the claim also says
    /// whether a record may be there now (one is, or the claim's statement saw a claim on `name`
    /// — another replica's that ended while this one was taken, a lapsed one, this process's own
    /// being released — whose holder may have stored since: ``PostgresStatements/Claim``) — the
    /// read that follows is patient (the fleet paid for what is there: a miss would fetch it
    /// again), or a miss without a round trip — and the store under `key` is patient while the
    /// claim holds (``isClaimedStore(_:)``).
    func claim(_ name: String, storingUnder key: String?) async -> FetchClaim {
        guard answers else { return .claimed(then: .usual) }
        // This process holds it already (another flight of it, its own lease lapsed): wait for that one.
        if state.withLock({ $0.claims[name] != nil }) {
            counters.count { $0.claimsHeldElsewhere += 1 }
            return .heldElsewhere
        }
        let token = UUID()
        // (A claim without a key checks an empty one, which holds nothing.)
        let statement = PostgresStatements.Claim(name: name, holder: token, leaseTime: configuration.leaseTime.seconds, key: key ?? "")
        let claimed = await coordinate({ [lanes] in try await lanes.first(statement, pooled: true) })
        guard let claimed else {
            // Cut, it may still land: give it back, so no replica waits for a fetch nobody makes.
            let release = PostgresStatements.Release(name: name, holder: token)
            Task { [lanes] in _ = await coordinate { try await lanes.run(release, pooled: true) } }
            return .claimed(then: .usual)
        }
        guard let mayBeThere = claimed else {
            counters.count { $0.claimsHeldElsewhere += 1 }
            return .heldElsewhere
        }
        let renewal = renew(name, token: token)
        state.withLock { state in
            state.claims[name] = (token, renewal, key)
            if let key { state.claimedStores[key, default: 0] += 1 }
        }
        counters.count { $0.claims += 1 }
        // (Without a key the claim checked an empty one: it says nothing of a record.)
        return .claimed(then: key == nil ? .usual : mayBeThere ? .patient : .absent)
    }

    /// Renews the claim `token` on `name` every third of the lease, until it is released, lost
    /// (it lapsed and another replica took it), or ``PostgresStorage/Configuration/longestFetch`` passed.
    private func renew(_ name: String, token: UUID) -> Task<Void, Never> {
        Task { [lanes, configuration, clock] in
            let end = clock.now + configuration.longestFetch
            let statement = PostgresStatements.Renew(name: name, holder: token, leaseTime: configuration.leaseTime.seconds)
            while true {
                do { try await clock.sleep(for: configuration.leaseTime / 3) } catch { return }
                guard !Task.isCancelled, clock.now < end else { return }
                let renewed = await coordinate { try await lanes.first(statement, pooled: true) }
                if case .some(nil) = renewed { return }  // no longer this process's claim
                if renewed != nil { counters.count { $0.claimRenewals += 1 } }
            }
        }
    }

    /// Releases this process's claim on `name`.
    func release(_ name: String) async {
        // Only this claim's row: a later claim of the same name (this one lapsed) stays.
        guard
            let claim = state.withLock({ state -> (token: UUID, renewal: Task<Void, Never>, key: String?)? in
                guard let claim = state.claims.removeValue(forKey: name) else { return nil }
                if let key = claim.key {
                    let left = (state.claimedStores[key] ?? 1) - 1
                    state.claimedStores[key] = left > 0 ? left : nil
                }
                return claim
            })
        else { return }
        claim.renewal.cancel()
        let statement = PostgresStatements.Release(name: name, holder: claim.token)
        _ = await coordinate { [lanes] in try await lanes.run(statement, pooled: true) }
    }

    /// Whether the store under `key` is the answer of a fetch this process claimed, while
    /// coordination answers: the fleet waits for it, so it is patient.
    func isClaimedStore(_ key: String) -> Bool {
        state.withLock { $0.claimedStores[key] != nil && $0.answers }
    }

    // MARK: Waits

    /// Waits until the claim on `name` is released or lapses, or — given `key` — until another
    /// replica announces a store under `key` (``heard(storeNamed:)``): the claim's holder stored
    /// its answer, even if its release is late or lost. The read of `key` that follows is
    /// patient: the fleet waited for what is there.
    func wait(for name: String, orStoreOf key: String?) async -> RecordLookup {
        guard let key else {
            await waitForClaim(name) { false }
            return .usual
        }
        let token = FleetListener.noticeName(of: key)
        let before = state.withLock { state -> Int in
            state.storesAwaited[token, default: (0, 0)].waiters += 1
            return state.storesAwaited[token]?.stores ?? 0
        }
        defer {
            state.withLock { state in
                guard let awaited = state.storesAwaited[token] else { return }
                state.storesAwaited[token] = awaited.waiters > 1 ? (awaited.waiters - 1, awaited.stores) : nil
            }
        }
        await waitForClaim(name) { state.withLock { ($0.storesAwaited[token]?.stores ?? 0) != before } }
        return .patient
    }

    /// Polls the claim on `name` every ``PostgresStorage/Configuration/leasePoll`` (less often
    /// as it goes on) until it is released or lapses, or `stored()` says the answer is there — for
    /// ``PostgresStorage/Configuration/longestFetch`` plus a lease at most, the longest a live
    /// holder keeps a claim.
    private func waitForClaim(_ name: String, stored: () -> Bool) async {
        let end = clock.now + configuration.longestFetch + configuration.leaseTime
        var poll = configuration.leasePoll
        while !Task.isCancelled, clock.now < end, answers, !stored() {
            guard
                let held = await coordinate({ [lanes] in
                    try await lanes.first(PostgresStatements.Claimed(name: name), pooled: true)
                }), held != nil
            else { return }
            do { try await clock.sleep(for: poll) } catch { return }
            // A long fetch is checked less often (its store's notice still wakes the wait at the next check).
            poll = min(poll * 2, max(configuration.leasePoll, .milliseconds(250)))
        }
    }

    /// Another replica announced a store under the key a notice names as `name`: a request of
    /// this process waiting for that replica's fetch may look now.
    func heard(storeNamed name: String) {
        state.withLock { $0.storesAwaited[name]?.stores += 1 }
    }

    // MARK: Statements

    /// Runs a statement of the fleet's coordination within ``limit``; `nil` when it failed or was
    /// cut. Its outcome says whether coordination answers; it does not count towards the request
    /// path's pause.
    func coordinate<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async -> Value? {
        do {
            let value = try await Deadline.run(within: limit, operation)
            state.withLock { $0.answers = true }
            return value
        } catch {
            if error is CancellationError { return nil }
            let probe = state.withLock { state -> Bool in
                state.answers = false
                guard !state.probing, !state.shutDown else { return false }
                state.probing = true
                return true
            }
            counters.count { $0.failures += 1 }
            if probe { Task { await self.probe() } }
            if (error as? PostgresStorageError)?.code == .timedOut { cut() }
            logger.debug("recall postgres storage: coordination: \(error)")
            return nil
        }
    }

    /// While coordination does not answer, no request waits for it (claims are granted at once):
    /// this asks the database every ``PostgresStorage/Configuration/pause``, off the request path,
    /// until it answers within the coordination limit again.
    private func probe() async {
        let statement = PostgresStatements.Claimed(name: "recall-probe")
        while !Task.isCancelled, !state.withLock({ $0.shutDown }) {
            do { try await clock.sleep(for: configuration.pause) } catch { break }
            if (try? await Deadline.run(within: limit, { [lanes] in try await lanes.first(statement, pooled: true) })) != nil { break }
        }
        state.withLock { state in
            state.answers = true
            state.probing = false
        }
    }

    /// Stops renewing the claims this process holds (they lapse a lease later) and probing.
    func shutdown() {
        state.withLock { state in
            state.shutDown = true
            for claim in state.claims.values { claim.renewal.cancel() }
        }
    }
}
