import Synchronization

/// The counters of a ``PostgresStorage`` (``PostgresStorage/Statistics``), which its three parts —
/// the byte store, the fleet's coordination and the listener — count into.
final class StorageCounters: Sendable {
    private let statistics = Mutex(PostgresStorage.Statistics())

    /// Changes the counters with `update`.
    func count(_ update: (inout PostgresStorage.Statistics) -> Void) {
        statistics.withLock { update(&$0) }
    }

    /// The counters now.
    var current: PostgresStorage.Statistics { statistics.withLock { $0 } }
}
