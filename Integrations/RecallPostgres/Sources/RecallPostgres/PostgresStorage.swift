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
/// - **Schema** (version 2, created or migrated by ``open(client:configuration:logger:)``): see
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
public final class PostgresStorage: CacheByteStore, FetchCoordinator {
    /// Limits and timings.
    public struct Configuration: Sendable {
        /// The longest a database operation may take before it counts as failed (250 ms). Per
        /// operation: a miss may wait for a lookup, a fetch claim and a store in turn.
        public var timeout: Duration = .milliseconds(250)
        /// Failures in a row after which the storage pauses asking the database (3).
        public var failuresToPause = 3
        /// How long a pause lasts (1 s): lookups are misses at once meanwhile.
        public var pause: Duration = .seconds(1)
        /// The largest record stored (8 MiB); larger ones are refused and counted.
        public var maxRecordBytes = 8 << 20
        /// The bytes of records the table may hold before eviction (1 GiB; nil: no limit).
        public var maxBytes: Int? = 1 << 30
        /// The entries the table may hold before eviction (nil: no limit).
        public var maxEntries: Int?
        /// The longest any entry is kept after it was stored (7 days), also one that can still
        /// be revalidated.
        public var retention: Duration = .seconds(7 * 86_400)
        /// Uses of an entry closer together than this are recorded once (60 s): recency is
        /// approximate, and a hit writes at most once per interval.
        public var touchInterval: Duration = .seconds(60)
        /// Stores of this process between maintenance passes (100).
        public var maintenanceInterval = 100
        /// Rows removed per statement of a maintenance pass (200).
        public var batchSize = 200
        /// Statements per maintenance pass at most (50): a pass ends after `batchSize × 50` rows
        /// even if the table is still over its limits; the next pass goes on.
        public var batchesPerPass = 50
        /// How long a claimed fetch holds before it lapses (5 s) unless renewed: a replica that
        /// crashed while fetching delays the others by at most this much. A live replica renews
        /// its claim every third of it while its fetch is under way (see ``longestFetch``).
        public var leaseTime: Duration = .seconds(5)
        /// How long a replica renews a claim at most (2 min): a fetch slower than ``leaseTime``
        /// keeps the fleet waiting for its answer, not fetching too; one that is still under way
        /// after this long stops holding the others back (its claim lapses a lease later).
        public var longestFetch: Duration = .seconds(120)
        /// The longest each statement of the fleet's coordination may take (2 s, or ``timeout``
        /// if that is longer): a claim, a check
        /// on another replica's claim, a renewal, a release, the look that follows a wait, and
        /// the store of a claimed fetch's answer. Longer than ``timeout``: on a database that
        /// answers slowly, one origin request per key for the whole fleet is worth the wait (the
        /// other replicas wait for these anyway). While they answer, coordination goes on during
        /// a ``pause`` too; once one fails or is cut, claims are granted at once (each replica
        /// still coalesces its own requests) until coordination answers again.
        public var coordinationTimeout: Duration = .seconds(2)
        /// How often a replica waiting for another's fetch checks whether it ended (10 ms).
        public var leasePoll: Duration = .milliseconds(10)
        /// The longest a maintenance statement may take (5 s). Maintenance failures do not count
        /// towards the pause of the request path.
        public var maintenanceTimeout: Duration = .seconds(5)
        /// Added to every computed expiry (1 h): room for clocks that differ between the replicas
        /// and the database, and for requests that accept more staleness (`max-stale`).
        public var expiryMargin: Duration = .seconds(3_600)
        /// How often the listener makes sure it still hears the fleet (1 s): it sends itself a
        /// notification over its own connection.
        public var heartbeat: Duration = .seconds(1)
        /// How long the listener may go without hearing its heartbeat (3 s) before memory tiers
        /// stop serving: they are emptied (again every heartbeat), keep nothing read from the
        /// table, and the listener connects anew; once it hears again they serve again. A
        /// connection that died without a reset (a failover, a partition) so costs memory tiers at
        /// most about this plus a heartbeat of staleness, not the minutes TCP takes to notice.
        public var silenceLimit: Duration = .seconds(3)
        /// The longest ``PostgresStorage/open(client:configuration:logger:)`` waits for the
        /// database to create or migrate the tables and read the fleet's secret (10 s). Past it,
        /// `open` throws ``PostgresStorageError/unreachable(after:)``: a service that starts while
        /// PostgreSQL is down learns it in bounded time and can start on another storage (see
        /// docs/scale-out.md, "Starting while the database is down").
        public var openTimeout: Duration = .seconds(10)
        /// Removals that could not reach the database (down, slow, pausing) kept to be replayed
        /// when it answers again (10,000); meanwhile lookups of those keys are misses. Beyond
        /// this, removals are lost and counted (``Statistics/removalsLost``).
        public var pendingRemovalLimit = 10_000
        /// Connections the storage keeps leased from its client for lookups and stores (4; 0:
        /// each statement leases one from the pool): leasing from PostgresNIO's pool for every
        /// statement costs more than the statement itself, and lookups that find theirs busy go
        /// down it together as one statement. The fleet's coordination and maintenance lease from
        /// the pool, so the client's `maximumConnections` must be larger by at least 2 — one for
        /// the listener, one for the rest — plus whatever else the service runs on it
        /// (docs/scale-out.md, "Connections").
        public var requestConnections = 4

        /// The defaults.
        public init() {}
    }

    /// What this storage saw (entries and bytes are the whole table's, as last read).
    public struct Statistics: Sendable, Hashable {
        /// Entries in the table (all replicas), as last read.
        public var entries = 0
        /// Bytes of records in the table (all replicas), as last read.
        public var bytes = 0
        /// Lookups of this process that found a record.
        public var hits = 0
        /// Lookups of this process that found none (including those cut or paused).
        public var misses = 0
        /// Entries this process evicted to keep within the limits.
        public var evictions = 0
        /// Entries this process removed because they could no longer be served.
        public var expired = 0
        /// Records refused for their size.
        public var rejected = 0
        /// Bad rows found and removed: not a record, another key's record, or longer than
        /// ``Configuration/maxRecordBytes``.
        public var corruptRemoved = 0
        /// Stores dropped because the database failed, was slow or the storage paused.
        public var writeFailures = 0
        /// Operations that failed or were cut.
        public var failures = 0
        /// Fetches this process claimed for the fleet, and claims it found held by another.
        public var claims = 0, claimsHeldElsewhere = 0
        /// Times this process extended a claim of its own while its fetch was under way.
        public var claimRenewals = 0
        /// Removals and stores by other replicas that reached this process's memory tiers.
        public var invalidationsReceived = 0
        /// Times the notification connection began listening, each after dropping what the
        /// memory tiers held (what was sent while not listening is lost): from then on, the
        /// fleet's changes reach them.
        public var listeningStarts = 0
        /// Removals waiting to be replayed because the database could not take them.
        public var pendingRemovals = 0
        /// Removals dropped because too many were waiting (``Configuration/pendingRemovalLimit``).
        public var removalsLost = 0
        /// Stores refused because a replica removed their key (or a key of its stripe) after their
        /// request began: their answer may be older than that removal.
        public var storesRefusedAfterRemoval = 0
        /// Times the listener went without hearing its heartbeat for ``Configuration/silenceLimit``
        /// (each logged as a notice): memory tiers were emptied and bypassed until it heard again.
        public var silences = 0
        /// The listener is silent now: memory tiers over this storage are emptied every heartbeat
        /// and keep nothing they read.
        public var listenerSilent = false
        /// Statements of this process the storage cancelled in the database because they ran
        /// past its longest limit (a locked table, say), so their connections returned to the pool.
        public var statementsCancelled = 0
        /// The connections the storage holds for its statements now
        /// (``Configuration/requestConnections`` once it is up; fewer while one is replaced).
        public var connectionsHeld = 0
        /// Statements that leased a connection from the pool because none of those held was
        /// ready or all were stalled (none finished a statement for 20 ms): a database that
        /// answers slowly, or too few ``Configuration/requestConnections`` for the load.
        public var statementsThroughPool = 0
        /// Lookups that waited for a held connection and went down it with others, as one
        /// statement (each counted): under load, a round trip answers several hits.
        public var lookupsBatched = 0
    }

    /// The longest statement limit of each storage of this process that is open (they share the
    /// tag their statements carry, so a cancellation pass must spare the most patient one's).
    private static let openLimits = Mutex<[UUID: Duration]>([:])

    /// The longest limit of any storage open in this process.
    static func longestLimitInProcess() -> Duration {
        openLimits.withLock { $0.values.max() } ?? .seconds(2)
    }

    /// The channel of the fleet's invalidations.
    static let channel = "recall_invalidations"
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
    let instance = UUID()
    let state = Mutex(State())

    struct State {
        var statistics = Statistics()
        var failuresInARow = 0
        var pausedUntil: ContinuousClock.Instant?
        var storesSinceMaintenance = 0
        /// A maintenance pass is running (set before its task starts, cleared when it ends).
        var maintenanceRunning = false
        /// Counts passes, so a pass's task is kept only by the pass that made it.
        var maintenancePass = 0
        /// Its task, for ``PostgresStorage/shutdown()`` to wait on.
        var maintaining: Task<Void, Never>?
        var listener: Task<Void, Never>?
        /// The listener's connection while it listens: where statements are cancelled from, so
        /// that a pool whose connections all hang still gets them back.
        var listening: PostgresConnection?
        /// When the listener's connection began listening.
        var listeningSince: ContinuousClock.Instant?
        /// When the listener last heard its own heartbeat (or began listening).
        var lastHeard = ContinuousClock.now
        /// The listener has not heard its heartbeat for ``Configuration/silenceLimit``: memory
        /// tiers are not to be trusted (see ``PostgresStorage/watchListener()``).
        var silent = false
        /// The heartbeat's task.
        var watcher: Task<Void, Never>?
        /// A cancellation of statements that ran too long is under way, and another was asked for meanwhile.
        var reclaiming = false, reclaimAgain = false
        /// Who layers on this storage (memory tiers) and hears of the fleet's changes.
        var observers: [@Sendable (String?) async -> Void] = []
        /// The keys too long for a notification that this process read or stored (so its memory
        /// tiers may hold them), by their digest: a notice names such a key by its digest.
        var longKeys = LongKeyIndex()
        /// Keys removed while the database could not take it, to replay (see ``Configuration/pendingRemovalLimit``).
        var pendingRemovals: Set<String> = []
        var replaying = false
        /// Each claim this process holds, by name: its holder token, the task renewing it, and
        /// the storage key its answer is stored under (when the cache said).
        var claims: [String: (token: UUID, renewal: Task<Void, Never>, key: String?)] = [:]
        /// Storage keys whose store is a claimed fetch's answer (how many claims), and keys whose
        /// next lookup follows a wait for another replica's fetch: both get
        /// ``Configuration/coordinationTimeout`` and go on during a pause.
        var claimedStores: [String: Int] = [:], lookAfterWait: [String: ContinuousClock.Instant] = [:]
        /// Keys with no record when this process won the claim of their fetch: their next lookup
        /// (the look that follows the claim) is a miss without a round trip.
        var absentAtClaim: [String: ContinuousClock.Instant] = [:]
        /// Whether the last statement of the fleet's coordination answered in time; while it
        /// did not, a probe in the background asks until the database answers again.
        var coordinationAnswers = true, probing = false
        /// Keys whose use is being recorded now (a hot key is touched once, not once per hit).
        var touching: Set<String> = []
        /// The keys requests of this process wait to see stored by another replica, as notices
        /// name them (``noticeName(of:)``): how many wait, and how many such stores were announced since.
        var storesAwaited: [String: (waiters: Int, stores: Int)] = [:]
        var shutDown = false

        /// Marks `key` in `marks` until `until` (its next lookup reads it); at most 1,024 marks,
        /// those past their time dropped first.
        static func note(_ key: String, until: ContinuousClock.Instant, in marks: inout [String: ContinuousClock.Instant]) {
            let now = ContinuousClock.now
            if marks.count >= 1_024 { marks = marks.filter { $0.value > now } }
            if marks.count < 1_024 { marks[key] = until }
        }

        /// Whether the storage is pausing now (a pause that ended is cleared).
        mutating func pausing() -> Bool {
            guard let until = pausedUntil else { return false }
            if ContinuousClock.now < until { return true }
            pausedUntil = nil
            return false
        }
    }

    private init(client: PostgresClient, configuration: Configuration, secret: [UInt8], logger: Logger) {
        self.client = client
        self.configuration = configuration
        self.secret = secret
        self.logger = logger
        lanes = ConnectionLanes(client: client, count: max(0, configuration.requestConnections), logger: logger)
    }

    /// Opens the storage on `client` (which must be running): creates the tables or migrates
    /// them to ``schemaVersion``, reads (or makes, once for the fleet) the shared secret, and
    /// starts listening for the fleet's invalidations — within ``Configuration/openTimeout``.
    /// - Throws: ``PostgresStorageError/unreachable(after:)`` when the database did not answer
    ///   within ``Configuration/openTimeout`` (down, unreachable, or the client cannot connect);
    ///   ``PostgresStorageError/schemaTooNew(found:supported:)`` when the schema is newer than
    ///   this code; the database's own error for anything else it refuses (a role without the
    ///   rights, say).
    public static func open(
        client: PostgresClient, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "recall.postgres")
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
        let storage = PostgresStorage(client: client, configuration: configuration, secret: secret, logger: logger)
        openLimits.withLock { $0[storage.instance] = storage.coordinationLimit }
        let listener = Task { await storage.listen() }
        storage.lanes.start()
        let watcher = Task { await storage.watchListener() }
        storage.state.withLock { state in
            state.listener = listener
            state.watcher = watcher
        }
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
        let (listener, watcher, maintaining) = state.withLock { state in
            state.shutDown = true
            for claim in state.claims.values { claim.renewal.cancel() }
            Self.openLimits.withLock { _ = $0.removeValue(forKey: instance) }
            return (state.listener, state.watcher, state.maintaining)
        }
        watcher?.cancel()
        listener?.cancel()
        await watcher?.value
        await listener?.value
        await maintaining?.value
        await lanes.stop()
    }

    // MARK: CacheByteStore

    /// The bytes stored under `key`, or `nil` (also when the database fails or is slow).
    public func bytes(for key: String) async -> StoredBytes? {
        // One lock decides how the lookup goes: not at all (a removal of the key waits to be
        // replayed, the storage pauses, or the claim just won found nothing under the key), or
        // patiently — the look after waiting for another replica's fetch, or after winning a claim
        // that found a record: what the fleet paid for — or as usual.
        let patient = state.withLock { state -> Bool? in
            let now = ContinuousClock.now
            let afterWait = state.lookAfterWait.removeValue(forKey: key).map { now < $0 } ?? false
            if state.absentAtClaim.removeValue(forKey: key).map({ now < $0 }) == true { return nil }
            if state.pendingRemovals.contains(key) { return nil }
            if afterWait, state.coordinationAnswers { return true }
            return state.pausing() ? nil : false
        }
        guard let patient else {
            count { $0.misses += 1 }
            return nil
        }
        // Known before the read, so that a notice for this key while the read is under way is not lost.
        await noteHeld(key)
        let statement = PostgresStatements.Lookup(
            key: key, touchInterval: configuration.touchInterval.seconds,
            maxRecordBytes: configuration.maxRecordBytes)
        let lookup: @Sendable () async throws -> PostgresStatements.Lookup.Row? = { [lanes] in
            try await lanes.lookup(statement, pooled: patient)
        }
        let row = patient ? await coordinate(lookup) : await attempt(lookup)
        guard let (storedKey, found, needsTouch) = row ?? nil, storedKey == key else {
            count { $0.misses += 1 }
            return nil
        }
        guard let bytes = found else {
            // Longer than any record this storage takes: a miss, and the row goes.
            count {
                $0.misses += 1; $0.corruptRemoved += 1
            }
            let removal = PostgresStatements.DeleteOversized(key: key, maxRecordBytes: configuration.maxRecordBytes)
            _ = await attempt { [lanes] in try await lanes.run(removal) }
            return nil
        }
        let (silent, touch) = state.withLock { state in
            state.statistics.hits += 1
            return (state.silent, needsTouch && state.touching.insert(key).inserted)
        }
        // The listener cannot vouch for notifications: the tiers over this storage must not keep what they read.
        if silent { await forgetTiers(key) }
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
        if coordinating() {
            row = await coordinate { [lanes] in try await lanes.first(statement, pooled: true) }
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
        state.withLock { $0.observers.append(observer) }
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
        let statement = PostgresStatements.Remove(key: key, notice: notice(for: key))
        return await attempt { [lanes] in try await lanes.run(statement) } != nil
    }

    /// Keeps a removal the database could not take, to replay it when it answers again.
    private func keepRemoval(_ key: String) {
        state.withLock { state in
            if state.pendingRemovals.count < configuration.pendingRemovalLimit || state.pendingRemovals.contains(key) {
                state.pendingRemovals.insert(key)
            } else {
                state.statistics.removalsLost += 1
            }
            state.statistics.pendingRemovals = state.pendingRemovals.count
        }
    }

    /// Replays the kept removals, one at a time, while the database takes them.
    private func replayRemovals() async {
        while let key = state.withLock({ $0.pendingRemovals.first }), !paused() {
            guard await delete(key) else { break }
            state.withLock { state in
                state.pendingRemovals.remove(key)
                state.statistics.pendingRemovals = state.pendingRemovals.count
            }
        }
        state.withLock { $0.replaying = false }
    }

    /// Removes every record of the table (for every replica) and empties their memory tiers.
    public func removeAll() async {
        let notice = notice(for: nil)
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
                try await connection.query("SELECT pg_notify(\(Self.channel), \(notice))", logger: logger).drain()
            }
        }
        await refreshStatistics()
    }

    /// Removes the bytes under `key` if they are still `data`, counting them — and counting the
    /// lookup that found them a miss, not a hit.
    public func removeCorrupt(_ key: String, ifStill data: Data) async {
        count {
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
        let lanes = lanes.usage
        return state.withLock { state in
            var statistics = state.statistics
            statistics.listenerSilent = state.silent
            (statistics.connectionsHeld, statistics.statementsThroughPool, statistics.lookupsBatched) = lanes
            return statistics
        }
    }

    /// Reads the table's entries and bytes (16 counter rows) into the statistics.
    public func refreshStatistics() async {
        let usage = await attempt { [client, logger] in try await client.execute(PostgresStatements.Usage(), logger: logger).first() }
        guard let (entries, bytes) = usage ?? nil else { return }
        count {
            $0.entries = Int(entries); $0.bytes = Int(bytes)
        }
    }

    // MARK: Maintenance

    /// Removes entries that can no longer be served, then, while the table is over
    /// ``Configuration/maxBytes`` or ``Configuration/maxEntries``, evicts in batches (at most
    /// ``Configuration/batchesPerPass`` statements). Runs by itself every
    /// ``Configuration/maintenanceInterval`` stores; call it from a timer for a read-mostly fleet.
    public func maintain() async {
        // Claims that lapsed a while ago (their holders crashed or could not release).
        _ = await attempt(maintenance: true) { [client, logger] in
            try await client.query("DELETE FROM recall_leases WHERE expires_at < now() - interval '1 minute'", logger: logger).drain()
        }
        var batches = 0
        while batches < configuration.batchesPerPass {
            batches += 1
            let expire = PostgresStatements.Expire(batch: Int32(clamping: configuration.batchSize))
            let removed = await attempt(maintenance: true) { [client, logger] in try await client.execute(expire, logger: logger).first() }
            guard let (rows, _) = removed ?? nil else { return }
            count { $0.expired += Int(rows) }
            if Int(rows) < configuration.batchSize { break }
        }
        await refreshStatistics()
        while batches < configuration.batchesPerPass, isOverLimits() {
            batches += 1
            let evict = PostgresStatements.Evict(batch: Int32(clamping: configuration.batchSize))
            let outcome = await attempt(maintenance: true) { [client, logger] in try await client.execute(evict, logger: logger).first() }
            guard let (rows, _, _) = outcome ?? nil else { return }
            count { $0.evictions += Int(rows) }
            await refreshStatistics()
        }
    }

    private func isOverLimits() -> Bool {
        let statistics = fleetStatistics
        return configuration.maxBytes.map { statistics.bytes > $0 } == true
            || configuration.maxEntries.map { statistics.entries > $0 } == true
    }

    /// Starts a maintenance pass in the background every ``Configuration/maintenanceInterval``
    /// stores (one at a time).
    private func storeCounted() {
        let number = state.withLock { state -> Int? in
            state.storesSinceMaintenance += 1
            guard state.storesSinceMaintenance >= configuration.maintenanceInterval, !state.maintenanceRunning, !state.shutDown else {
                return nil
            }
            state.storesSinceMaintenance = 0
            state.maintenanceRunning = true
            state.maintenancePass += 1
            return state.maintenancePass
        }
        guard let number else { return }
        let pass = Task {
            await self.maintain()
            self.state.withLock { state in
                state.maintenanceRunning = false
                state.maintaining = nil
            }
        }
        // Kept for shutdown only while it runs (it may have ended already).
        state.withLock { state in
            if state.maintenanceRunning, state.maintenancePass == number { state.maintaining = pass }
        }
    }

    // MARK: FetchCoordinator

    /// Claims the fetch `name` for ``Configuration/leaseTime``; `true` also when the database
    /// cannot say (fetching twice beats not fetching).
    public func claim(_ name: String) async -> Bool {
        await claimFetch(name, storingUnder: nil)
    }

    /// Claims as ``claim(_:)`` does; while the claim holds, the store under `key` (its answer)
    /// gets ``Configuration/coordinationTimeout`` and goes on during a pause.
    public func claim(_ name: String, storingUnder key: String) async -> Bool {
        await claimFetch(name, storingUnder: key)
    }

    private func claimFetch(_ name: String, storingUnder key: String?) async -> Bool {
        guard coordinating() else { return true }
        // This process holds it already (another flight of it, its own lease lapsed): wait for that one.
        if state.withLock({ $0.claims[name] != nil }) {
            count { $0.claimsHeldElsewhere += 1 }
            return false
        }
        let token = UUID()
        // (A claim without a key checks an empty one, which holds nothing.)
        let statement = PostgresStatements.Claim(name: name, holder: token, leaseTime: configuration.leaseTime.seconds, key: key ?? "")
        // With the key its answer is stored under, the claim also says whether a record is there
        // now: the look that follows it (the cache's, for a store since its lookup) is then patient
        // — a miss would fetch again what the fleet just paid for — or, with nothing there, a miss
        // at once, without a round trip.
        let claimed = await coordinate({ [lanes] in try await lanes.first(statement, pooled: true) })
        guard let claimed else {
            // Cut, it may still land: give it back, so no replica waits for a fetch nobody makes.
            let release = PostgresStatements.Release(name: name, holder: token)
            Task { [lanes] in _ = await coordinate { try await lanes.run(release, pooled: true) } }
            return true
        }
        guard let recordThere = claimed else {
            count { $0.claimsHeldElsewhere += 1 }
            return false
        }
        let renewal = renew(name, token: token)
        let until = ContinuousClock.now + coordinationLimit
        state.withLock { state in
            state.statistics.claims += 1
            state.claims[name] = (token, renewal, key)
            if let key {
                state.claimedStores[key, default: 0] += 1
                if recordThere {
                    State.note(key, until: until, in: &state.lookAfterWait)
                } else {
                    State.note(key, until: until, in: &state.absentAtClaim)
                }
            }
        }
        return true
    }

    /// Renews the claim `token` on `name` every third of the lease, until it is released, lost
    /// (it lapsed and another replica took it), or ``Configuration/longestFetch`` passed.
    private func renew(_ name: String, token: UUID) -> Task<Void, Never> {
        Task { [lanes, configuration] in
            let end = ContinuousClock.now + configuration.longestFetch
            let statement = PostgresStatements.Renew(name: name, holder: token, leaseTime: configuration.leaseTime.seconds)
            while true {
                try? await Task.sleep(for: configuration.leaseTime / 3)
                guard !Task.isCancelled, ContinuousClock.now < end else { return }
                let renewed = await coordinate { try await lanes.first(statement, pooled: true) }
                if case .some(nil) = renewed { return }  // no longer this process's claim
                if renewed != nil { count { $0.claimRenewals += 1 } }
            }
        }
    }

    /// Waits until the claim on `name` is released or lapses, checking every
    /// ``Configuration/leasePoll`` — while its holder renews it, as long as the holder may
    /// (``Configuration/longestFetch``, plus a lease).
    public func wait(for name: String) async {
        await waitForClaim(name) { false }
    }

    /// Waits as ``wait(for:)`` does, or until another replica announces a store under `key`
    /// (its notification, which this process's listener hears): the claim's holder stored its
    /// answer, even if its release is late or lost.
    public func wait(for name: String, orStoreOf key: String) async {
        let token = Self.noticeName(of: key)
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
        // The look that follows, if it reaches this storage soon (a memory tier may answer it).
        let until = ContinuousClock.now + coordinationLimit
        state.withLock { State.note(key, until: until, in: &$0.lookAfterWait) }
    }

    /// Polls the claim on `name` until it is released or lapses, or `stored()` says the answer
    /// is there — for ``Configuration/longestFetch`` plus a lease at most, the longest a live
    /// holder keeps a claim.
    private func waitForClaim(_ name: String, stored: () -> Bool) async {
        let end = ContinuousClock.now + configuration.longestFetch + configuration.leaseTime
        var poll = configuration.leasePoll
        while !Task.isCancelled, ContinuousClock.now < end, coordinating(), !stored() {
            guard
                let held = await coordinate({ [lanes] in
                    try await lanes.first(PostgresStatements.Claimed(name: name), pooled: true)
                }), held != nil
            else { return }
            try? await Task.sleep(for: poll)
            // A long fetch is checked less often (its store's notice still wakes the wait at the next check).
            poll = min(poll * 2, max(configuration.leasePoll, .milliseconds(250)))
        }
    }

    /// Releases this process's claim on `name`.
    public func release(_ name: String) async {
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

    // MARK: Invalidations

    /// What a removal or a store tells the fleet: who sent it, and the key — `<id> <key>`, or
    /// `<id> *` for everything, or `<id>#<digest>` for a key too long for a notification (every
    /// replica can compute the digest of the keys it holds; a key nobody holds costs nothing).
    private func notice(for key: String?) -> String {
        instance.uuidString + (key.map(Self.noticeName) ?? " *")
    }

    /// How a notice names `key`, after the sender's id: ` <key>`, or `#<digest>` for a key too
    /// long for a notification.
    private static func noticeName(of key: String) -> String {
        key.utf8.count <= LongKeyIndex.longerThan ? " " + key : "#" + LongKeyIndex.digest(of: key)
    }

    /// Remembers `key` as one the memory tiers may hold, when it is too long for a notification;
    /// a key the index lets go of (it is full) is dropped from the tiers, so that every long key
    /// they may hold stays known.
    private func noteHeld(_ key: String) async {
        guard key.utf8.count > LongKeyIndex.longerThan else { return }
        for dropped in state.withLock({ $0.longKeys.insert(key) }) { await forgetTiers(dropped) }
    }

    /// Listens for the fleet's removals until ``shutdown()``, reconnecting after failures.
    private func listen() async {
        var delay = Duration.milliseconds(50)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    self.state.withLock { state in
                        state.listening = connection
                        state.listeningSince = .now
                    }
                    defer { self.state.withLock { $0.listening = nil } }
                    try await connection.listen(on: Self.channel) { notifications in
                        // Listening again: whatever was sent while not listening is lost.
                        await self.forgetTiers(nil)
                        self.state.withLock { state in
                            state.statistics.listeningStarts += 1
                            state.lastHeard = .now  // a new connection has a whole silence limit to carry a heartbeat
                        }
                        delay = .milliseconds(50)
                        for try await notification in notifications {
                            await self.received(notification.payload)
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("recall postgres storage: listening failed: \(error)")
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(2))
        }
    }

    private func received(_ payload: String) async {
        // Any notification shows the connection carries them.
        state.withLock { $0.lastHeard = .now }
        if payload.hasPrefix(instance.uuidString), payload.dropFirst(instance.uuidString.count).first == "!" {
            return heardHeartbeat()
        }
        // (A replica's id is a UUID: neither a space nor a `#` is part of it; other replicas'
        // heartbeats, `<id>!<n>`, have neither and are ignored here.)
        guard let separator = payload.firstIndex(where: { $0 == " " || $0 == "#" }), payload[..<separator] != instance.uuidString else { return }
        let rest = String(payload[payload.index(after: separator)...])
        count { $0.invalidationsReceived += 1 }
        // A request of this process waiting for another's fetch of this key may look now.
        state.withLock { state in state.storesAwaited[String(payload[separator...])]?.stores += 1 }
        if payload[separator] == "#" {
            // A long key, by its digest: only a key this process may hold is dropped.
            for key in state.withLock({ $0.longKeys.keys(forDigest: rest) }) { await forgetTiers(key) }
        } else {
            await forgetTiers(rest == "*" ? nil : rest)
        }
    }

    /// Tells the observers (memory tiers) that `key` (nil: everything) changed elsewhere.
    func forgetTiers(_ key: String?) async {
        for observer in state.withLock({ $0.observers }) { await observer(key) }
    }

    // MARK: Failing without failing requests

    /// Stores `data` under `key` until `expires` — given `mark`, only while no removal came after
    /// it; whether it stored.
    private func store(_ data: Data, for key: String, until expires: Date, ifNotRemovedSince mark: RemovalMark?) async -> Bool {
        await noteHeld(key)
        guard data.count <= configuration.maxRecordBytes else {
            count { $0.rejected += 1 }
            return false
        }
        // The answer of a fetch this process claimed: the fleet waits for it.
        let patient = state.withLock { $0.claimedStores[key] != nil && $0.coordinationAnswers }
        // (Against counts the database could not give, nothing is stored: no round trip for it.)
        guard patient || !paused(), mark.map({ $0.stripe >= 0 }) ?? true else {
            count { $0.writeFailures += 1 }
            return false
        }
        let statement = PostgresStatements.Upsert(key: key, record: data, expires: expires, notice: notice(for: key))
        let upsert: @Sendable () async throws -> Int64 = { [lanes] in
            guard let mark else {
                try await lanes.run(statement, pooled: patient)
                return 1
            }
            return try await lanes.first(PostgresStatements.UpsertIfNotRemoved(upsert: statement, mark: mark), pooled: patient) ?? 0
        }
        guard let written = await (patient ? coordinate(upsert) : attempt(upsert)) else {
            count { $0.writeFailures += 1 }
            return false
        }
        guard written > 0 else {
            count { $0.storesRefusedAfterRemoval += 1 }
            return false
        }
        // (A kept removal stays kept, even under a newer store: it must be counted in the database
        // before any answer older than it may land, and replaying it costs one entry at most.)
        storeCounted()
        return true
    }

    /// Whether the fleet's coordination goes to the database: while its statements answer, also
    /// during a pause (a slow database that answers within the coordination limit keeps the
    /// fleet's one request per key); not after one failed, until the probe hears the database.
    private func coordinating() -> Bool {
        state.withLock { $0.coordinationAnswers }
    }

    /// The limit of a coordination statement: ``Configuration/coordinationTimeout``, or
    /// ``Configuration/timeout`` if that is longer.
    var coordinationLimit: Duration { max(configuration.timeout, configuration.coordinationTimeout) }

    /// Runs a statement of the fleet's coordination within ``coordinationLimit``;
    /// `nil` when it failed or was cut. Its outcome says whether coordination answers; it does
    /// not count towards the request path's pause.
    private func coordinate<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async -> Value? {
        do {
            let value = try await Deadline.run(within: coordinationLimit, operation)
            state.withLock { $0.coordinationAnswers = true }
            return value
        } catch {
            if error is CancellationError { return nil }
            let probe = state.withLock { state -> Bool in
                state.coordinationAnswers = false
                state.statistics.failures += 1
                guard !state.probing, !state.shutDown else { return false }
                state.probing = true
                return true
            }
            if probe { Task { await self.probeCoordination() } }
            if (error as? PostgresStorageError)?.code == .timedOut { reclaimConnections() }
            logger.debug("recall postgres storage: coordination: \(error)")
            return nil
        }
    }

    /// While coordination does not answer, no request waits for it (claims are granted at once):
    /// this asks the database every ``Configuration/pause``, off the request path, until it
    /// answers within the coordination limit again.
    private func probeCoordination() async {
        let statement = PostgresStatements.Claimed(name: "recall-probe")
        while !Task.isCancelled, !state.withLock({ $0.shutDown }) {
            try? await Task.sleep(for: configuration.pause)
            if (try? await Deadline.run(
                within: coordinationLimit,
                { [lanes] in
                    try await lanes.first(statement, pooled: true)
                })) != nil
            {
                break
            }
        }
        state.withLock { state in
            state.coordinationAnswers = true
            state.probing = false
        }
    }

    /// Whether the storage is pausing after failures in a row.
    private func paused() -> Bool {
        state.withLock { $0.pausing() }
    }

    func count(_ update: (inout Statistics) -> Void) {
        state.withLock { update(&$0.statistics) }
    }

    /// Runs `operation` within the timeout; `nil` when it failed or was cut (counted towards a pause).
    private func attempt<Value: Sendable>(
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
            // The caller going away, or maintenance, says nothing about the request path's database.
            if error is CancellationError || maintenance {
                count { $0.failures += 1 }
                return nil
            }
            let pausing = state.withLock { state -> Bool in
                state.statistics.failures += 1
                state.failuresInARow += 1
                guard state.failuresInARow >= configuration.failuresToPause else { return false }
                state.failuresInARow = 0
                state.pausedUntil = ContinuousClock.now + configuration.pause
                return true
            }
            logger.debug("recall postgres storage: \(error)\(pausing ? "; pausing for \(configuration.pause)" : "")")
            return nil
        }
    }
}

extension PostgresStorage {
    /// After a statement was cut by its time limit: postgres-nio cannot cancel it, and its
    /// connection stays leased until the database answers — for a statement waiting on a locked
    /// table, maybe never. So the storage waits as long as its longest limit
    /// (``Configuration/timeout`` or ``Configuration/coordinationTimeout``), then cancels in the
    /// database (`pg_cancel_backend`) every statement of this process still running past it
    /// (found by the tag its text starts with), from the listener's connection when it has one
    /// (the pool's may all be hanging). One pass at a time; a cut during a pass asks for another.
    fileprivate func reclaimConnections() {
        guard
            state.withLock({ state -> Bool in
                guard !state.shutDown else { return false }
                // A statement cut during a pass may have been too young for it: one more pass follows.
                guard !state.reclaiming else { state.reclaimAgain = true; return false }
                state.reclaiming = true
                return true
            })
        else { return }
        Task { [client, logger, configuration] in
            var failedPasses = 0, cancelledLast = false
            repeat {
                // Past the longest limit any of its statements has (a coordination statement may
                // rightly run longer than a lookup).
                let limit = Self.longestLimitInProcess()
                try? await Task.sleep(for: limit)
                let statement = PostgresStatements.Reclaim(olderThan: limit.seconds)
                let connection = state.withLock { $0.listening }
                let cancelled = try? await Deadline.run(within: configuration.maintenanceTimeout) {
                    if let connection { return try await connection.execute(statement, logger: logger).first() ?? 0 }
                    return try await client.execute(statement, logger: logger).first() ?? 0
                }
                if let cancelled, cancelled > 0 {
                    logger.debug("recall postgres storage: cancelled \(cancelled) statements that ran past \(configuration.timeout)")
                }
                count { $0.statementsCancelled += Int(cancelled ?? 0) }
                // A pass that could not run (no connection free, the database slow) is tried again,
                // a few times; one that cancelled statements looks again (a statement that waited
                // behind one cancelled may hang in turn).
                failedPasses = cancelled == nil ? failedPasses + 1 : 0
                cancelledLast = (cancelled ?? 0) > 0
            } while state.withLock({ state -> Bool in
                let again = (state.reclaimAgain || cancelledLast || (1...3).contains(failedPasses)) && !state.shutDown
                state.reclaimAgain = false
                state.reclaiming = again
                return again
            })
        }
    }
}

extension AsyncSequence where Self: Sendable {
    /// Reads the sequence to its end (a statement's rows, so its connection is released).
    func drain() async throws {
        for try await _ in self {}
    }

    /// Every element (a statement's rows).
    func all() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }

    /// The first element, reading the rest (so the connection is released); nil when there is none.
    func first() async throws -> Element? {
        var first: Element?
        for try await element in self where first == nil { first = element }
        return first
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
