import HealthStore
import SQLite

/// The person's side of their data (docs/api.md, "People: recent access, own data, erasure"): the recent-access log, deleting what one
/// app saved, erasing the account, and the admin's lists.
extension SQLiteHealthStore {
    // MARK: Recent access

    static let accessLogSchema = """
        -- Recent access: per user, app, type and UTC quarter hour (slot: its start, Unix ms), how
        -- often the app read and wrote the type; counts only, never a value. Flushed from memory
        -- about once a second (AccessRecorder); purged after accessLogRetentionDays.
        CREATE TABLE access_log (
            user_id INTEGER NOT NULL,
            slot INTEGER NOT NULL,
            app TEXT NOT NULL,
            type TEXT NOT NULL,
            reads INTEGER NOT NULL,
            samples_read INTEGER NOT NULL,
            writes INTEGER NOT NULL,
            samples_written INTEGER NOT NULL,
            last_access_ms INTEGER NOT NULL,
            PRIMARY KEY (user_id, slot, app, type)
        ) WITHOUT ROWID;
        CREATE INDEX access_log_by_slot ON access_log(slot);
        """

    /// Adds the counts to the stored ones, in one transaction. Counts of a user who no longer
    /// exists (erased while a request was in flight) are dropped.
    public func recordAccess(_ entries: [AccessLogEntry]) throws {
        guard !entries.isEmpty else { return }
        try pool.write { db in
            let insert = try db.cachedStatement("""
                INSERT INTO access_log (user_id, slot, app, type, reads, samples_read, writes, samples_written, last_access_ms)
                SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 WHERE EXISTS (SELECT 1 FROM users WHERE id = ?1)
                ON CONFLICT (user_id, slot, app, type) DO UPDATE SET
                    reads = reads + excluded.reads, samples_read = samples_read + excluded.samples_read,
                    writes = writes + excluded.writes, samples_written = samples_written + excluded.samples_written,
                    last_access_ms = max(last_access_ms, excluded.last_access_ms)
                """)
            for entry in entries {
                try insert.execute([.integer(entry.userRowID), .integer(entry.slot), .text(entry.app), .text(entry.type),
                                     .integer(entry.counts.reads), .integer(entry.counts.samplesRead), .integer(entry.counts.writes),
                                     .integer(entry.counts.samplesWritten), .integer(entry.counts.lastAccess)])
            }
        }
    }

    /// The user's stored counts of the quarter hours starting in [from, to).
    public func accessLog(userRowID: Int64, from: Int64, to: Int64) throws -> [AccessLogEntry] {
        try pool.read { db in
            try db.map("""
                SELECT \(AccessLogColumn.selectList) FROM access_log WHERE user_id = ? AND slot >= ? AND slot < ?
                """, [.integer(userRowID), .integer(from), .integer(to)]) { row in
                try AccessLogEntry(row: row, userRowID: userRowID)
            }
        }
    }

    @discardableResult
    public func purgeAccessLog(before cutoff: Int64) throws -> Int {
        try pool.write { db in
            try db.execute("DELETE FROM access_log WHERE slot < ?", [.integer(cutoff)])
            return db.changes
        }
    }

    // MARK: Admin lists

    public func users() throws -> [UserListing] {
        try pool.read { db in
            try db.map("""
                SELECT id AS rowID, external_id AS id, name, created_ms AS created, \(Self.activatedSQL) AS activated
                FROM users ORDER BY created_ms, name
                """) { row in
                try UserListing(row: row)
            }
        }
    }

    /// Whether a `users` row has a password yet (accounts are activated by setting one).
    static let activatedSQL = "password_hash IS NOT NULL"

    public func authorizations(userRowID: Int64) throws -> [AuthorizationListing] {
        // A token's types are its app's switches (the grant); its last use is its own.
        try pool.read { db in
            try db.map("""
                SELECT a.id, a.app, g.read_types, g.share_types, a.created_ms, a.last_used_ms
                FROM authorizations a JOIN app_grants g ON g.user_id = a.user_id AND g.app = a.app
                WHERE a.user_id = ? AND a.revoked_ms IS NULL ORDER BY a.created_ms, a.app, a.id
                """, [.integer(userRowID)]) { row in
                try AuthorizationListing(row: row)
            }
        }
    }

    // MARK: Deleting one app's samples

    /// Deletes every sample `app` saved for the user (a correlation's objects with it), leaving a
    /// tombstone each and the statistics rollups current, in one transaction; returns how many.
    public func deleteSamples(userRowID: Int64, app: String) throws -> Int {
        let (count, change, compacting) = try pool.write { db -> (Int, CommittedChange?, Bool) in
            guard let source = try db.firstInt64("SELECT id FROM sources WHERE user_id = ? AND app = ?",
                                                 [.integer(userRowID), .text(app)]) else { return (0, nil, false) }
            let statement = try db.cachedStatement("""
                SELECT \(Self.sampleColumns) FROM samples WHERE user_id = ? AND source_id = ? AND parent_seq IS NULL ORDER BY seq
                """)
            try statement.bind([.integer(userRowID), .integer(source)])
            var rows: [SampleRow] = []
            try statement.forEachRow { rows.append(try SampleRow($0)) }
            guard !rows.isEmpty else { return (0, nil, false) }
            var deleter = try SampleDeleter(db: db, userRowID: userRowID, store: self)
            for row in rows { try deleter.delete(row) }
            try deleter.finish()
            return (rows.count, CommittedChange(userRowID: userRowID, typeIDs: deleter.touchedTypes, lastSeq: deleter.lastSeq),
                    deleter.keyCompactionPending)
        }
        if compacting { keyCompactor.schedule() }
        if let change { publish(change) }
        return count
    }

    // MARK: Erasure

    /// Every table and how a user's rows in it are deleted (`?1` the user's row id; `?2...?3` the
    /// user's range of statistics day keys; `?4` the user's sign-in limiter key: the name in lower
    /// case, as `SignInLimiter.accountKey` makes it), in an order the foreign keys allow. The erasure test
    /// compares this list with the schema's tables, so a table added later cannot be forgotten.
    package static let erasurePlan: [(table: String, kind: String, delete: String)] = [
        ("access_log", "accessLog", "DELETE FROM access_log WHERE user_id = ?1"),
        ("imu_batches", "imuSessions", "DELETE FROM imu_batches WHERE session_id IN (SELECT id FROM imu_sessions WHERE user_id = ?1)"),
        ("imu_sessions", "imuSessions", "DELETE FROM imu_sessions WHERE user_id = ?1"),
        ("workout_sessions", "workoutSessions", "DELETE FROM workout_sessions WHERE user_id = ?1"),
        ("statistics_day_details", "statisticsRollups", "DELETE FROM statistics_day_details WHERE key BETWEEN ?2 AND ?3"),
        ("statistics_days", "statisticsRollups", "DELETE FROM statistics_days WHERE key BETWEEN ?2 AND ?3"),
        ("statistics_series", "statisticsRollups", "DELETE FROM statistics_series WHERE user_id = ?1"),
        ("sample_key_chunks", "sampleKeyRuns", "DELETE FROM sample_key_chunks WHERE run_id IN (SELECT id FROM sample_key_runs WHERE user_id = ?1)"),
        ("sample_key_runs", "sampleKeyRuns", "DELETE FROM sample_key_runs WHERE user_id = ?1"),
        ("sample_key_deletions", "sampleKeyRuns", "DELETE FROM sample_key_deletions WHERE user_id = ?1"),
        ("sample_key_users", "sampleKeyRuns", "DELETE FROM sample_key_users WHERE user_id = ?1"),
        ("sample_key_compactions", "sampleKeyRuns", "DELETE FROM sample_key_compactions WHERE user_id = ?1"),
        ("samples", "samples", "DELETE FROM samples WHERE user_id = ?1"),
        ("deleted_samples", "tombstones", "DELETE FROM deleted_samples WHERE user_id = ?1"),
        ("change_horizons", "tombstones", "DELETE FROM change_horizons WHERE user_id = ?1"),
        ("type_extents", "sampleIndexes", "DELETE FROM type_extents WHERE user_id = ?1"),
        ("source_priorities", "sourcePriorities", "DELETE FROM source_priorities WHERE user_id = ?1"),
        ("characteristics", "characteristics", "DELETE FROM characteristics WHERE user_id = ?1"),
        ("activity_goals", "activityGoals", "DELETE FROM activity_goals WHERE user_id = ?1"),
        ("activity_summaries", "activitySummaries", "DELETE FROM activity_summaries WHERE user_id = ?1"),
        // Devices are shared by content: the user's go unless another user's source still names one.
        ("devices", "devices", """
            DELETE FROM devices WHERE id IN (SELECT device_id FROM source_types WHERE user_id = ?1)
            AND id NOT IN (SELECT device_id FROM source_types WHERE user_id <> ?1)
            """),
        ("source_types", "sources", "DELETE FROM source_types WHERE user_id = ?1"),
        ("authorization_requests", "authorizationRequests", "DELETE FROM authorization_requests WHERE user_id = ?1"),
        ("app_grants", "appGrants", "DELETE FROM app_grants WHERE user_id = ?1"),
        ("webhook_deliveries", "webhooks", "DELETE FROM webhook_deliveries WHERE user_id = ?1"),
        ("webhook_subscriptions", "webhooks", "DELETE FROM webhook_subscriptions WHERE user_id = ?1"),
        ("authorizations", "authorizations", "DELETE FROM authorizations WHERE user_id = ?1"),
        ("sessions", "sessions", "DELETE FROM sessions WHERE user_id = ?1"),
        ("invitations", "invitations", "DELETE FROM invitations WHERE user_id = ?1"),
        ("sign_in_failures", "signInFailures", "DELETE FROM sign_in_failures WHERE kind = 'account' AND key = ?4"),
        ("sources", "sources", "DELETE FROM sources WHERE user_id = ?1"),
        ("users", "user", "DELETE FROM users WHERE id = ?1"),
    ]

    /// Tables that hold no user's rows: the type catalog's codes, the server's secret, the migrations.
    package static let tablesWithoutUsers: Set<String> = ["type_codes", "meta", "schema_migrations"]

    /// Deletes every row that names the user, in one transaction; open streams of the user's tokens
    /// end (their authorizations are gone). Returns the rows deleted per kind.
    public func eraseUser(_ user: User) throws -> ErasureReport {
        let (report, authorizationIDs) = try pool.write { db -> (ErasureReport, [String]) in
            guard try db.firstInt64("SELECT id FROM users WHERE id = ?", [.integer(user.rowID)]) != nil else {
                throw StoreError.notFound("no user \(user.id)")
            }
            let authorizationIDs = try db.map("SELECT id FROM authorizations WHERE user_id = ?", [.integer(user.rowID)]) {
                try $0.string(ErasedAuthorizationColumn.id)
            }
            let runIDs = try db.map("SELECT id FROM sample_key_runs WHERE user_id = ?", [.integer(user.rowID)]) {
                try $0.int64(ErasedRunColumn.id)
            }
            let keys = try RollupDayKey.key(user: user.rowID, type: 0, day: RollupDayKey.days.lowerBound)
                ... RollupDayKey.key(user: user.rowID, type: RollupDayKey.typeCodes.upperBound, day: RollupDayKey.days.upperBound)
            var report = ErasureReport()
            for step in Self.erasurePlan {
                let statement = try db.prepare(step.delete)
                try statement.execute(Array([SQLValue.integer(user.rowID), .integer(keys.lowerBound), .integer(keys.upperBound),
                                             .text(user.name.lowercased())].prefix(statement.parameterCount)))
                report.add(step.kind, db.changes)
            }
            // The held keys of the runs just deleted.
            try sampleKeys.delete(runIDs, db: db)
            // Inside the write, as a revocation does: the tokens are out of the cache and their
            // streams have ended before any later write commits.
            for id in authorizationIDs { forgetAuthorization(id: id) }
            return (report, authorizationIDs)
        }
        for id in authorizationIDs { forgetAuthorization(id: id) }
        // Row ids may be handed out again (the largest one, once deleted): nothing cached about
        // this user's rows may outlive them.
        forgetCachedRows()
        return report
    }

    /// Every table of the schema with its row count (the erasure test's inventory).
    package func tableRowCounts() throws -> [String: Int] {
        try pool.read { db in
            let tables = try db.map("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") {
                try $0.string(SchemaTableColumn.name)
            }
            var counts: [String: Int] = [:]
            for table in tables { counts[table] = Int(try db.firstInt64("SELECT count(*) FROM \"\(table)\"") ?? 0) }
            return counts
        }
    }

    private enum SchemaTableColumn: Int, TableColumns {
        case name
        static let table = "sqlite_master"
    }

    private enum ErasedAuthorizationColumn: Int, TableColumns {
        case id
        static let table = "authorizations"
    }

    private enum ErasedRunColumn: Int, TableColumns {
        case id
        static let table = "sample_key_runs"
    }
}
