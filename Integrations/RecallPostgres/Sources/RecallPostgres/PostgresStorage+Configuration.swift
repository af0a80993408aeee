import Foundation
import Recall

extension PostgresStorage {
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
        /// The longest ``PostgresStorage/open(client:configuration:logger:clock:)`` waits for the
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
}
