import Logging
import PostgresNIO
import Synchronization

/// The connections a storage keeps leased from its client for the request path, and sends
/// each statement down the least busy of: leasing a connection from PostgresNIO's pool for every
/// statement costs a hit more than its SQL (measured in docs/benchmarks.md, "Next to pgbench").
///
/// Each lane is a task that leases a connection and holds it until the connection closes or
/// the lanes stop, then leases another. A statement that finds no lane ready (at start, or while
/// every connection is being replaced) goes through the pool as before. So does one that finds
/// every lane **stalled** — statements under way and none finished for ``stall`` — as on a slow
/// or locked database: statements do not queue behind one that hangs (the pool opens more
/// connections, as before there were lanes), and the storage cancels the hanging one in the
/// database.
///
/// **Lookups that wait share a statement.** A lookup that finds its lane's connection busy with
/// a statement does not queue behind it as a statement of its own: it joins the lane's
/// ``LookupBatch``, and when a statement of the lane finishes, the batch goes down the connection
/// as one statement for all its keys (``PostgresStatements/LookupMany``). Under load a round trip
/// answers several hits; a lookup that finds its lane idle is sent at once, as one statement.
final class ConnectionLanes: Sendable {
    private struct Lane {
        var connection: PostgresConnection?
        /// Requests on the lane not yet answered: statements sent down it, and lookups waiting in its batch.
        var busy = 0
        /// Statements sent down the connection and not yet finished.
        var sent = 0
        /// When a statement last finished on the lane, or its first request came.
        var progress = ContinuousClock.now
        /// Lookups waiting for a statement of the lane to finish, and their keys (by slot).
        var batch: LookupBatch?
        var batchKeys: [String] = []
    }

    private struct State {
        var lanes: [Lane]
        /// Where the search for the least busy lane starts (turns, so that ties spread).
        var next = 0
        /// Statements that went through the pool, and lookups answered by a statement shared with others.
        var throughPool = 0, batched = 0
        var holders: [Task<Void, Never>] = []
        var stopped = false
    }

    /// Where a request goes.
    private enum Route {
        /// No lane is ready or all are stalled: a connection leased from the pool.
        case pool
        /// Down lane `lane`'s connection, now.
        case send(lane: Int, PostgresConnection)
        /// Into lane `lane`'s batch, at `slot` (slot 0 leads: it sends the batch).
        case batch(lane: Int, LookupBatch, slot: Int)
    }

    /// How long a lane with statements under way may go without finishing one before new
    /// statements go elsewhere (20 ms: a lookup takes well under 1 ms).
    static let stall = Duration.milliseconds(20)

    private let client: PostgresClient
    private let logger: Logger
    private let state: Mutex<State>

    /// `count` lanes on `client` (0: every statement goes through the pool).
    init(client: PostgresClient, count: Int, logger: Logger) {
        self.client = client
        self.logger = logger
        state = Mutex(State(lanes: Array(repeating: Lane(), count: count)))
    }

    /// Starts leasing the lanes' connections (in the background).
    func start() {
        state.withLock { state in
            guard !state.stopped, state.holders.isEmpty else { return }
            state.holders = state.lanes.indices.map { lane in Task { await self.hold(lane) } }
        }
    }

    /// Gives the connections back to the pool; statements after it go through the pool.
    func stop() async {
        let holders = state.withLock { state in
            state.stopped = true
            return state.holders
        }
        for holder in holders { holder.cancel() }
        for holder in holders { await holder.value }
    }

    /// The connections held now, the statements that went through the pool so far, and the
    /// lookups answered by a statement shared with others.
    var usage: (held: Int, throughPool: Int, batched: Int) {
        state.withLock { state in (state.lanes.count { $0.connection != nil }, state.throughPool, state.batched) }
    }

    /// Runs `statement` and returns its first row (reading the rest). `pooled`: on a connection
    /// leased from the pool for it — for statements allowed longer than the request path's
    /// (the fleet's coordination), which must not queue behind a lane's lookups that a slow
    /// database makes time out one after another.
    func first<Statement: PostgresPreparedStatement>(_ statement: Statement, pooled: Bool = false) async throws -> Statement.Row?
    where Statement.Row: Sendable {
        switch pooled ? .pool : route(batching: nil) {
        case .send(let lane, let connection):
            defer { finished(lane, answered: 1) }
            return try await connection.execute(statement, logger: logger).first()
        case .pool, .batch:
            return try await client.execute(statement, logger: logger).first()
        }
    }

    /// Runs `statement`, reading its rows to the end (`pooled`: as for ``first(_:pooled:)``).
    func run<Statement: PostgresPreparedStatement>(_ statement: Statement, pooled: Bool = false) async throws where Statement.Row: Sendable {
        _ = try await first(statement, pooled: pooled)
    }

    /// Looks `lookup`'s key up: at once when its lane is idle, else with the other lookups
    /// waiting on the lane, as one statement (`pooled`: as for ``first(_:pooled:)``, alone).
    func lookup(_ lookup: PostgresStatements.Lookup, pooled: Bool = false) async throws -> PostgresStatements.Lookup.Row? {
        switch pooled ? .pool : route(batching: lookup.key) {
        case .pool:
            return try await client.execute(lookup, logger: logger).first()
        case .send(let lane, let connection):
            defer { finished(lane, answered: 1) }
            return try await connection.execute(lookup, logger: logger).first()
        case .batch(_, let batch, let slot) where slot > 0:
            return try await batch.answer(slot)
        case .batch(let lane, let batch, _):
            // The leader: when a statement of the lane finishes, it takes the batch (later
            // lookups start another) and sends it.
            await batch.waitForTurn()
            let (keys, connection) = state.withLock { state in
                let keys = state.lanes[lane].batchKeys
                state.lanes[lane].batch = nil
                state.lanes[lane].batchKeys = []
                state.lanes[lane].sent += 1
                if keys.count > 1 { state.batched += keys.count }
                return (keys, state.lanes[lane].connection)
            }
            defer { finished(lane, answered: keys.count) }
            if keys.count == 1 {
                if let connection { return try await connection.execute(lookup, logger: logger).first() }
                return try await client.execute(lookup, logger: logger).first()
            }
            let many = PostgresStatements.LookupMany(keys: keys, touchInterval: lookup.touchInterval, maxRecordBytes: lookup.maxRecordBytes)
            // In a task of its own: the leader's caller may give up (its time limit), the others'
            // answers must still come.
            let rows = await Task { [client, logger] () async throws -> [PostgresStatements.Lookup.Row] in
                if let connection { return try await connection.execute(many, logger: logger).all() }
                return try await client.execute(many, logger: logger).all()
            }.result
            let found = rows.map { rows in Dictionary(rows.map { ($0.0, $0) }) { first, _ in first } }
            let answers = keys.map { key in found.map { $0[key] } }
            batch.deliver(answers)
            return try answers[0].get()
        }
    }

    /// Where a request goes: the least busy lane with a connection that is not stalled, counted
    /// as one request busier — sent at once, or into the lane's batch when it is a lookup
    /// (`batching` its key) and the lane's connection is busy; the pool when no lane will do.
    private func route(batching key: String?) -> Route {
        let now = ContinuousClock.now
        return state.withLock { state in
            var chosen: Int?
            let count = state.lanes.count
            for offset in 0..<count {
                let lane = (state.next + offset) % count, candidate = state.lanes[lane]
                guard candidate.connection != nil, candidate.busy == 0 || now - candidate.progress < Self.stall else { continue }
                if chosen.map({ candidate.busy < state.lanes[$0].busy }) ?? true { chosen = lane }
                if candidate.busy == 0 { break }
            }
            guard let chosen, let connection = state.lanes[chosen].connection else {
                if count > 0 { state.throughPool += 1 }
                return .pool
            }
            state.next = (chosen + 1) % count
            if state.lanes[chosen].busy == 0 { state.lanes[chosen].progress = now }
            state.lanes[chosen].busy += 1
            guard let key, state.lanes[chosen].sent > 0 else {
                state.lanes[chosen].sent += 1
                return .send(lane: chosen, connection)
            }
            let batch = state.lanes[chosen].batch ?? LookupBatch()
            state.lanes[chosen].batch = batch
            state.lanes[chosen].batchKeys.append(key)
            return .batch(lane: chosen, batch, slot: state.lanes[chosen].batchKeys.count - 1)
        }
    }

    /// A statement of lane `lane` finished, answering `answered` requests: the lane's batch may go.
    private func finished(_ lane: Int, answered: Int) {
        let now = ContinuousClock.now
        let batch = state.withLock { state in
            state.lanes[lane].busy -= answered
            state.lanes[lane].sent -= 1
            state.lanes[lane].progress = now
            return state.lanes[lane].batch
        }
        batch?.turn()
    }

    /// Lane `lane`: leases a connection and holds it until it closes or the lanes stop, again and again.
    private func hold(_ lane: Int) async {
        var delay = Duration.milliseconds(50)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    self.state.withLock { $0.lanes[lane].connection = connection }
                    defer { self.state.withLock { $0.lanes[lane].connection = nil } }
                    delay = .milliseconds(50)
                    await Self.closedOrCancelled(connection)
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("recall postgres storage: a lane could not lease a connection: \(error)")
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(2))
        }
    }

    /// Returns when `connection` closes or the task is cancelled.
    private static func closedOrCancelled(_ connection: PostgresConnection) async {
        let waiting = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let wake: @Sendable () -> Void = { waiting.withLock { $0.take() }?.resume() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiting.withLock { $0 = continuation }
                connection.closeFuture.whenComplete { _ in wake() }
                // A cancellation before the continuation was kept found nothing to wake.
                if Task.isCancelled { wake() }
            }
        } onCancel: {
            wake()
        }
    }
}
