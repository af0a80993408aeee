import Foundation
import PostgresNIO

/// The listener's heartbeat. Memory tiers over the storage serve what they hold only as long as
/// they would hear of a change: a listening connection that dies without a reset (a failover, a
/// partition, a proxy that stops forwarding) delivers no notification and reports no error until
/// TCP gives up, minutes later. So every ``PostgresStorage/Configuration/heartbeat`` the listener
/// sends itself a notification over the listener's own connection, and when none came back for
/// ``PostgresStorage/Configuration/silenceLimit`` it stops trusting the tiers and reconnects.
extension FleetListener {
    /// Sends a heartbeat every ``PostgresStorage/Configuration/heartbeat`` and checks that one came
    /// back within ``PostgresStorage/Configuration/silenceLimit``; runs until ``stop()``.
    func watchListener() async {
        var beat = 0
        while !Task.isCancelled {
            do { try await clock.sleep(for: configuration.heartbeat) } catch { return }
            guard !Task.isCancelled else { return }
            beat += 1
            let (connection, lastHeard) = state.withLock { ($0.listening, $0.lastHeard) }
            if let connection {
                // Off this loop: over a connection that stopped carrying packets, the send itself
                // hangs. (The comment names the listener's connection in `pg_stat_activity`.)
                let payload = instance.uuidString + "!" + String(beat)
                Task { [logger, configuration] in
                    _ = try? await Deadline.run(within: configuration.silenceLimit) {
                        try await connection.query("/* recall listener */ SELECT pg_notify(\(Self.channel), \(payload))", logger: logger).drain()
                    }
                }
            }
            if clock.now - lastHeard > configuration.silenceLimit { await listenerIsSilent() }
        }
    }

    /// A heartbeat came back: the listener hears the fleet (again).
    func heardHeartbeat() {
        let wasSilent = state.withLock { state -> Bool in
            state.lastHeard = clock.now
            defer { state.silent = false }
            return state.silent
        }
        if wasSilent { logger.notice("recall postgres storage: the listener hears the fleet again; memory tiers serve again") }
    }

    /// No heartbeat for the silence limit: the memory tiers are emptied (and, while it lasts,
    /// emptied every heartbeat and keep nothing read from the table), and a listening connection
    /// that carried no heartbeat for the whole limit is closed so the listener connects anew.
    private func listenerIsSilent() async {
        let (first, dead) = state.withLock { state -> (Bool, PostgresConnection?) in
            let first = !state.silent
            state.silent = true
            guard let since = state.listeningSince, clock.now - since > configuration.silenceLimit else { return (first, nil) }
            state.listeningSince = nil
            return (first, state.listening)
        }
        if first {
            counters.count { $0.silences += 1 }
            logger.notice(
                "recall postgres storage: the listener heard nothing for \(configuration.silenceLimit); memory tiers stop serving until it hears again")
        }
        await forgetTiers(nil)
        // Only if it is still the listener's: it may have been handed back to the pool meanwhile.
        if let dead, state.withLock({ $0.listening === dead }) { try? await dead.close() }
    }
}
