import HealthStore
import PostgreSQL

/// The person's side of their data (docs/api.md, "People: recent access, own data, erasure"): the recent-access log, deleting what one
/// app saved, erasing the account, and the admin's lists; the SQLite store's twin.
extension PostgresHealthStore {
    // MARK: Recent access

    static let accessLogSchema = """
        -- Recent access: per user, app, type and UTC quarter hour (slot: its start, Unix ms), how
        -- often the app read and wrote the type; counts only, never a value. Each node flushes its
        -- counts about once a second and adds them to the row (AccessRecorder).
        CREATE TABLE access_log (
            user_id bigint NOT NULL,
            slot bigint NOT NULL,
            app text NOT NULL,
            type text NOT NULL,
            reads bigint NOT NULL,
            samples_read bigint NOT NULL,
            writes bigint NOT NULL,
            samples_written bigint NOT NULL,
            last_access_ms bigint NOT NULL,
            PRIMARY KEY (user_id, slot, app, type)
        );
        CREATE INDEX access_log_by_slot ON access_log (slot);
        """

    private enum IDColumn: Int, TableColumns {
        case id
        static let table = "users"
    }

    /// Adds the counts to the stored ones in one transaction. The users' rows are locked first (key
    /// share), so an erasure running at the same time either waits for these counts and deletes
    /// them, or has committed and they are dropped.
    public func recordAccess(_ entries: [AccessLogEntry]) throws {
        guard !entries.isEmpty else { return }
        try pool.transaction { connection in
            let present = Set(try connection.map("SELECT id FROM users WHERE id = ANY($1::bigint[]) ORDER BY id FOR KEY SHARE",
                                                 [PostgresArray.bigints(Set(entries.map(\.userRowID)))]) { try $0.int64(IDColumn.id) })
            for entry in entries where present.contains(entry.userRowID) {
                _ = try connection.execute("""
                    INSERT INTO access_log (user_id, slot, app, type, reads, samples_read, writes, samples_written, last_access_ms)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                    ON CONFLICT (user_id, slot, app, type) DO UPDATE SET
                        reads = access_log.reads + excluded.reads, samples_read = access_log.samples_read + excluded.samples_read,
                        writes = access_log.writes + excluded.writes,
                        samples_written = access_log.samples_written + excluded.samples_written,
                        last_access_ms = greatest(access_log.last_access_ms, excluded.last_access_ms)
                    """, [.int64(entry.userRowID), .int64(entry.slot), .text(entry.app), .text(entry.type),
                          .int64(entry.counts.reads), .int64(entry.counts.samplesRead), .int64(entry.counts.writes),
                          .int64(entry.counts.samplesWritten), .int64(entry.counts.lastAccess)])
            }
        }
    }

    public func accessLog(userRowID: Int64, from: Int64, to: Int64) throws -> [AccessLogEntry] {
        try pool.read { connection in
            try connection.map("""
                SELECT \(AccessLogColumn.selectList) FROM access_log WHERE user_id = $1 AND slot >= $2 AND slot < $3
                """, [.int64(userRowID), .int64(from), .int64(to)]) { row in
                try AccessLogEntry(row: row, userRowID: userRowID)
            }
        }
    }

    /// Touches every shard on purpose (maintenance, like the tombstone purge).
    @discardableResult
    public func purgeAccessLog(before cutoff: Int64) throws -> Int {
        try pool.withConnection { connection in
            try connection.execute("DELETE FROM access_log WHERE slot < $1", [.int64(cutoff)])
        }
    }

    // MARK: Admin lists

    public func users() throws -> [UserListing] {
        try pool.read { connection in
            try connection.map("""
                SELECT id, external_id, name, created_ms, \(Self.activatedSQL) FROM users ORDER BY created_ms, name
                """) { row in
                try UserListing(row: row)
            }
        }
    }

    /// Whether a `users` row has a password yet (accounts are activated by setting one).
    static let activatedSQL = "password_hash IS NOT NULL"

    public func authorizations(userRowID: Int64) throws -> [AuthorizationListing] {
        // A token's types are its app's switches (the grant); its last use is its own.
        try pool.read { connection in
            try connection.map("""
                SELECT a.id, a.app, g.read_types, g.share_types, a.created_ms, a.last_used_ms
                FROM authorizations a JOIN app_grants g ON g.user_id = a.user_id AND g.app = a.app
                WHERE a.user_id = $1 AND a.revoked_ms IS NULL ORDER BY a.created_ms, a.app, a.id
                """, [.int64(userRowID)]) { row in
                try AuthorizationListing(row: row)
            }
        }
    }

    // MARK: Deleting one app's samples

    public func deleteSamples(userRowID: Int64, app: String) throws -> Int {
        let (count, change) = try pool.transaction { connection -> (Int, CommittedChange?) in
            guard let source = try connection.scalarInt64("SELECT id FROM sources WHERE user_id = $1 AND app = $2",
                                                          [.int64(userRowID), .text(app)]) else { return (0, nil) }
            let rows = try connection.map("""
                SELECT \(SampleRow.selectList) FROM samples WHERE user_id = $1 AND source_id = $2 AND parent_seq IS NULL
                ORDER BY seq FOR UPDATE
                """, [.int64(userRowID), .int64(source)], SampleRow.init)
            guard !rows.isEmpty else { return (0, nil) }
            return (rows.count, try delete(rows, userRowID: userRowID, connection))
        }
        if let change { publish(change) }
        return count
    }

    // MARK: Erasure

    /// Every table and how a user's rows in it are deleted (`$1` the user's id; `$2` the user's
    /// sign-in limiter key: the name in lower case, as `SignInLimiter.accountKey` makes it), in an
    /// order the foreign keys allow. The erasure test compares this list with the schema's tables, so a
    /// table added later cannot be forgotten.
    package static let erasurePlan: [(table: String, kind: String, delete: String)] = [
        ("access_log", "accessLog", "DELETE FROM access_log WHERE user_id = $1"),
        ("imu_batches", "imuSessions", "DELETE FROM imu_batches WHERE user_id = $1"),
        ("imu_sessions", "imuSessions", "DELETE FROM imu_sessions WHERE user_id = $1"),
        ("workout_sessions", "workoutSessions", "DELETE FROM workout_sessions WHERE user_id = $1"),
        ("statistics_days", "statisticsRollups", "DELETE FROM statistics_days WHERE user_id = $1"),
        ("statistics_series", "statisticsRollups", "DELETE FROM statistics_series WHERE user_id = $1"),
        ("samples", "samples", "DELETE FROM samples WHERE user_id = $1"),
        ("deleted_samples", "tombstones", "DELETE FROM deleted_samples WHERE user_id = $1"),
        ("change_horizons", "tombstones", "DELETE FROM change_horizons WHERE user_id = $1"),
        ("type_extents", "sampleIndexes", "DELETE FROM type_extents WHERE user_id = $1"),
        ("source_priorities", "sourcePriorities", "DELETE FROM source_priorities WHERE user_id = $1"),
        ("characteristics", "characteristics", "DELETE FROM characteristics WHERE user_id = $1"),
        ("activity_goals", "activityGoals", "DELETE FROM activity_goals WHERE user_id = $1"),
        ("activity_summaries", "activitySummaries", "DELETE FROM activity_summaries WHERE user_id = $1"),
        ("devices", "devices", "DELETE FROM devices WHERE user_id = $1"),
        ("source_types", "sources", "DELETE FROM source_types WHERE user_id = $1"),
        ("change_counters", "sampleIndexes", "DELETE FROM change_counters WHERE user_id = $1"),
        ("authorization_requests", "authorizationRequests", "DELETE FROM authorization_requests WHERE user_id = $1"),
        ("app_grants", "appGrants", "DELETE FROM app_grants WHERE user_id = $1"),
        ("webhook_deliveries", "webhooks", "DELETE FROM webhook_deliveries WHERE user_id = $1"),
        ("webhook_subscriptions", "webhooks", "DELETE FROM webhook_subscriptions WHERE user_id = $1"),
        ("authorizations", "authorizations", "DELETE FROM authorizations WHERE user_id = $1"),
        ("sessions", "sessions", "DELETE FROM sessions WHERE user_id = $1"),
        ("invitations", "invitations", "DELETE FROM invitations WHERE user_id = $1"),
        ("sign_in_failures", "signInFailures", "DELETE FROM sign_in_failures WHERE kind = 'account' AND key = $2"),
        ("sources", "sources", "DELETE FROM sources WHERE user_id = $1"),
        ("users", "user", "DELETE FROM users WHERE id = $1"),
    ]

    /// Tables that hold no user's rows: the type catalog's codes, the server's secret, the migrations.
    package static let tablesWithoutUsers: Set<String> = ["type_codes", "meta", "schema_migrations"]

    /// Deletes every row that names the user in one transaction. The user's row is locked first,
    /// then the change counter every sample write of the user locks: a write of the user's already
    /// under way commits before and is deleted with the rest.
    public func eraseUser(_ user: User) throws -> ErasureReport {
        let (report, authorizationIDs) = try pool.transaction { connection -> (ErasureReport, [String]) in
            guard try connection.scalarInt64("SELECT id FROM users WHERE id = $1 FOR UPDATE", [.int64(user.rowID)]) != nil else {
                throw StoreError.notFound("no user \(user.id)")
            }
            _ = try connection.scalarInt64("SELECT seq FROM change_counters WHERE user_id = $1 FOR UPDATE", [.int64(user.rowID)])
            let authorizationIDs = try connection.map("SELECT id FROM authorizations WHERE user_id = $1", [.int64(user.rowID)]) {
                try $0.string(IDColumn.id)
            }
            var report = ErasureReport()
            for step in Self.erasurePlan {
                let parameters: [PostgresValue] = step.delete.contains("$2") ? [.int64(user.rowID), .text(user.name.lowercased())]
                    : [.int64(user.rowID)]
                report.add(step.kind, try connection.execute(step.delete, parameters))
            }
            // Every node drops the tokens and ends their streams, as for a revocation.
            for id in authorizationIDs {
                _ = try connection.execute("SELECT pg_notify($1, $2)", [.text(channel), .text("r \(id)")])
                forgetAuthorization(id: id)
            }
            return (report, authorizationIDs)
        }
        for id in authorizationIDs { forgetAuthorization(id: id) }
        statisticsIndexes.removeAll()
        return report
    }

    /// Every table of the schema with its row count (the erasure test's inventory).
    package func tableRowCounts() throws -> [String: Int] {
        enum Column: Int, TableColumns {
            case tableName
            static let table = "information_schema.tables"
            var name: String { "table_name" }
        }
        return try pool.withConnection { connection in
            let tables = try connection.map("""
                SELECT table_name::text FROM information_schema.tables
                WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
                """) { try $0.string(Column.tableName) }
            var counts: [String: Int] = [:]
            for table in tables {
                counts[table] = Int(try connection.scalarInt64("SELECT count(*) FROM \"\(table)\"") ?? 0)
            }
            return counts
        }
    }
}
