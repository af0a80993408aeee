import Recall

/// Why ``PostgresStorage`` could not open, or why one of its operations was cut. Operations
/// never throw at the cache (a failure is a miss or a dropped store); only
/// ``PostgresStorage/open(client:configuration:logger:clock:)`` throws.
///
/// Like every Recall error, it has a `code` (an open set: compare with `==`, or `switch` with a
/// `default:` case) and the details as properties:
///
/// ```swift
/// catch let error as PostgresStorageError where error.code == .schemaTooNew { … }
/// ```
public struct PostgresStorageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``PostgresStorageError``.
    public typealias Code = ErrorCode<PostgresStorageError>

    /// What kind of problem it is.
    public let code: Code
    /// What went wrong, in a sentence.
    public let reason: String
    /// For `schemaTooNew`: the schema version the database holds.
    public var found: Int?
    /// For `schemaTooNew`: the newest schema version this code reads.
    public var supported: Int?
    /// For `timedOut` and `unreachable`: the limit that passed.
    public var limit: Duration?

    /// The database holds a schema newer than this code reads: upgrade RecallPostgres on every
    /// replica before the newest one migrates, or point this one at another database.
    public static func schemaTooNew(found: Int, supported: Int) -> PostgresStorageError {
        PostgresStorageError(
            code: .schemaTooNew,
            reason: "the database holds Recall's cache schema version \(found); this code supports up to \(supported)",
            found: found, supported: supported)
    }

    /// The fleet's shared secret is missing or too short in `recall_meta` (a row edited by hand).
    public static let missingSecret = PostgresStorageError(
        code: .missingSecret,
        reason: "recall_meta holds no usable 'secret' row (at least 16 bytes)")

    /// An operation took longer than ``PostgresStorage/Configuration/timeout``.
    public static func timedOut(_ limit: Duration) -> PostgresStorageError {
        PostgresStorageError(code: .timedOut, reason: "the database did not answer within \(limit)", limit: limit)
    }

    /// ``PostgresStorage/open(client:configuration:logger:clock:)`` could not finish within `limit`
    /// (``PostgresStorage/Configuration/openTimeout``): the database is down or unreachable, or
    /// the client cannot connect to it.
    public static func unreachable(after limit: Duration) -> PostgresStorageError {
        PostgresStorageError(
            code: .unreachable,
            reason: "the database did not answer within \(limit) while opening Recall's cache storage "
                + "(is PostgreSQL up, and the client's host, port and credentials right?)",
            limit: limit)
    }

    /// What went wrong, in a sentence.
    public var description: String { reason }
}

extension ErrorCode where Owner == PostgresStorageError {
    /// See ``PostgresStorageError/schemaTooNew(found:supported:)``.
    public static let schemaTooNew = Self("schemaTooNew")
    /// See ``PostgresStorageError/missingSecret``.
    public static let missingSecret = Self("missingSecret")
    /// See ``PostgresStorageError/timedOut(_:)``.
    public static let timedOut = Self("timedOut")
    /// See ``PostgresStorageError/unreachable(after:)``.
    public static let unreachable = Self("unreachable")
}
