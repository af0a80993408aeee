import Foundation
import Logging
import PostgresNIO

/// The tables, created or migrated on first use, and the fleet's shared secret.
///
/// Version 1:
/// - `recall_entries`: one row a cache key — `key_hash` (SHA-256 of the key, the primary key),
///   `key` (compared on every read), `record` (the encoded ``/Recall/CacheRecord``), `size`,
///   `stored_at`, `used_at` (touched at most once per touch interval) and `uses` (touches since
///   the last eviction pass: the second chance), `expires_at` (when no stored response can be
///   served any more; null: only eviction removes it). Indexes on `used_at` (eviction) and
///   `expires_at` (expiry), so neither scans the table.
/// - `recall_usage`: rows and bytes of `recall_entries`, kept by a trigger in 16 counter rows (a
///   connection adds to the row of its backend, so concurrent writers seldom wait on one
///   another): the size is read from 16 rows, never counted.
/// - `recall_leases`: claims of fetches across processes (``/Recall/FetchCoordinator``).
/// - `recall_meta`: the schema version and the shared secret.
///
/// Version 2 adds what keeps "no stale data after a completed write" across replicas:
/// - `recall_removals`: removals counted per stripe of keys (4,096 rows, `stripe` 0–4095, from
///   the first 12 bits of the key's hash, `recall_stripe`) and in all (`stripe` -1). A replica
///   reads a key's counts before its request goes to the origin (``PostgresStatements/RemovalCounts``)
///   and stores the answer only while they are unchanged (``PostgresStatements/UpsertIfNotRemoved``,
///   which holds the row it checked `FOR SHARE` while it writes).
/// - `recall_remove(key, notice)`: a removal — counts it (all removals' row, then the stripe's:
///   every writer of several rows takes them in ascending order), then deletes the row in a
///   statement of its own, which sees a store that committed while the count waited for its lock,
///   and tells the fleet. A store that read the counts before the removal so either committed
///   before it (and is deleted) or sees the new count (and writes nothing).
enum PostgresSchema {
    /// The schema version this code writes and reads.
    static let version = 2

    /// The statements that migrate version 1 to 2 (each idempotent).
    static let versionTwo = [
        """
        CREATE TABLE IF NOT EXISTS recall_removals (
            stripe integer PRIMARY KEY,
            removals bigint NOT NULL DEFAULT 0
        )
        """,
        "INSERT INTO recall_removals (stripe) SELECT generate_series(-1, 4095) ON CONFLICT DO NOTHING",
        """
        CREATE OR REPLACE FUNCTION recall_stripe(key_hash bytea) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
            SELECT get_byte(key_hash, 0) * 16 + get_byte(key_hash, 1) / 16
        $$
        """,
        """
        CREATE OR REPLACE FUNCTION recall_remove(removed text, notice text) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            hash bytea := sha256(convert_to(removed, 'UTF8'));
        BEGIN
            UPDATE recall_removals SET removals = removals + 1 WHERE stripe = -1;
            UPDATE recall_removals SET removals = removals + 1 WHERE stripe = recall_stripe(hash);
            DELETE FROM recall_entries WHERE key_hash = hash;
            PERFORM pg_notify('\(FleetListener.channel)', notice);
        END
        $$
        """
    ]

    /// The statements that create version 1 (each idempotent).
    static let versionOne = [
        """
        CREATE TABLE IF NOT EXISTS recall_entries (
            key_hash bytea PRIMARY KEY,
            key text NOT NULL,
            record bytea NOT NULL,
            size integer NOT NULL,
            stored_at timestamptz NOT NULL DEFAULT now(),
            used_at timestamptz NOT NULL DEFAULT now(),
            uses integer NOT NULL DEFAULT 0,
            expires_at timestamptz
        )
        """,
        "CREATE INDEX IF NOT EXISTS recall_entries_used_at ON recall_entries (used_at)",
        "CREATE INDEX IF NOT EXISTS recall_entries_expires_at ON recall_entries (expires_at) WHERE expires_at IS NOT NULL",
        """
        CREATE TABLE IF NOT EXISTS recall_usage (
            shard smallint PRIMARY KEY,
            entries bigint NOT NULL DEFAULT 0,
            bytes bigint NOT NULL DEFAULT 0
        )
        """,
        "INSERT INTO recall_usage (shard) SELECT generate_series(0, 15) ON CONFLICT DO NOTHING",
        """
        CREATE OR REPLACE FUNCTION recall_account() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            delta_entries integer := 0;
            delta_bytes bigint := 0;
        BEGIN
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                delta_entries := delta_entries + 1;
                delta_bytes := delta_bytes + NEW.size;
            END IF;
            IF TG_OP IN ('UPDATE', 'DELETE') THEN
                delta_entries := delta_entries - 1;
                delta_bytes := delta_bytes - OLD.size;
            END IF;
            UPDATE recall_usage SET entries = entries + delta_entries, bytes = bytes + delta_bytes
                WHERE shard = pg_backend_pid() % 16;
            RETURN NULL;
        END
        $$
        """,
        "DROP TRIGGER IF EXISTS recall_entries_account ON recall_entries",
        """
        CREATE TRIGGER recall_entries_account AFTER INSERT OR DELETE OR UPDATE OF size ON recall_entries
            FOR EACH ROW EXECUTE FUNCTION recall_account()
        """,
        """
        CREATE TABLE IF NOT EXISTS recall_leases (
            name text PRIMARY KEY,
            holder uuid NOT NULL,
            expires_at timestamptz NOT NULL
        )
        """
    ]

    /// Creates the tables or migrates them to ``version``, once for the fleet: the work runs in a
    /// transaction under an advisory lock, so replicas starting together do not race.
    /// - Throws: ``PostgresStorageError`` when the database holds a newer schema.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        do {
            try await migrateInTransaction(client, logger: logger)
        } catch let error as PostgresTransactionError {
            // Our own refusal comes out wrapped: say it plainly.
            if let refusal = error.closureError as? PostgresStorageError { throw refusal }
            throw error
        }
    }

    private static func migrateInTransaction(_ client: PostgresClient, logger: Logger) async throws {
        try await client.withTransaction(logger: logger) { connection in
            _ = try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            // Only when missing: `CREATE … IF NOT EXISTS` needs the right to create in the schema
            // even when the table exists, and a runtime role without it must still open.
            let metaExists =
                try await connection.query("SELECT to_regclass('recall_meta') IS NOT NULL", logger: logger)
                .first()?.decode(Bool.self) ?? false
            if !metaExists {
                _ = try await connection.query(
                    "CREATE TABLE IF NOT EXISTS recall_meta (name text PRIMARY KEY, value bytea NOT NULL)",
                    logger: logger)
            }
            let found = try await connection.query("SELECT value FROM recall_meta WHERE name = 'schema_version'", logger: logger)
                .first()?.decode(Data.self)
            let current = found.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
            guard current <= version else {
                throw PostgresStorageError.schemaTooNew(found: current, supported: version)
            }
            guard current < version else { return }
            for statement in (current < 1 ? versionOne : []) + versionTwo {
                _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            let versionText = Data(String(version).utf8)
            _ = try await connection.query(
                """
                INSERT INTO recall_meta (name, value) VALUES ('schema_version', \(versionText))
                ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
                """, logger: logger)
            logger.info("recall postgres storage: schema migrated", metadata: ["from": "\(current)", "to": "\(version)"])
        }
    }

    /// The fleet's secret: read, or made once (32 random bytes) by the first process to ask.
    static func sharedSecret(_ client: PostgresClient, logger: Logger) async throws -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        let candidate = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        _ = try await client.query(
            """
            INSERT INTO recall_meta (name, value) VALUES ('secret', \(candidate)) ON CONFLICT (name) DO NOTHING
            """, logger: logger)
        let row = try await client.query("SELECT value FROM recall_meta WHERE name = 'secret'", logger: logger).first()
        guard let secret = try row?.decode(Data.self), secret.count >= 16 else { throw PostgresStorageError.missingSecret }
        return Array(secret)
    }

    /// The advisory lock that serialises migrations ("recall" in ASCII).
    static let lockKey: Int64 = 0x7265_6361_6c6c
}
