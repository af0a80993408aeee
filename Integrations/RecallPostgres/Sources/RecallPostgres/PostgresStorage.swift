import Foundation
import Logging
import PostgresNIO
import Recall
import Synchronization

/// Recall's fleet storage: cache records in one PostgreSQL table that every replica of a service
/// shares. A response one replica stored is a hit in the others, an invalidation in one is seen
/// by all on their next lookup, and (as the cache's ``/Recall/FetchCoordinator``) concurrent
/// misses on one key across replicas cost the origin one request.
///
/// ```swift
/// let client = PostgresClient(configuration: .init(host: "db", username: "app", password: nil, database: "app", tls: .disable))
/// let run = Task { await client.run() }                          // the client is yours: run it, cancel it at exit
/// let storage = try await PostgresStorage.open(client: client)    // creates or migrates the tables
/// let cache = HTTPCache(storage: storage.withMemoryTier(), coordinator: storage)
/// // … at exit:
/// await storage.shutdown()
/// run.cancel()
/// ```
///
/// - **Schema** (version 2, created or migrated by ``open(client:configuration:logger:clock:)``): see
///   docs/scale-out.md. Every request-path statement is a named prepared statement.
/// - **Bounded**: past ``Configuration/maxBytes`` or ``Configuration/maxEntries``, a
///   maintenance pass (every ``Configuration/maintenanceInterval`` stores of this process, in the
///   background, or ``maintain()``) removes entries that can no longer be served, then evicts
///   the least recently used in batches — those used since the previous pass get a second
///   chance. Nothing on the request path scans the table.
/// - **The database failing never fails a request**: each operation is cut after
///   ``Configuration/timeout``; a lookup that fails or is cut is a miss, a store is dropped and
///   counted. After ``Configuration/failuresToPause`` failures in a row the storage stops asking
///   the database for ``Configuration/pause`` (lookups are immediate misses), then tries again:
///   it recovers by itself when the database is back.
/// - **Connections**: the storage holds ``Configuration/requestConnections`` of the client's
///   connections for its lookups and stores (leasing one from the pool per statement cost a hit
///   more than its SQL); the client's `maximumConnections` must leave room for them, the listener
///   and maintenance (docs/scale-out.md, "Connections").
/// - **Bad rows** — bytes that are not a record, or a record of another key — are misses and
///   are removed (only if still the same bytes).
/// - **Memory tiers** made by ``withMemoryTier(_:)`` drop a key when any replica removes it
///   (`LISTEN`/`NOTIFY`), and drop everything when the notification connection is re-established
///   (notifications sent meanwhile are lost).
public final class PostgresStorage: CacheByteStore {
    /// The longest statement limit of each storage of this process that is open (they share the
    /// tag their statements carry, so a cancellation pass must spare the most patient one's).
    private static let openLimits = Mutex<[UUID: Duration]>([:])

    /// The longest limit of any storage open in this process.
    static func longestLimitInProcess() -> Duration {
        openLimits.withLock { $0.values.max() } ?? .seconds(2)
    }

    /// The schema version this code writes and reads.
    public static var schemaVersion: Int { PostgresSchema.version }

    /// The client statements go through (the caller runs it and owns its lifecycle).
    public let client: PostgresClient
    /// Limits and timings.
    public let configuration: Configuration
    /// The fleet's shared secret, kept in `recall_meta`: every replica hashes credentials
    /// alike, so a response stored for a user by one replica matches in the others.
    public let secret: [UInt8]

    let logger: Logger
    /// The connections the request path's statements go down.
    let lanes: ConnectionLanes
    /// This process's storage, as named in its notifications (its own are ignored).
    let instance: UUID
    /// The storage's own schedule (pauses, passes that reclaim connections; the fleet's parts
    /// keep theirs on it too).
    let clock: StorageClock
    let counters: StorageCounters
    /// The fleet's fetch coordination: claims, renewals, waits.
    let fleet: FleetCoordination
    /// The listener: the fleet's changes, told to the memory tiers.
    let listener: FleetListener
    let state = Mutex(State())

    struct State {
        var failuresInARow = 0
        /// Until when (the clock's time) the storage pauses after failures in a row.
        var pausedUntil: Duration?
        var storesSinceMaintenance = 0
        /// A maintenance pass is running (set before its task starts, cleared when it ends).
        var maintenanceRunning = false
        /// Counts passes, so a pass's task is kept only by the pass that made it.
        var maintenancePass = 0
        /// Its task, for ``PostgresStorage/shutdown()`` to wait on.
        var maintaining: Task<Void, Never>?
        /// A cancellation of statements that ran too long is under way, and another was asked for meanwhile.
        var reclaiming = false, reclaimAgain = false
        /// Keys removed while the database could not take it, to replay (see ``Configuration/pendingRemovalLimit``).
        var pendingRemovals: Set<String> = []
        var replaying = false
        /// Keys whose use is being recorded now (a hot key is touched once, not once per hit).
        var touching: Set<String> = []
        var shutDown = false

        /// Whether the storage is pausing at `now` (a pause that ended is cleared).
        mutating func pausing(at now: Duration) -> Bool {
            guard let until = pausedUntil else { return false }
            if now < until { return true }
            pausedUntil = nil
            return false
        }
    }

    private init(client: PostgresClient, configuration: Configuration, secret: [UInt8], logger: Logger, clock: StorageClock) {
        self.client = client
        self.configuration = configuration
        self.secret = secret
        self.logger = logger
        self.clock = clock
        let counters = StorageCounters(), instance = UUID()
        self.counters = counters
        self.instance = instance
        let lanes = ConnectionLanes(client: client, count: max(0, configuration.requestConnections), logger: logger)
        self.lanes = lanes
        // (The coordination's cut statements are reclaimed as the store's are; it is made before
        // the storage is whole, so it reaches the storage through a reference set just after.)
        let reclaim = ReclaimHandle()
        let fleet = FleetCoordination(
            lanes: lanes, configuration: configuration, logger: logger, clock: clock, counters: counters,
            cut: { reclaim.storage?.reclaimConnections() })
        self.fleet = fleet
        listener = FleetListener(
            client: client, configuration: configuration, logger: logger, clock: clock, counters: counters, instance: instance,
            fleet: fleet)
        reclaim.storage = self
    }

    /// Opens the storage on `client` (which must be running): creates the tables or migrates
    /// them to ``schemaVersion``, reads (or makes, once for the fleet) the shared secret, and
    /// starts listening for the fleet's invalidations — within ``Configuration/openTimeout``.
    /// `clock` keeps the storage's own schedule — lease renewals, waits for another replica's
    /// claim, pauses, the listener's heartbeat — (a `ManualClock` in tests); each statement's time
    /// limit is real time.
    /// - Throws: ``PostgresStorageError/unreachable(after:)`` when the database did not answer
    ///   within ``Configuration/openTimeout`` (down, unreachable, or the client cannot connect);
    ///   ``PostgresStorageError/schemaTooNew(found:supported:)`` when the schema is newer than
    ///   this code; the database's own error for anything else it refuses (a role without the
    ///   rights, say).
    public static func open(
        client: PostgresClient, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "recall.postgres"), clock: any Clock<Duration> = ContinuousClock()
    ) async throws -> PostgresStorage {
        let secret: [UInt8]
        do {
            secret = try await Deadline.run(within: configuration.openTimeout) {
                try await PostgresSchema.migrate(client, logger: logger)
                return try await PostgresSchema.sharedSecret(client, logger: logger)
            }
        } catch let error as PostgresStorageError where error.code == .timedOut {
            throw PostgresStorageError.unreachable(after: configuration.openTimeout)
        }
        let storage = PostgresStorage(client: client, configuration: configuration, secret: secret, logger: logger, clock: StorageClock(clock))
        openLimits.withLock { $0[storage.instance] = storage.fleet.limit }
        storage.listener.start()
        storage.lanes.start()
        await storage.refreshStatistics()
        return storage
    }

    /// A ``/Recall/TieredStorage`` with `memory` in front of this storage; removals by any
    /// replica reach `memory` (see the type's notes on memory tiers).
    public func withMemoryTier(_ memory: MemoryStorage = MemoryStorage()) -> TieredStorage {
        TieredStorage(upper: memory, lower: self)  // it subscribes to the fleet's changes
    }

    /// Stops listening and waits for a maintenance pass under way; call it before the client
    /// stops. Lookups and stores after it still work (without the memory tiers' invalidations).
    public func shutdown() async {
        let maintaining = state.withLock { state in
            state.shutDown = true
            return state.maintaining
        }
        fleet.shutdown()
        Self.openLimits.withLock { _ = $0.removeValue(forKey: instance) }
        await listener.stop()
        await maintaining?.value
        await lanes.stop()
    }

    // MARK: CacheByteStore

    /// The bytes stored under `key`, or `nil` (also when the database fails or is slow).
    public func bytes(for key: String) async -> StoredBytes? {
        await bytes(for: key, lookup: .usual)
    }

    /// The bytes stored under `key`, read as this storage's own fetch coordination said (the
    /// cache hands over what a claim or a wait answered): not at all after a claim that found
    /// nothing under the key (``/Recall/RecordLookup/absent``); patiently — within
    /// ``Configuration/coordinationTimeout`` and during a pause — after a wait for another
    /// replica's fetch or a claim that says a record may be there (``/Recall/RecordLookup/patient``:
    /// what the fleet paid for, which a miss would fetch again) while coordination answers; else
    /// as usual.
    public func bytes(for key: String, lookup: RecordLookup) async -> StoredBytes? {
        // How the read goes: not at all (nothing there, a removal of the key waits to be
        // replayed, or the storage pauses), patiently, or as usual.
        let patiently = lookup == .patient && fleet.answers  // (the fleet's lock, not inside the storage's)
        let patient = state.withLock { state -> Bool? in
            if lookup == .absent || state.pendingRemovals.contains(key) { return nil }
            if patiently { return true }
            return state.pausing(at: clock.now) ? nil : false
        }
        guard let patient else {
            counters.count { $0.misses += 1 }
            return nil
        }
        // Known before the read, so that a notice for this key while the read is under way is not lost.
        await listener.noteHeld(key)
        let statement = PostgresStatements.Lookup(
            key: key, touchInterval: configuration.touchInterval.seconds,
            maxRecordBytes: configuration.maxRecordBytes)
        let lookup: @Sendable () async throws -> PostgresStatements.Lookup.Row? = { [lanes] in
            try await lanes.lookup(statement, pooled: patient)
        }
        let row = patient ? await fleet.coordinate(lookup) : await attempt(lookup)
        guard let (storedKey, found, needsTouch) = row ?? nil, storedKey == key else {
            counters.count { $0.misses += 1 }
            return nil
        }
        guard let bytes = found else {
            // Longer than any record this storage takes: a miss, and the row goes.
            counters.count {
                $0.misses += 1; $0.corruptRemoved += 1
            }
            let removal = PostgresStatements.DeleteOversized(key: key, maxRecordBytes: configuration.maxRecordBytes)
            _ = await attempt { [lanes] in try await lanes.run(removal) }
            return nil
        }
        counters.count { $0.hits += 1 }
        let touch = needsTouch && state.withLock { $0.touching.insert(key).inserted }
        // The listener cannot vouch for notifications: the tiers over this storage must not keep what they read.
        if listener.isSilent { await listener.forgetTiers(key) }
        if touch {
            // Recorded off the request path; a touch that fails only makes eviction less exact.
            Task { [lanes] in
                _ = await attempt { try await lanes.run(PostgresStatements.Touch(key: key)) }
                _ = state.withLock { $0.touching.remove(key) }
            }
        }
        return StoredBytes(bytes)
    }

    /// Stores `data` under `key` (dropped and counted when the database fails, or when it is
    /// larger than ``Configuration/maxRecordBytes``). The row expires at `expires` (the cache's
    /// hint: nothing in it can be served after), or after ``Configuration/retention`` if that is
    /// sooner or there is no hint — plus ``Configuration/expiryMargin`` either way.
    public func write(_ data: Data, for key: String, expires: Date?) async {
        _ = await store(data, for: key, until: until(expires), ifNotRemovedSince: nil)
    }

    /// Writes as ``write(_:for:expires:)`` does, unless a replica removed a key of `mark`'s
    /// stripe (or, for a key of another stripe, any key) since `mark` was read — checked in the
    /// statement that writes (a conditional upsert; docs/scale-out.md). Whether it wrote.
    public func write(_ data: Data, for key: String, expires: Date?, ifNotRemovedSince mark: RemovalMark) async -> Bool {
        await store(data, for: key, until: until(expires), ifNotRemovedSince: mark)
    }

    /// When a row stored now with the cache's hint `expires` expires.
    private func until(_ expires: Date?) -> Date {
        let cap = Date().addingTimeInterval(configuration.retention.seconds)
        return min(expires ?? cap, cap).addingTimeInterval(configuration.expiryMargin.seconds)
    }

    /// `true`: the table counts removals (schema version 2), so that a replica never stores an

    /// `true`: the table counts removals (schema version 2), so that a replica never stores an
    /// answer older than another replica's removal of its key.
    public var countsRemovals: Bool { true }

    /// The removal counts of `key`'s stripe and of all keys now — read as the fleet's
    /// coordination is, within ``Configuration/coordinationTimeout`` and also during a pause
    /// (the answer of a claimed fetch, which other replicas wait for, is stored only against
    /// them), or, while coordination does not answer, as a lookup is. When the database cannot
    /// say, or a removal of the key waits to be replayed, a mark no count matches (stripe -2,
    /// counts -1): that answer is not stored.
    public func removalMark(for key: String) async -> RemovalMark? {
        // A removal the database has not counted yet (kept to be replayed): nothing is stored for
        // the key until it is, so no answer older than it lands after.
        guard !state.withLock({ $0.pendingRemovals.contains(key) }) else {
            return RemovalMark(stripe: -2, stripeRemovals: -1, allRemovals: -1)
        }
        let statement = PostgresStatements.RemovalCounts(key: key)
        let row: PostgresStatements.RemovalCounts.Row??
        if fleet.answers {
            row = await fleet.coordinate { [lanes] in try await lanes.first(statement, pooled: true) }
        } else {
            row = paused() ? nil : await attempt { [lanes] in try await lanes.first(statement) }
        }
        guard let (stripe, removals, all) = row ?? nil else {
            return RemovalMark(stripe: -2, stripeRemovals: -1, allRemovals: -1)
        }
        return RemovalMark(stripe: Int(stripe), stripeRemovals: removals, allRemovals: all)
    }

    /// Tells `observer` of the keys the fleet changed (another replica's store or removal, heard
    /// through `LISTEN`), `nil` when it may have missed some (the listener reconnected).
    public func subscribe(toChangesElsewhere observer: @escaping @Sendable (String?) async -> Void) {
        listener.subscribe(observer)
    }

    /// Removes the record under `key` for every replica, and from their memory tiers.
    public func remove(_ key: String) async {
        guard !paused(), await delete(key) else {
            keepRemoval(key)
            return
        }
    }

    /// Deletes `key` in the database and tells the fleet; whether it was done.
    private func delete(_ key: String) async -> Bool {
        let statement = PostgresStatements.Remove(key: key, notice: listener.notice(for: key))
        return await attempt { [lanes] in try await lanes.run(statement) } != nil
    }

    /// Keeps a removal the database could not take, to replay it when it answers again.
    private func keepRemoval(_ key: String) {
        let (kept, lost) = state.withLock { state -> (Int, Bool) in
            if state.pendingRemovals.count < configuration.pendingRemovalLimit || state.pendingRemovals.contains(key) {
                state.pendingRemovals.insert(key)
                return (state.pendingRemovals.count, false)
            }
            return (state.pendingRemovals.count, true)
        }
        counters.count { statistics in
            statistics.pendingRemovals = kept
            if lost { statistics.removalsLost += 1 }
        }
    }

    /// Replays the kept removals, one at a time, while the database takes them.
    private func replayRemovals() async {
        while let key = state.withLock({ $0.pendingRemovals.first }), !paused() {
            guard await delete(key) else { break }
            let kept = state.withLock { state in
                state.pendingRemovals.remove(key)
                return state.pendingRemovals.count
            }
            counters.count { $0.pendingRemovals = kept }
        }
        state.withLock { $0.replaying = false }
    }

    /// Removes every record of the table (for every replica) and empties their memory tiers.
    public func removeAll() async {
        let notice = listener.notice(for: nil)
        _ = await attempt { [client, logger] in
            try await client.withTransaction(logger: logger) { connection in
                // Waiting for the table's lock must not outlast the operation's timeout.
                try await connection.query("SET LOCAL lock_timeout = '200ms'", logger: logger).drain()
                // The table first (a store under way holds it, then waits for its removal count's
                // row: counting before would make a cycle), then counted as a removal of every key
                // (rows locked in ascending order, as every writer of several takes them): a store
                // that checked the old counts has committed by now, a later one sees the new counts.
                try await connection.query("LOCK TABLE recall_entries IN ACCESS EXCLUSIVE MODE", logger: logger).drain()
                try await connection.query("SELECT 1 FROM recall_removals ORDER BY stripe FOR UPDATE", logger: logger).drain()
                try await connection.query("UPDATE recall_removals SET removals = removals + 1", logger: logger).drain()
                try await connection.query("TRUNCATE recall_entries", logger: logger).drain()
                try await connection.query("UPDATE recall_usage SET entries = 0, bytes = 0", logger: logger).drain()
                try await connection.query("SELECT pg_notify(\(FleetListener.channel), \(notice))", logger: logger).drain()
            }
        }
        await refreshStatistics()
    }

    /// Removes the bytes under `key` if they are still `data`, counting them — and counting the
    /// lookup that found them a miss, not a hit.
    public func removeCorrupt(_ key: String, ifStill data: Data) async {
        counters.count {
            $0.corruptRemoved += 1; $0.hits -= 1; $0.misses += 1
        }
        let statement = PostgresStatements.DeleteIfStill(key: key, record: data)
        _ = await attempt { [lanes] in try await lanes.run(statement) }
    }

    /// ``Configuration/maxRecordBytes``: a streamed body longer than it is passed to the caller
    /// and not stored (bodies live in the row).
    public var entryLimit: Int { configuration.maxRecordBytes }

    /// The counters, as ``/Recall/StorageStatistics`` (see ``fleetStatistics`` for all of them).
    public var statistics: StorageStatistics {
        let mine = fleetStatistics
        var statistics = StorageStatistics()
        statistics.count = mine.entries
        statistics.bytes = mine.bytes
        statistics.evictions = mine.evictions + mine.expired
        statistics.rejected = mine.rejected
        statistics.corruptRemoved = mine.corruptRemoved
        statistics.writeFailures = mine.writeFailures
        return statistics
    }

    /// Every counter of this storage.
    public var fleetStatistics: Statistics {
        var statistics = counters.current
        statistics.listenerSilent = listener.isSilent
        (statistics.connectionsHeld, statistics.statementsThroughPool, statistics.lookupsBatched) = lanes.usage
        return statistics
    }

    /// Reads the table's entries and bytes (16 counter rows) into the statistics.
    public func refreshStatistics() async {
        let usage = await attempt { [client, logger] in try await client.execute(PostgresStatements.Usage(), logger: logger).first() }
        guard let (entries, bytes) = usage ?? nil else { return }
        counters.count {
            $0.entries = Int(entries); $0.bytes = Int(bytes)
        }
    }

    // MARK: Failing without failing requests

    /// Stores `data` under `key` until `expires` — given `mark`, only while no removal came after
    /// it; whether it stored.
    private func store(_ data: Data, for key: String, until expires: Date, ifNotRemovedSince mark: RemovalMark?) async -> Bool {
        await listener.noteHeld(key)
        guard data.count <= configuration.maxRecordBytes else {
            counters.count { $0.rejected += 1 }
            return false
        }
        // The answer of a fetch this process claimed: the fleet waits for it.
        let patient = fleet.isClaimedStore(key)
        // (Against counts the database could not give, nothing is stored: no round trip for it.)
        guard patient || !paused(), mark.map({ $0.stripe >= 0 }) ?? true else {
            counters.count { $0.writeFailures += 1 }
            return false
        }
        let statement = PostgresStatements.Upsert(key: key, record: data, expires: expires, notice: listener.notice(for: key))
        let upsert: @Sendable () async throws -> Int64 = { [lanes] in
            guard let mark else {
                try await lanes.run(statement, pooled: patient)
                return 1
            }
            return try await lanes.first(PostgresStatements.UpsertIfNotRemoved(upsert: statement, mark: mark), pooled: patient) ?? 0
        }
        guard let written = await (patient ? fleet.coordinate(upsert) : attempt(upsert)) else {
            counters.count { $0.writeFailures += 1 }
            return false
        }
        guard written > 0 else {
            counters.count { $0.storesRefusedAfterRemoval += 1 }
            return false
        }
        // (A kept removal stays kept, even under a newer store: it must be counted in the database
        // before any answer older than it may land, and replaying it costs one entry at most.)
        storeCounted()
        return true
    }

    /// Whether the storage is pausing after failures in a row.
    private func paused() -> Bool {
        state.withLock { $0.pausing(at: clock.now) }
    }

    /// Runs `operation` within the timeout; `nil` when it failed or was cut (counted towards a pause).
    func attempt<Value: Sendable>(
        maintenance: Bool = false,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async -> Value? {
        do {
            let value = try await Deadline.run(within: maintenance ? configuration.maintenanceTimeout : configuration.timeout, operation)
            let replay = state.withLock { state -> Bool in
                state.failuresInARow = 0
                guard !state.pendingRemovals.isEmpty, !state.replaying, !state.shutDown else { return false }
                state.replaying = true
                return true
            }
            if replay { Task { await self.replayRemovals() } }
            return value
        } catch {
            if !maintenance, (error as? PostgresStorageError)?.code == .timedOut { reclaimConnections() }
            counters.count { $0.failures += 1 }
            // The caller going away, or maintenance, says nothing about the request path's database.
            if error is CancellationError || maintenance { return nil }
            let pausing = state.withLock { state -> Bool in
                state.failuresInARow += 1
                guard state.failuresInARow >= configuration.failuresToPause else { return false }
                state.failuresInARow = 0
                state.pausedUntil = clock.now + configuration.pause
                return true
            }
            logger.debug("recall postgres storage: \(error)\(pausing ? "; pausing for \(configuration.pause)" : "")")
            return nil
        }
    }
}
