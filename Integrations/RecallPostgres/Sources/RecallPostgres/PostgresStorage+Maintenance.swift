import Foundation
import Recall
import Synchronization

/// What keeps a ``PostgresStorage``'s table within its limits: passes that remove what can no
/// longer be served and evict the least recently used, and the passes that cancel this process's
/// statements which ran past their limit, so their connections return.
extension PostgresStorage {
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
            counters.count { $0.expired += Int(rows) }
            if Int(rows) < configuration.batchSize { break }
        }
        await refreshStatistics()
        while batches < configuration.batchesPerPass, isOverLimits() {
            batches += 1
            let evict = PostgresStatements.Evict(batch: Int32(clamping: configuration.batchSize))
            let outcome = await attempt(maintenance: true) { [client, logger] in try await client.execute(evict, logger: logger).first() }
            guard let (rows, _, _) = outcome ?? nil else { return }
            counters.count { $0.evictions += Int(rows) }
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
    func storeCounted() {
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
}

extension PostgresStorage {
    /// After a statement was cut by its time limit: postgres-nio cannot cancel it, and its
    /// connection stays leased until the database answers — for a statement waiting on a locked
    /// table, maybe never. So the storage waits as long as its longest limit
    /// (``Configuration/timeout`` or ``Configuration/coordinationTimeout``), then cancels in the
    /// database (`pg_cancel_backend`) every statement of this process still running past it
    /// (found by the tag its text starts with), from the listener's connection when it has one
    /// (the pool's may all be hanging). One pass at a time; a cut during a pass asks for another.
    func reclaimConnections() {
        guard
            state.withLock({ state -> Bool in
                guard !state.shutDown else { return false }
                // A statement cut during a pass may have been too young for it: one more pass follows.
                guard !state.reclaiming else { state.reclaimAgain = true; return false }
                state.reclaiming = true
                return true
            })
        else { return }
        Task { [client, logger, configuration, clock] in
            var failedPasses = 0, cancelledLast = false
            repeat {
                // Past the longest limit any of its statements has (a coordination statement may
                // rightly run longer than a lookup).
                let limit = Self.longestLimitInProcess()
                do { try await clock.sleep(for: limit) } catch { return }
                let statement = PostgresStatements.Reclaim(olderThan: limit.seconds)
                let connection = listener.connection
                let cancelled = try? await Deadline.run(within: configuration.maintenanceTimeout) {
                    if let connection { return try await connection.execute(statement, logger: logger).first() ?? 0 }
                    return try await client.execute(statement, logger: logger).first() ?? 0
                }
                if let cancelled, cancelled > 0 {
                    logger.debug("recall postgres storage: cancelled \(cancelled) statements that ran past \(configuration.timeout)")
                }
                counters.count { $0.statementsCancelled += Int(cancelled ?? 0) }
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

/// The storage a ``FleetCoordination`` made in the storage's initializer reclaims connections
/// through (set once the storage is whole; weak: the storage owns its coordination).
final class ReclaimHandle: Sendable {
    private let reference = Mutex<Weak?>(nil)
    private struct Weak: @unchecked Sendable { weak var storage: PostgresStorage? }

    var storage: PostgresStorage? {
        get { reference.withLock { $0?.storage } }
        set { reference.withLock { $0 = Weak(storage: newValue) } }
    }
}
