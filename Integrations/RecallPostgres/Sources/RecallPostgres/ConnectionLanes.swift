import Logging
import NIOCore
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
///
/// **A connection's generation.** Each connection a lane holds is a generation of it: when the
/// connection closes (noticed from its close, at once) or the lanes stop, the lane forgets its
/// load and its waiting batch is sent elsewhere, so a statement that never returns from a dead
/// connection cannot hold the lane. A lane whose connection has finished nothing for
/// ``keepAlive`` checks it with `SELECT 1` (the pool does so only for connections it holds idle),
/// and closes it when it does not answer within ``keepAliveTimeout``: a connection dropped
/// without a reset (a NAT's idle timeout, a failover) is replaced in bounded time.
final class ConnectionLanes: Sendable {
    private struct Lane {
        var connection: PostgresConnection?
        /// Bumps whenever the connection is set or dropped.
        var generation = 0
        /// Requests on the lane not yet answered: statements sent down it, and lookups waiting in its batch.
        var busy = 0
        /// Statements sent down the connection and not yet finished.
        var sent = 0
        /// When a statement last finished on the lane, or its first request came.
        var progress = ContinuousClock.now
        /// Lookups waiting for a statement of the lane to finish.
        var batch: LookupBatch?
        /// Statements still under way on each generation's connection (so that one is given back idle).
        var outstanding: [Int: Int] = [:]
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

    /// A request's place on a lane: its load counts only while the lane holds that generation.
    private struct Ticket {
        let lane: Int
        let generation: Int
    }

    /// Where a request goes.
    private enum Route {
        /// No lane is ready, all are stalled, or the lane's batch is full: a connection leased from the pool.
        case pool
        /// Down a lane's connection, now.
        case send(Ticket, PostgresConnection)
        /// Into a lane's batch, at `slot` (slot 0 leads: it sends the batch).
        case batch(Ticket, LookupBatch, slot: Int, on: PostgresConnection)
    }

    /// How long a lane with statements under way may go without finishing one before new
    /// statements go elsewhere, and how long a batch waits for its lane at most (20 ms: a lookup
    /// takes well under 1 ms).
    static let stall = Duration.milliseconds(20)
    /// How long a lane's connection may go without finishing a statement before it is checked (30 s).
    static let keepAlive = Duration.seconds(30)
    /// How long the check may take before the connection is closed and replaced (5 s).
    static let keepAliveTimeout = Duration.seconds(5)

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

    /// Gives the connections back to the pool, each once its statements under way finished (2 s
    /// at most); statements after it go through the pool.
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
        state.withLock { state in
            (state.lanes.count { $0.connection.map { !$0.isClosed } ?? false }, state.throughPool, state.batched)
        }
    }

    /// Runs `statement` and returns its first row (reading the rest). `pooled`: on a connection
    /// leased from the pool for it — for statements allowed longer than the request path's
    /// (the fleet's coordination), which must not queue behind a lane's lookups that a slow
    /// database makes time out one after another.
    func first<Statement: PostgresPreparedStatement>(_ statement: Statement, pooled: Bool = false) async throws -> Statement.Row?
    where Statement.Row: Sendable {
        switch pooled ? .pool : route(batching: nil) {
        case .send(let ticket, let connection):
            defer { finished(ticket, answered: 1, sent: true) }
            return try await rows(of: statement, on: connection).first()
        case .pool, .batch:
            return try await rows(of: statement, on: nil).first()
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
            return try await rows(of: lookup, on: nil).first()
        case .send(let ticket, let connection):
            defer { finished(ticket, answered: 1, sent: true) }
            return try await rows(of: lookup, on: connection).first()
        case .batch(_, let batch, let slot, _) where slot > 0:
            return try await batch.answer(slot)
        case .batch(let ticket, let batch, _, let connection):
            return try await lead(batch, on: ticket, waitingOn: connection, lookup)
        }
    }

    /// The batch's leader: when a statement of the lane finishes (or after ``stall``, or when the
    /// lane's connection changes), it takes the batch — later lookups start another — and sends
    /// it: down the lane's connection when it still holds it and was not late, else through the pool.
    private func lead(
        _ batch: LookupBatch, on ticket: Ticket, waitingOn laneConnection: PostgresConnection,
        _ lookup: PostgresStatements.Lookup
    ) async throws -> PostgresStatements.Lookup.Row? {
        let timer = laneConnection.eventLoop.scheduleTask(in: TimeAmount(Self.stall)) { batch.turn(late: true) }
        let late = await batch.waitForTurn()
        timer.cancel()
        let (keys, connection) = state.withLock { state -> ([String], PostgresConnection?) in
            if state.lanes[ticket.lane].batch === batch { state.lanes[ticket.lane].batch = nil }
            let keys = batch.close()
            if keys.count > 1 { state.batched += keys.count }
            let lane = state.lanes[ticket.lane]
            guard !late, lane.generation == ticket.generation, let connection = lane.connection, !connection.isClosed else {
                return (keys, nil)
            }
            state.lanes[ticket.lane].sent += 1
            state.lanes[ticket.lane].outstanding[ticket.generation, default: 0] += 1
            return (keys, connection)
        }
        defer { finished(ticket, answered: keys.count, sent: connection != nil) }
        if keys.count == 1 {
            // Alone after all; its caller may have given up meanwhile.
            try Task.checkCancellation()
            return try await rows(of: lookup, on: connection).first()
        }
        // In a task of its own: the leader's caller may give up (its time limit), the others'
        // answers must still come.
        return try await Task {
            await self.send(keys, of: batch, on: connection, like: lookup)
        }.value.get()
    }

    /// Sends `keys` as one statement and hands each lookup of `batch` its answer as its row
    /// arrives (rows name their keys; matched by the keys' bytes, as the database hashes them);
    /// returns the leader's. When the server refuses the statement (a key it cannot take, say),
    /// the keys not yet answered are looked up one by one, so one bad key fails only its lookup.
    private func send(
        _ keys: [String], of batch: LookupBatch, on connection: PostgresConnection?,
        like lookup: PostgresStatements.Lookup
    ) async -> Result<PostgresStatements.Lookup.Row?, any Error> {
        var slots: [[UInt8]: [Int]] = [:]
        for (slot, key) in keys.enumerated() { slots[Array(key.utf8), default: []].append(slot) }
        var answers: [Int: Result<PostgresStatements.Lookup.Row?, any Error>] = [:]
        func answer(_ slot: Int, _ result: Result<PostgresStatements.Lookup.Row?, any Error>) {
            answers[slot] = result
            batch.deliver(result, to: slot)
        }
        let many = PostgresStatements.LookupMany(keys: keys, touchInterval: lookup.touchInterval, maxRecordBytes: lookup.maxRecordBytes)
        do {
            for try await row in try await rows(of: many, on: connection) {
                for slot in slots[Array(row.0.utf8)] ?? [] where answers[slot] == nil { answer(slot, .success(row)) }
            }
            for slot in keys.indices where answers[slot] == nil { answer(slot, .success(nil)) }
        } catch {
            let refused = (error as? PSQLError)?.code == .server
            for (slot, key) in keys.enumerated() where answers[slot] == nil {
                guard refused else {
                    answer(slot, .failure(error))
                    continue
                }
                var alone = lookup
                alone.key = key
                do {
                    answer(slot, .success(try await rows(of: alone, on: connection).first()))
                } catch {
                    answer(slot, .failure(error))
                }
            }
        }
        return answers[0]!
    }

    /// `statement`'s rows: down `connection`, or on one leased from the pool when there is none.
    private func rows<Statement: PostgresPreparedStatement>(
        of statement: Statement, on connection: PostgresConnection?
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Statement.Row> {
        if let connection { return try await connection.execute(statement, logger: logger) }
        return try await client.execute(statement, logger: logger)
    }

    /// Where a request goes: the least busy lane with an open connection that is not stalled,
    /// counted as one request busier — sent at once, or into the lane's batch when it is a lookup
    /// (`batching` its key) and the lane's connection is busy; the pool when no lane will do or
    /// the batch is full.
    private func route(batching key: String?) -> Route {
        let now = ContinuousClock.now
        return state.withLock { state in
            var chosen: Int?
            let count = state.lanes.count
            for offset in 0..<count {
                let lane = (state.next + offset) % count, candidate = state.lanes[lane]
                guard let connection = candidate.connection, !connection.isClosed,
                    candidate.busy == 0 || now - candidate.progress < Self.stall
                else { continue }
                if chosen.map({ candidate.busy < state.lanes[$0].busy }) ?? true { chosen = lane }
                if candidate.busy == 0 { break }
            }
            guard let chosen, let connection = state.lanes[chosen].connection else {
                if count > 0 { state.throughPool += 1 }
                return .pool
            }
            state.next = (chosen + 1) % count
            let ticket = Ticket(lane: chosen, generation: state.lanes[chosen].generation)
            if let key, state.lanes[chosen].sent > 0 {
                let batch = state.lanes[chosen].batch ?? LookupBatch()
                guard let slot = batch.join(key) else {
                    state.throughPool += 1
                    return .pool
                }
                state.lanes[chosen].batch = batch
                state.lanes[chosen].busy += 1
                return .batch(ticket, batch, slot: slot, on: connection)
            }
            if state.lanes[chosen].busy == 0 { state.lanes[chosen].progress = now }
            state.lanes[chosen].busy += 1
            state.lanes[chosen].sent += 1
            state.lanes[chosen].outstanding[ticket.generation, default: 0] += 1
            return .send(ticket, connection)
        }
    }

    /// A statement of `ticket`'s lane finished (`sent`: down its connection), answering
    /// `answered` requests: the lane's batch may go. Nothing changes the lane's load when it
    /// holds another connection since.
    private func finished(_ ticket: Ticket, answered: Int, sent: Bool) {
        let now = ContinuousClock.now
        let batch = state.withLock { state -> LookupBatch? in
            if sent {
                state.lanes[ticket.lane].outstanding[ticket.generation, default: 1] -= 1
                if state.lanes[ticket.lane].outstanding[ticket.generation] == 0 {
                    state.lanes[ticket.lane].outstanding[ticket.generation] = nil
                }
            }
            guard state.lanes[ticket.lane].generation == ticket.generation else { return nil }
            state.lanes[ticket.lane].busy -= answered
            if sent { state.lanes[ticket.lane].sent -= 1 }
            state.lanes[ticket.lane].progress = now
            return state.lanes[ticket.lane].batch
        }
        batch?.turn()
    }

    // MARK: Holding the connections

    /// Lane `lane`: leases a connection and holds it until it closes or the lanes stop, again and
    /// again (until the pool shuts down).
    private func hold(_ lane: Int) async {
        var delay = Duration.milliseconds(50)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    delay = .milliseconds(50)
                    try await self.keep(connection, on: lane)
                }
            } catch {
                if Task.isCancelled || (error as? PSQLError)?.code == .poolClosed { return }
                logger.debug("recall postgres storage: a lane could not lease a connection: \(error)")
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(2))
        }
    }

    /// Holds `connection` as lane `lane`'s until it closes or the lanes stop (then gives it back
    /// once its statements finished, 2 s at most), checking it when it has finished nothing for
    /// ``keepAlive``.
    private func keep(_ connection: PostgresConnection, on lane: Int) async throws {
        let generation = state.withLock { state in
            state.lanes[lane].generation += 1
            state.lanes[lane].connection = connection
            state.lanes[lane].busy = 0
            state.lanes[lane].sent = 0
            state.lanes[lane].progress = .now
            return state.lanes[lane].generation
        }
        let waiter = Waiter()
        connection.closeFuture.whenComplete { _ in
            self.drop(lane, generation)
            waiter.wake(.closed)
        }
        while true {
            switch await waiter.wait(atMost: Self.keepAlive, on: connection.eventLoop) {
            case .closed:
                return
            case .cancelled:
                drop(lane, generation)
                let end = ContinuousClock.now + .seconds(2)
                while state.withLock({ $0.lanes[lane].outstanding[generation] ?? 0 }) > 0, ContinuousClock.now < end {
                    try? await Task.sleep(for: .milliseconds(5))
                }
                return
            case .timedOut:
                let quiet = state.withLock { ContinuousClock.now - $0.lanes[lane].progress }
                guard quiet >= Self.keepAlive else { continue }
                let answered =
                    (try? await Deadline.run(within: Self.keepAliveTimeout) {
                        try await connection.query("SELECT 1", logger: self.logger).drain()
                        return true
                    }) ?? false
                if answered {
                    state.withLock { if $0.lanes[lane].generation == generation, $0.lanes[lane].busy == 0 { $0.lanes[lane].progress = .now } }
                } else {
                    logger.debug("recall postgres storage: a held connection did not answer its check; closing it")
                    drop(lane, generation)
                    try? await connection.close().get()
                    return
                }
            }
        }
    }

    /// Lane `lane` no longer holds its connection of `generation` (closed, or the lanes stop): its
    /// load is forgotten and its waiting batch goes elsewhere.
    private func drop(_ lane: Int, _ generation: Int) {
        let batch = state.withLock { state -> LookupBatch? in
            guard state.lanes[lane].generation == generation else { return nil }
            state.lanes[lane].generation += 1
            state.lanes[lane].connection = nil
            state.lanes[lane].busy = 0
            state.lanes[lane].sent = 0
            defer { state.lanes[lane].batch = nil }
            return state.lanes[lane].batch
        }
        batch?.turn()
    }

    /// Why a lane's holder woke.
    private enum Wake: Sendable {
        case closed, cancelled, timedOut
    }

    /// Where a lane's holder waits for its connection to close, its task to be cancelled, or a
    /// time to pass. A close is kept: every wait after it returns at once.
    private final class Waiter: Sendable {
        private let state = Mutex<(closed: Bool, waiting: CheckedContinuation<Wake, Never>?)>((false, nil))

        func wake(_ reason: Wake) {
            let waiting = state.withLock { state in
                if reason == .closed { state.closed = true }
                return state.waiting.take()
            }
            waiting?.resume(returning: reason)
        }

        func wait(atMost limit: Duration, on loop: any EventLoop) async -> Wake {
            let timer = loop.scheduleTask(in: TimeAmount(limit)) { self.wake(.timedOut) }
            defer { timer.cancel() }
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let now = state.withLock { state -> Wake? in
                        if state.closed { return .closed }
                        state.waiting = continuation
                        return nil
                    }
                    if let now { return continuation.resume(returning: now) }
                    // A cancellation before the continuation was kept found nothing to wake.
                    if Task.isCancelled { wake(.cancelled) }
                }
            } onCancel: {
                self.wake(.cancelled)
            }
        }
    }
}
