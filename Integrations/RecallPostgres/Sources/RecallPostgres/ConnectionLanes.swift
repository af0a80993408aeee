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
final class ConnectionLanes: Sendable {
    private struct State {
        var connections: [PostgresConnection?]
        /// Statements under way on each lane.
        var busy: [Int]
        /// When a statement last finished on each lane, or its first one started.
        var progress: [ContinuousClock.Instant]
        /// Where the search for the least busy lane starts (turns, so that ties spread).
        var next = 0
        /// Statements that went through the pool.
        var throughPool = 0
        var holders: [Task<Void, Never>] = []
        var stopped = false
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
        state = Mutex(State(connections: Array(repeating: nil, count: count), busy: Array(repeating: 0, count: count),
                             progress: Array(repeating: .now, count: count)))
    }

    /// Starts leasing the lanes' connections (in the background).
    func start() {
        state.withLock { state in
            guard !state.stopped, state.holders.isEmpty else { return }
            state.holders = state.connections.indices.map { lane in Task { await self.hold(lane) } }
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

    /// The connections held now, and the statements that went through the pool so far.
    var usage: (held: Int, throughPool: Int) {
        state.withLock { state in (state.connections.count { $0 != nil }, state.throughPool) }
    }

    /// Runs `statement` and returns its first row (reading the rest). `pooled`: on a connection
    /// leased from the pool for it — for statements allowed longer than the request path's
    /// (the fleet's coordination), which must not queue behind a lane's lookups that a slow
    /// database makes time out one after another.
    func first<Statement: PostgresPreparedStatement>(_ statement: Statement, pooled: Bool = false) async throws -> Statement.Row?
    where Statement.Row: Sendable {
        let (lane, connection) = pooled ? (nil, nil) : pick()
        defer { done(lane) }
        if let connection { return try await connection.execute(statement, logger: logger).first() }
        return try await client.execute(statement, logger: logger).first()
    }

    /// Runs `statement`, reading its rows to the end (`pooled`: as for ``first(_:pooled:)``).
    func run<Statement: PostgresPreparedStatement>(_ statement: Statement, pooled: Bool = false) async throws where Statement.Row: Sendable {
        _ = try await first(statement, pooled: pooled)
    }

    /// The least busy lane with a connection that is not stalled, counted as one statement
    /// busier; nil when there is none.
    private func pick() -> (Int?, PostgresConnection?) {
        let now = ContinuousClock.now
        return state.withLock { state in
            var chosen: Int?
            let count = state.connections.count
            for offset in 0..<count {
                let lane = (state.next + offset) % count
                guard state.connections[lane] != nil, state.busy[lane] == 0 || now - state.progress[lane] < Self.stall else { continue }
                if chosen.map({ state.busy[lane] < state.busy[$0] }) ?? true { chosen = lane }
                if state.busy[lane] == 0 { break }
            }
            guard let chosen else {
                if count > 0 { state.throughPool += 1 }
                return (nil, nil)
            }
            state.next = (chosen + 1) % count
            if state.busy[chosen] == 0 { state.progress[chosen] = now }
            state.busy[chosen] += 1
            return (chosen, state.connections[chosen])
        }
    }

    private func done(_ lane: Int?) {
        guard let lane else { return }
        let now = ContinuousClock.now
        state.withLock { state in
            state.busy[lane] -= 1
            state.progress[lane] = now
        }
    }

    /// Lane `lane`: leases a connection and holds it until it closes or the lanes stop, again and again.
    private func hold(_ lane: Int) async {
        var delay = Duration.milliseconds(50)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    self.state.withLock { $0.connections[lane] = connection }
                    defer { self.state.withLock { $0.connections[lane] = nil } }
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
