/// Why ``PostgresStorage`` could not open, or why one of its operations was cut. Operations
/// never throw at the cache (a failure is a miss or a dropped store); only
/// ``PostgresStorage/open(client:configuration:logger:)`` throws.
public enum PostgresStorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database holds a schema newer than this code reads: upgrade RecallPostgres on every
    /// replica before the newest one migrates, or point this one at another database.
    case schemaTooNew(found: Int, supported: Int)
    /// The fleet's shared secret is missing or too short in `recall_meta` (a row edited by hand).
    case missingSecret
    /// An operation took longer than ``PostgresStorage/Configuration/timeout``.
    case timedOut(Duration)

    /// What went wrong, in a sentence.
    public var description: String {
        switch self {
        case .schemaTooNew(let found, let supported):
            "the database holds Recall's cache schema version \(found); this code supports up to \(supported)"
        case .missingSecret:
            "recall_meta holds no usable 'secret' row (at least 16 bytes)"
        case .timedOut(let limit):
            "the database did not answer within \(limit)"
        }
    }
}
