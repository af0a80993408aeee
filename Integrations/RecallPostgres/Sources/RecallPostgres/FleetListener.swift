import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The listener of a ``PostgresStorage``: one connection that `LISTEN`s on the fleet's channel
/// for the other replicas' removals and stores, and tells who layers on the storage (memory
/// tiers) which keys changed elsewhere — by name, or by digest for a key too long for a
/// notification (``LongKeyIndex``: only keys this process may hold are dropped). What was sent
/// while it was not listening is lost, so each new listening connection empties the tiers first.
/// Its heartbeat (``FleetListener+Heartbeat.swift``) notices a connection that died without a
/// reset.
final class FleetListener: Sendable {
    struct State {
        /// The listener's connection while it listens: where statements are cancelled from, so
        /// that a pool whose connections all hang still gets them back.
        var listening: PostgresConnection?
        /// When the listener's connection began listening (the clock's time).
        var listeningSince: Duration?
        /// When the listener last heard its own heartbeat (or began listening).
        var lastHeard: Duration = .zero
        /// The listener has not heard its heartbeat for ``PostgresStorage/Configuration/silenceLimit``:
        /// memory tiers are not to be trusted.
        var silent = false
        /// Who layers on the storage (memory tiers) and hears of the fleet's changes.
        var observers: [@Sendable (String?) async -> Void] = []
        /// The keys too long for a notification that this process read or stored (so its memory
        /// tiers may hold them), by their digest: a notice names such a key by its digest.
        var longKeys = LongKeyIndex()
        var listener: Task<Void, Never>?, watcher: Task<Void, Never>?
    }

    /// The channel of the fleet's invalidations.
    static let channel = "recall_invalidations"

    let state = Mutex(State())
    let client: PostgresClient
    let configuration: PostgresStorage.Configuration
    let logger: Logger
    let clock: StorageClock
    let counters: StorageCounters
    /// This process's storage, as named in its notifications (its own are ignored).
    let instance: UUID
    /// Hears of the stores other replicas announce (a wait for their fetch may end).
    private let fleet: FleetCoordination

    init(
        client: PostgresClient, configuration: PostgresStorage.Configuration, logger: Logger, clock: StorageClock,
        counters: StorageCounters, instance: UUID, fleet: FleetCoordination
    ) {
        self.client = client
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        self.counters = counters
        self.instance = instance
        self.fleet = fleet
    }

    /// Starts listening, and the heartbeat that checks it hears.
    func start() {
        let listener = Task { await self.listen() }
        let watcher = Task { await self.watchListener() }
        state.withLock { state in
            state.listener = listener
            state.watcher = watcher
        }
    }

    /// Stops listening and the heartbeat.
    func stop() async {
        let (listener, watcher) = state.withLock { ($0.listener, $0.watcher) }
        watcher?.cancel()
        listener?.cancel()
        await watcher?.value
        await listener?.value
    }

    /// The listener's connection while it listens.
    var connection: PostgresConnection? { state.withLock { $0.listening } }

    /// Whether the listener is silent now (memory tiers must not keep what they read).
    var isSilent: Bool { state.withLock { $0.silent } }

    // MARK: Notices

    /// What a removal or a store tells the fleet: who sent it, and the key — `<id> <key>`, or
    /// `<id> *` for everything, or `<id>#<digest>` for a key too long for a notification (every
    /// replica can compute the digest of the keys it holds; a key nobody holds costs nothing).
    func notice(for key: String?) -> String {
        instance.uuidString + (key.map(Self.noticeName) ?? " *")
    }

    /// How a notice names `key`, after the sender's id: ` <key>`, or `#<digest>` for a key too
    /// long for a notification.
    static func noticeName(of key: String) -> String {
        key.utf8.count <= LongKeyIndex.longerThan ? " " + key : "#" + LongKeyIndex.digest(of: key)
    }

    /// Remembers `key` as one the memory tiers may hold, when it is too long for a notification;
    /// a key the index lets go of (it is full) is dropped from the tiers, so that every long key
    /// they may hold stays known.
    func noteHeld(_ key: String) async {
        guard key.utf8.count > LongKeyIndex.longerThan else { return }
        for dropped in state.withLock({ $0.longKeys.insert(key) }) { await forgetTiers(dropped) }
    }

    /// Tells `observer` of the keys the fleet changed, `nil` when it may have missed some.
    func subscribe(_ observer: @escaping @Sendable (String?) async -> Void) {
        state.withLock { $0.observers.append(observer) }
    }

    /// Tells the observers (memory tiers) that `key` (nil: everything) changed elsewhere.
    func forgetTiers(_ key: String?) async {
        for observer in state.withLock({ $0.observers }) { await observer(key) }
    }

    // MARK: Listening

    /// Listens for the fleet's removals until ``stop()``, reconnecting after failures.
    private func listen() async {
        var delay = Duration.milliseconds(50)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    self.state.withLock { state in
                        state.listening = connection
                        state.listeningSince = self.clock.now
                    }
                    defer { self.state.withLock { $0.listening = nil } }
                    try await connection.listen(on: Self.channel) { notifications in
                        // Listening again: whatever was sent while not listening is lost.
                        await self.forgetTiers(nil)
                        self.counters.count { $0.listeningStarts += 1 }
                        // (A new connection has a whole silence limit to carry a heartbeat.)
                        self.state.withLock { $0.lastHeard = self.clock.now }
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
            do { try await clock.sleep(for: delay) } catch { return }
            delay = min(delay * 2, .seconds(2))
        }
    }

    private func received(_ payload: String) async {
        // Any notification shows the connection carries them.
        state.withLock { $0.lastHeard = clock.now }
        if payload.hasPrefix(instance.uuidString), payload.dropFirst(instance.uuidString.count).first == "!" {
            return heardHeartbeat()
        }
        // (A replica's id is a UUID: neither a space nor a `#` is part of it; other replicas'
        // heartbeats, `<id>!<n>`, have neither and are ignored here.)
        guard let separator = payload.firstIndex(where: { $0 == " " || $0 == "#" }), payload[..<separator] != instance.uuidString else { return }
        let rest = String(payload[payload.index(after: separator)...])
        // The memory tiers drop the key first; then the notice is counted and waiting requests
        // look. Whoever looks, or sees the count, finds the old copy gone (counted before the
        // drop, a copy read through after the count could still be dropped under its reader).
        if payload[separator] == "#" {
            // A long key, by its digest: only a key this process may hold is dropped.
            for key in state.withLock({ $0.longKeys.keys(forDigest: rest) }) { await forgetTiers(key) }
        } else {
            await forgetTiers(rest == "*" ? nil : rest)
        }
        counters.count { $0.invalidationsReceived += 1 }
        // A request of this process waiting for another's fetch of this key may look now.
        fleet.heard(storeNamed: String(payload[separator...]))
    }
}
