import Foundation
import PostgresNIO
import Recall

/// Every statement on the request path, as a named prepared statement (prepared once per
/// connection). Keys are hashed by the database (`sha256`), so a row is found by its primary key.
enum PostgresStatements {
    /// Opens the text of every statement on the request path (not maintenance's, which have a
    /// longer limit): a comment naming this process, by which the storage finds
    /// its own statements in `pg_stat_activity` and cancels those still running past their time
    /// limit (``Reclaim``) — postgres-nio cannot cancel a statement it has sent.
    static let tag = "/* recall \(UUID().uuidString) */ "

    /// Cancels this process's statements (``tag``) that have run longer than `$1` seconds, so
    /// their connections return to the pool; how many.
    struct Reclaim: PostgresPreparedStatement {
        static let name = "recall_reclaim_v1"
        static let sql = """
            WITH stuck AS MATERIALIZED (
                SELECT pid FROM pg_stat_activity
                WHERE state = 'active' AND pid <> pg_backend_pid() AND left(query, $1) = $2
                    AND query_start < now() - make_interval(secs => $3)
            )
            SELECT count(*)::bigint FROM stuck WHERE pg_cancel_backend(pid)
            """
        typealias Row = Int64
        var olderThan: Double

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(Int32(tag.count))
            bindings.append(tag)
            bindings.append(olderThan)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
    }

    /// The row of a key: its stored key, record — `NULL` when it is longer than the largest
    /// record the storage takes (checked by the database, so such a row is never sent) — and
    /// whether its use should be recorded (it was last touched longer ago than the touch interval).
    struct Lookup: PostgresPreparedStatement {
        static let name = "recall_lookup_v2"
        static let sql = tag + selection + " WHERE key_hash = sha256(convert_to($1, 'UTF8'))"
        /// The columns of ``Row`` from `recall_entries` ($2: the touch interval, $3: the largest
        /// record), for ``LookupMany`` too.
        static let selection = """
            SELECT key, CASE WHEN octet_length(record) <= $3 THEN record END, used_at < now() - make_interval(secs => $2)
            FROM recall_entries
            """
        typealias Row = (String, Data?, Bool)
        var key: String
        var touchInterval: Double
        var maxRecordBytes: Int

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(key)
            bindings.append(touchInterval)
            bindings.append(maxRecordBytes)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// ``Lookup`` for several keys at once (lookups that waited for the same connection,
    /// ``LookupBatch``): a row for each key found, in no order.
    struct LookupMany: PostgresPreparedStatement {
        static let name = "recall_lookup_many_v1"
        static let sql =
            tag + Lookup.selection + " WHERE key_hash = ANY (ARRAY(SELECT sha256(convert_to(k, 'UTF8')) FROM unnest($1::text[]) AS k))"
        typealias Row = Lookup.Row
        var keys: [String]
        var touchInterval: Double
        var maxRecordBytes: Int

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(keys)
            bindings.append(touchInterval)
            bindings.append(maxRecordBytes)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Records a use of a key: the recency eviction reads and the second chance it gives.
    struct Touch: PostgresPreparedStatement {
        static let name = "recall_touch_v1"
        static let sql =
            tag + """
                UPDATE recall_entries SET used_at = now(), uses = least(uses + 1, 1000)
                WHERE key_hash = sha256(convert_to($1, 'UTF8'))
                """
        typealias Row = ()
        var key: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(key)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    /// Stores a record under its key, replacing what was there, and tells the fleet (`NOTIFY`),
    /// so memory tiers drop the version they hold.
    struct Upsert: PostgresPreparedStatement {
        static let name = "recall_upsert_v2"
        static let sql =
            tag + """
                WITH stored AS (
                    INSERT INTO recall_entries (key_hash, key, record, size, stored_at, used_at, uses, expires_at)
                    VALUES (sha256(convert_to($1, 'UTF8')), $1, $2, $3, now(), now(), 0, $4)
                    ON CONFLICT (key_hash) DO UPDATE SET key = EXCLUDED.key, record = EXCLUDED.record, size = EXCLUDED.size,
                        stored_at = EXCLUDED.stored_at, used_at = EXCLUDED.used_at, expires_at = EXCLUDED.expires_at
                    RETURNING 1
                )
                SELECT pg_notify('\(FleetListener.channel)', $5) FROM (SELECT count(*) FROM stored) AS counted
                """
        typealias Row = ()
        var key: String
        var record: Data
        var expires: Date?
        var notice: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(key)
            try bindings.append(record)
            bindings.append(Int32(clamping: record.count))
            bindings.append(expires)
            bindings.append(notice)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    /// Stores a record under its key as ``Upsert`` does — only while the removal counts read
    /// before its request went to the origin (``RemovalCounts``) still hold: its stripe's when the
    /// key is of that stripe (`$6`, `$7`), all removals' otherwise (`$8`). The row checked is held
    /// `FOR SHARE` while the record is written, so a removal (``Remove``) comes wholly before (the
    /// count differs: nothing is written) or after (it deletes what was written). Tells the fleet
    /// only when it stored; returns how many rows it wrote (0 or 1).
    struct UpsertIfNotRemoved: PostgresPreparedStatement {
        static let name = "recall_upsert_if_not_removed_v1"
        static let sql =
            tag + """
                WITH gate AS MATERIALIZED (
                    SELECT 1 FROM recall_removals
                    WHERE stripe = (SELECT CASE WHEN recall_stripe(sha256(convert_to($1, 'UTF8'))) = $6 THEN $6 ELSE -1 END)
                        AND removals = (SELECT CASE WHEN recall_stripe(sha256(convert_to($1, 'UTF8'))) = $6 THEN $7 ELSE $8 END)
                    FOR SHARE
                ), stored AS (
                    INSERT INTO recall_entries (key_hash, key, record, size, stored_at, used_at, uses, expires_at)
                    SELECT sha256(convert_to($1, 'UTF8')), $1, $2, $3, now(), now(), 0, $4 FROM gate
                    ON CONFLICT (key_hash) DO UPDATE SET key = EXCLUDED.key, record = EXCLUDED.record, size = EXCLUDED.size,
                        stored_at = EXCLUDED.stored_at, used_at = EXCLUDED.used_at, expires_at = EXCLUDED.expires_at
                    RETURNING 1
                )
                SELECT count(*)::bigint FROM (SELECT pg_notify('\(FleetListener.channel)', $5) FROM stored) AS told
                """
        typealias Row = Int64
        var upsert: Upsert
        var mark: RemovalMark

        func makeBindings() throws -> PostgresBindings {
            var bindings = try upsert.makeBindings()
            bindings.append(Int32(clamping: mark.stripe))
            bindings.append(mark.stripeRemovals)
            bindings.append(mark.allRemovals)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
    }

    /// The removal counts of a key's stripe and of all keys (``RemovalMark``), read before a
    /// request that may store its answer goes to the origin.
    struct RemovalCounts: PostgresPreparedStatement {
        static let name = "recall_removal_counts_v1"
        static let sql =
            tag + """
                SELECT s.stripe, s.removals, a.removals FROM recall_removals s, recall_removals a
                WHERE s.stripe = recall_stripe(sha256(convert_to($1, 'UTF8'))) AND a.stripe = -1
                """
        typealias Row = (Int32, Int64, Int64)
        var key: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(key)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Removes a key — counted first (`recall_remove`, see ``PostgresSchema``), so that no store
    /// of an answer older than the removal lands after it — and tells the fleet (`NOTIFY`), so
    /// memory tiers drop it too.
    struct Remove: PostgresPreparedStatement {
        static let name = "recall_remove_v2"
        static let sql = tag + "SELECT 1 FROM recall_remove($1, $2)"
        typealias Row = ()
        var key: String
        var notice: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(key)
            bindings.append(notice)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    /// Removes a key's row when it is longer than the storage takes (planted, or left by a
    /// writer with a larger limit): it could never be served, and every lookup would carry it.
    struct DeleteOversized: PostgresPreparedStatement {
        static let name = "recall_delete_oversized_v1"
        static let sql =
            tag + """
                DELETE FROM recall_entries WHERE key_hash = sha256(convert_to($1, 'UTF8')) AND octet_length(record) > $2
                """
        typealias Row = ()
        var key: String
        var maxRecordBytes: Int

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(key)
            bindings.append(maxRecordBytes)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    /// Removes a key only if it still holds `record` (bytes found bad must not take a good
    /// record stored since with them).
    struct DeleteIfStill: PostgresPreparedStatement {
        static let name = "recall_delete_if_still_v1"
        static let sql =
            tag + """
                DELETE FROM recall_entries WHERE key_hash = sha256(convert_to($1, 'UTF8')) AND record = $2
                """
        typealias Row = ()
        var key: String
        var record: Data

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(key)
            try bindings.append(record)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    /// Claims a fetch for `leaseTime` seconds unless a live claim holds it; a row comes back when
    /// the claim is this process's, telling whether a record may be stored under the storage key
    /// `$4` its answer will be stored under (another replica's fetch may have stored it since this
    /// one's lookup).
    ///
    /// The statement reads the tables as they were when it began, while its insert sees (waiting
    /// for it, if it is being changed) the latest claim row: another replica's claim, released
    /// after its answer was stored, may end while the statement runs — the stored answer unseen.
    /// (A holder whose whole claim, fetch and release fell within this statement stays unseen: a
    /// fetch within one statement's stall.) So a claim row in the statement's view also says "a
    /// record may be there" (the read that follows looks, patiently); only a claim that found
    /// neither trusts that nothing is stored.
    struct Claim: LeaseStatement {
        static let name = "recall_claim_v3"
        static let sql =
            tag + """
                WITH claimed AS (
                    INSERT INTO recall_leases (name, holder, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
                    ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                        WHERE recall_leases.expires_at < now()
                    RETURNING holder
                )
                SELECT EXISTS (SELECT 1 FROM recall_entries WHERE key_hash = sha256(convert_to($4, 'UTF8')))
                    OR EXISTS (SELECT 1 FROM recall_leases WHERE name = $1)
                FROM claimed
                """
        /// Whether a record may be stored under the key: one is, or another claim on the name was
        /// in the statement's view.
        typealias Row = Bool
        var name: String
        var holder: UUID
        var leaseTime: Double
        var key: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(name)
            bindings.append(holder)
            bindings.append(leaseTime)
            bindings.append(key)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Bool.self) }
    }

    /// Extends this process's claim on `name` by `leaseTime` seconds from now, while it fetches; a
    /// row comes back when the claim is still its own.
    struct Renew: LeaseStatement {
        static let name = "recall_renew_v1"
        static let sql =
            tag + """
                UPDATE recall_leases SET expires_at = now() + make_interval(secs => $3) WHERE name = $1 AND holder = $2 RETURNING 1
                """
        typealias Row = Int32
        var name: String
        var holder: UUID
        var leaseTime: Double

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int32.self) }
    }

    /// Whether a live claim holds `name`.
    struct Claimed: PostgresPreparedStatement {
        static let name = "recall_claimed_v1"
        static let sql = tag + "SELECT 1 FROM recall_leases WHERE name = $1 AND expires_at > now()"
        typealias Row = Int32
        var name: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(name)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int32.self) }
    }

    /// Gives up this process's claim on `name`.
    struct Release: PostgresPreparedStatement {
        static let name = "recall_release_v1"
        static let sql = tag + "DELETE FROM recall_leases WHERE name = $1 AND holder = $2"
        typealias Row = ()
        var name: String
        var holder: UUID

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(name)
            bindings.append(holder)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    /// Removes up to `$1` entries past their expiry, oldest expiry first (the partial index on
    /// `expires_at`): their rows and bytes.
    struct Expire: PostgresPreparedStatement {
        static let name = "recall_expire_v1"
        static let sql = """
            WITH due AS (
                SELECT key_hash FROM recall_entries WHERE expires_at < now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED
            ), gone AS (
                DELETE FROM recall_entries e USING due WHERE e.key_hash = due.key_hash RETURNING e.size
            )
            SELECT count(*)::bigint, coalesce(sum(size), 0)::bigint FROM gone
            """
        typealias Row = (Int64, Int64)
        var batch: Int32

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(batch)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// One eviction pass over the `$1` least recently used entries (the index on `used_at`):
    /// those used since the last pass get a second chance (moved to the back, their uses
    /// reset), the others are removed. Rows locked by another evictor are skipped.
    struct Evict: PostgresPreparedStatement {
        static let name = "recall_evict_v1"
        static let sql = """
            WITH candidates AS (
                SELECT key_hash, uses FROM recall_entries ORDER BY used_at LIMIT $1 FOR UPDATE SKIP LOCKED
            ), spared AS (
                UPDATE recall_entries e SET used_at = now(), uses = 0 FROM candidates c
                WHERE e.key_hash = c.key_hash AND c.uses > 0 RETURNING 1
            ), gone AS (
                DELETE FROM recall_entries e USING candidates c WHERE e.key_hash = c.key_hash AND c.uses = 0 RETURNING e.size
            )
            SELECT (SELECT count(*) FROM gone)::bigint, (SELECT coalesce(sum(size), 0) FROM gone)::bigint,
                   (SELECT count(*) FROM spared)::bigint
            """
        typealias Row = (Int64, Int64, Int64)
        var batch: Int32

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(batch)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// The rows and bytes of `recall_entries`, from the 16 counter rows the trigger keeps.
    struct Usage: PostgresPreparedStatement {
        static let name = "recall_usage_v1"
        static let sql = tag + "SELECT coalesce(sum(entries), 0)::bigint, coalesce(sum(bytes), 0)::bigint FROM recall_usage"
        typealias Row = (Int64, Int64)

        func makeBindings() throws -> PostgresBindings { PostgresBindings() }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}

/// A statement on one claim for a lease: its name, its holder's token, the lease in seconds.
protocol LeaseStatement: PostgresPreparedStatement {
    var name: String { get }
    var holder: UUID { get }
    var leaseTime: Double { get }
}

extension LeaseStatement {
    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(name)
        bindings.append(holder)
        bindings.append(leaseTime)
        return bindings
    }
}
