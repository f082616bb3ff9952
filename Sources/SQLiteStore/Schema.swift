import HealthStore
import SQLite

/// The database schema as ordered, named migrations. Never edit a shipped migration: add one.
enum Schema {
    /// `sampleKeys`: the uuid key derivation the store uses, for building the runs of an existing
    /// database's samples.
    static func migrator(sampleKeys: SampleKeyIndex = SampleKeyIndex()) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.register("001-users-authorizations-samples") { db in
            try db.execute("""
                CREATE TABLE users (
                    id INTEGER PRIMARY KEY,
                    external_id TEXT NOT NULL UNIQUE,
                    name TEXT NOT NULL UNIQUE,
                    created_ms INTEGER NOT NULL
                );
                -- One token = one app acting for one user. Only the SHA-256 of the token is kept.
                CREATE TABLE authorizations (
                    id TEXT PRIMARY KEY,
                    user_id INTEGER NOT NULL REFERENCES users(id),
                    app TEXT NOT NULL,
                    token_hash BLOB NOT NULL UNIQUE,
                    read_types TEXT NOT NULL,
                    share_types TEXT NOT NULL,
                    created_ms INTEGER NOT NULL,
                    revoked_ms INTEGER
                );
                -- A source is an app writing for a user (HKSource). first_seq orders the default priority.
                CREATE TABLE sources (
                    id INTEGER PRIMARY KEY,
                    user_id INTEGER NOT NULL REFERENCES users(id),
                    app TEXT NOT NULL,
                    UNIQUE (user_id, app)
                );
                CREATE TABLE type_codes (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE
                );
                CREATE TABLE devices (
                    id INTEGER PRIMARY KEY,
                    body BLOB NOT NULL UNIQUE
                );
                -- seq is the commit order shared with deleted_samples: the change feed's anchor position.
                -- Quantities and category codes live in value; everything else in body (canonical JSON).
                CREATE TABLE samples (
                    seq INTEGER PRIMARY KEY,
                    user_id INTEGER NOT NULL,
                    uuid BLOB NOT NULL,
                    type_id INTEGER NOT NULL,
                    source_id INTEGER NOT NULL,
                    device_id INTEGER,
                    start_ms INTEGER NOT NULL,
                    end_ms INTEGER NOT NULL,
                    value REAL,
                    parent_seq INTEGER,
                    created_ms INTEGER NOT NULL,
                    body BLOB
                );
                CREATE UNIQUE INDEX samples_by_uuid ON samples(user_id, uuid);
                CREATE INDEX samples_by_type_start ON samples(user_id, type_id, start_ms);
                CREATE INDEX samples_by_parent ON samples(parent_seq) WHERE parent_seq IS NOT NULL;
                -- Which sources (and devices) saved which type, and when first: HKSourceQuery and default priority.
                CREATE TABLE source_types (
                    user_id INTEGER NOT NULL,
                    type_id INTEGER NOT NULL,
                    source_id INTEGER NOT NULL,
                    device_id INTEGER NOT NULL DEFAULT 0,
                    first_seq INTEGER NOT NULL,
                    PRIMARY KEY (user_id, type_id, source_id, device_id)
                ) WITHOUT ROWID;
                -- Tombstones for the change feed.
                CREATE TABLE deleted_samples (
                    seq INTEGER PRIMARY KEY,
                    user_id INTEGER NOT NULL,
                    uuid BLOB NOT NULL,
                    type_id INTEGER NOT NULL,
                    source_id INTEGER NOT NULL,
                    deleted_ms INTEGER NOT NULL
                );
                CREATE INDEX deleted_by_user ON deleted_samples(user_id, seq);
                CREATE TABLE source_priorities (
                    user_id INTEGER NOT NULL,
                    type_id INTEGER NOT NULL,
                    apps TEXT NOT NULL,
                    PRIMARY KEY (user_id, type_id)
                ) WITHOUT ROWID;
                CREATE TABLE characteristics (
                    user_id INTEGER PRIMARY KEY,
                    body BLOB NOT NULL
                );
                -- The longest sample per user and type, so an overlap query can bound its index scan.
                CREATE TABLE type_extents (
                    user_id INTEGER NOT NULL,
                    type_id INTEGER NOT NULL,
                    max_duration_ms INTEGER NOT NULL,
                    PRIMARY KEY (user_id, type_id)
                ) WITHOUT ROWID;
                CREATE TABLE meta (
                    key TEXT PRIMARY KEY,
                    value BLOB NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.register("004-imu-sessions") { db in
            try db.execute("""
                -- A phone's IMU session: the pedometer's state after the last acknowledged batch.
                CREATE TABLE imu_sessions (
                    id INTEGER PRIMARY KEY,
                    user_id INTEGER NOT NULL,
                    source_id INTEGER NOT NULL,
                    session TEXT NOT NULL,
                    device BLOB,
                    next_seq INTEGER NOT NULL,
                    state BLOB NOT NULL,
                    ended INTEGER NOT NULL DEFAULT 0,
                    UNIQUE (user_id, source_id, session)
                );
                -- Each acknowledged batch (seq -1 is the session's end): its answer, replayed for a
                -- repeated seq, and its figures for GET /v1/pedometer.
                CREATE TABLE imu_batches (
                    session_id INTEGER NOT NULL,
                    seq INTEGER NOT NULL,
                    start_ms INTEGER NOT NULL,
                    end_ms INTEGER NOT NULL,
                    steps INTEGER NOT NULL,
                    distance REAL NOT NULL,
                    floors_up INTEGER NOT NULL,
                    floors_down INTEGER NOT NULL,
                    cadence REAL,
                    pace REAL,
                    response BLOB NOT NULL,
                    PRIMARY KEY (session_id, seq)
                ) WITHOUT ROWID;
                CREATE INDEX imu_batches_by_time ON imu_batches(session_id, end_ms);
                """)
        }
        migrator.register("005-change-feed") { db in
            try db.execute("""
                -- The change feed reads one user's rows in seq order (anchored queries).
                CREATE INDEX samples_by_user_seq ON samples(user_id, seq);
                -- Tombstone purges find old tombstones without a full scan.
                CREATE INDEX deleted_by_time ON deleted_samples(deleted_ms);
                -- Per user: the highest seq of a purged tombstone. An anchor at or past it still sees
                -- every deletion after it; an older one is expired (410).
                CREATE TABLE change_horizons (
                    user_id INTEGER PRIMARY KEY,
                    seq INTEGER NOT NULL
                );
                """)
        }
        migrator.register("006-activity-summaries") { db in
            // HKActivitySummary per user and calendar day (the rings), from imports; energy in kcal,
            // move and exercise time in minutes, stand in hours. NULL where the source had no value.
            try db.execute("""
                CREATE TABLE activity_summaries (
                    user_id INTEGER NOT NULL,
                    day TEXT NOT NULL,
                    active_energy_burned REAL,
                    active_energy_burned_goal REAL,
                    apple_move_time REAL,
                    apple_move_time_goal REAL,
                    apple_exercise_time REAL,
                    apple_exercise_time_goal REAL,
                    apple_stand_hours REAL,
                    apple_stand_hours_goal REAL,
                    PRIMARY KEY (user_id, day)
                ) WITHOUT ROWID;
                """)
        }
        migrator.register("007-tombstone-sample-values") { db in
            try db.execute("""
                -- What a deleted sample was, so the statistics indexes can catch up by removing it exactly.
                -- NULL on tombstones written before this migration (their samples predate every index).
                ALTER TABLE deleted_samples ADD COLUMN sample_seq INTEGER;
                ALTER TABLE deleted_samples ADD COLUMN start_ms INTEGER;
                ALTER TABLE deleted_samples ADD COLUMN end_ms INTEGER;
                ALTER TABLE deleted_samples ADD COLUMN value REAL;
                -- The user's Move, Exercise and Stand goals for activity summaries (HKActivitySummary).
                CREATE TABLE activity_goals (
                    user_id INTEGER PRIMARY KEY,
                    active_energy_kcal REAL NOT NULL,
                    exercise_minutes REAL NOT NULL,
                    stand_hours REAL NOT NULL
                );
                """)
        }
        migrator.register("008-workout-sessions") { db in
            try db.execute("""
                -- A live workout (HKWorkoutSession) of one app for one user. events holds the pause and
                -- resume events as JSON [[type, ms], ...]; zone_* is the heart-rate zone judgement so far:
                -- heart-rate rows with seq > zone_seq are not judged yet, zone_state is the last state
                -- published (NULL: none since the start or the last resume), zone_latest_ms the start
                -- of the latest reading judged.
                CREATE TABLE workout_sessions (
                    id INTEGER PRIMARY KEY,
                    external_id TEXT NOT NULL UNIQUE,
                    user_id INTEGER NOT NULL,
                    source_id INTEGER NOT NULL,
                    activity_type TEXT NOT NULL,
                    zone_low REAL,
                    zone_high REAL,
                    state TEXT NOT NULL,
                    start_ms INTEGER NOT NULL,
                    end_ms INTEGER,
                    events TEXT NOT NULL,
                    workout_uuid BLOB,
                    zone_seq INTEGER NOT NULL,
                    zone_state TEXT,
                    zone_latest_ms INTEGER
                );
                CREATE INDEX workout_sessions_active ON workout_sessions(user_id) WHERE state <> 'ended';
                """)
        }
        migrator.register("009-statistics-rollups") { db in
            try db.execute("""
                -- Statistics rollups: one row per (user, quantity type, UTC day) that any sample shapes,
                -- rewritten in the transaction that saves or deletes such a sample (and for every day of
                -- the series when its source order changes). body is the day in the Statistics module's
                -- DayRollup format: a cumulative day's merged and per-source running integrals, a
                -- discrete day's samples in start order. A query reads one row per day it touches.
                CREATE TABLE statistics_days (
                    user_id INTEGER NOT NULL,
                    type_id INTEGER NOT NULL,
                    day INTEGER NOT NULL,
                    body BLOB NOT NULL,
                    PRIMARY KEY (user_id, type_id, day)
                ) WITHOUT ROWID;
                -- Bumped with every change to a series' rows: decoded rows cached in memory are current
                -- while their version is.
                CREATE TABLE statistics_series (
                    user_id INTEGER NOT NULL,
                    type_id INTEGER NOT NULL,
                    version INTEGER NOT NULL,
                    PRIMARY KEY (user_id, type_id)
                ) WITHOUT ROWID;
                """)
        }
        migrator.register("010-authorization-read-disclosure") { db in
            try db.execute("""
                -- Whether the token may learn its own read list (GET /v1/authorizations/current). As in
                -- HealthKit, read permission is never disclosed unless the admin opted this app in;
                -- existing authorizations keep the default, off.
                ALTER TABLE authorizations ADD COLUMN discloses_read INTEGER NOT NULL DEFAULT 0;
                """)
        }
        migrator.register("011-statistics-rollup-slots") { db in
            try db.execute("""
                -- A cumulative day's body now holds its running integral at the 15-minute slot
                -- boundaries only; the whole function moves to detail, read only by queries with a
                -- bucket edge inside a slot. Every row is (re)built: an existing database gets the
                -- rows of every series it holds.
                ALTER TABLE statistics_days ADD COLUMN detail BLOB;
                DELETE FROM statistics_days;
                """)
            try StatisticsRollups.rebuildAll(db, layout: .columns)
        }
        migrator.register("012-statistics-days-rowid") { db in
            try db.execute("""
                -- statistics_days becomes an ordinary rowid table with its key in a separate index. As a
                -- WITHOUT ROWID table every row was a key of the table's own B-tree, and SQLite reads a
                -- whole key to compare it when the key overflows its page: each step of a range scan read
                -- the day's detail (tens of KiB in overflow pages) though the query asked for the body
                -- only. Now the scan compares the narrow index entries and reads a row's leading columns.
                CREATE TABLE statistics_days_next (
                    user_id INTEGER NOT NULL,
                    type_id INTEGER NOT NULL,
                    day INTEGER NOT NULL,
                    body BLOB NOT NULL,
                    detail BLOB,
                    PRIMARY KEY (user_id, type_id, day)
                );
                INSERT INTO statistics_days_next (user_id, type_id, day, body, detail)
                    SELECT user_id, type_id, day, body, detail FROM statistics_days ORDER BY user_id, type_id, day;
                DROP TABLE statistics_days;
                ALTER TABLE statistics_days_next RENAME TO statistics_days;
                """)
        }
        migrator.register("013-statistics-discrete-compact") { db in
            // Discrete days (heart rate...) move to the compact body layout: a day of readings
            // every few minutes shrinks from about 7 KiB (a table page and an overflow page) to
            // under 2 KiB, and each series' days are rewritten together in day order, so a year
            // of them is read from a few hundred consecutive rows instead of scattered pages. The
            // rows are transcoded, not rebuilt from samples: the figures stay bit for bit.
            try StatisticsRollups.rewriteDiscreteRows(db)
        }
        migrator.register("014-sample-key-runs") { db in
            // Samples are found by uuid through per-user sorted runs of 32-bit keys (SampleKeyIndex),
            // written once per batch, instead of the unique (user, uuid) index, which cost a random
            // B-tree insert (about a page write) per sample. An existing database gets one run per
            // user from its rows; the index goes.
            try db.execute(SampleKeyIndex.runsSchema)
            try sampleKeys.rebuildAll(db)
            try db.execute("DROP INDEX samples_by_uuid")
        }
        migrator.register("015-sample-key-deletions") { db in
            // Deleted samples' entries are dropped from the runs by merges (SampleKeyIndex), which
            // learn them from sample_key_deletions. Runs written before kept every deleted row's
            // entry: they are rebuilt from the rows, once, if they hold more entries than rows.
            try db.execute(SampleKeyIndex.deletionsSchema)
            let entries = try db.scalarInt64("SELECT coalesce(sum(count), 0) FROM sample_key_runs") ?? 0
            let rows = try db.scalarInt64("SELECT count(*) FROM samples") ?? 0
            if entries != rows { try sampleKeys.rebuildAll(db) }
        }
        migrator.register("016-statistics-days-clustered") { db in
            // A series' day rows become neighbours: statistics_days is keyed by one integer packing
            // (user, type, day), so the table's own B-tree holds a series' year in consecutive rows
            // (about 180 pages of heart rate, 366 of two-source steps; as written here, in key order,
            // a few runs of the file) instead of rows in arrival order across every user, found
            // through a separate index.
            // The bodies stay alone in it (two or one to a page, never an overflow page); the
            // details, read only for a bucket edge inside a slot, move to statistics_day_details
            // under the same keys. The rows move as they are.
            try StatisticsRollups.clusterRows(db)
        }
        migrator.register("017-sample-key-compaction") { db in
            // A user's runs are compacted in short steps of their own after the delete that calls
            // for it, instead of all at once inside that delete (SampleKeyCompaction.swift): each
            // listed deletion gets the generation of the compaction that drops it, and a cursor
            // per user says where the next step resumes. Existing rows are generation 0.
            try db.execute(SampleKeyIndex.compactionSchema)
        }
        migrator.register("010-people-accounts") { db in
            try db.execute("""
                -- The person's password: an Argon2id PHC string (parameters, salt, hash); NULL until the
                -- account is activated with an invitation.
                ALTER TABLE users ADD COLUMN password_hash TEXT;
                -- One open invitation per person, by the SHA-256 of its code (a new one replaces it).
                CREATE TABLE invitations (
                    user_id INTEGER PRIMARY KEY REFERENCES users(id),
                    code_hash BLOB NOT NULL UNIQUE,
                    created_ms INTEGER NOT NULL,
                    expires_ms INTEGER NOT NULL
                );
                -- Signed-in sessions, by the SHA-256 of the cookie's token.
                CREATE TABLE sessions (
                    token_hash BLOB PRIMARY KEY,
                    user_id INTEGER NOT NULL REFERENCES users(id),
                    created_ms INTEGER NOT NULL,
                    last_used_ms INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE INDEX sessions_by_user ON sessions(user_id);
                -- Failed sign-ins within the limiter's window, per account name and per client address.
                CREATE TABLE sign_in_failures (
                    kind TEXT NOT NULL,
                    key TEXT NOT NULL,
                    at_ms INTEGER NOT NULL
                );
                CREATE INDEX sign_in_failures_by_key ON sign_in_failures(kind, key, at_ms);
                CREATE INDEX sign_in_failures_by_time ON sign_in_failures(at_ms);
                """)
        }
        migrator.register("011-people-grants") { db in
            try db.execute(PeopleGrantsSchema.sql)
            try PeopleGrantsSchema.deriveGrants(db)
        }
        migrator.register("012-people-access") { db in
            try db.execute(SQLiteHealthStore.accessLogSchema)
        }
        migrator.register("013-webhooks") { db in
            // Webhook subscriptions and their last deliveries; the outbox is the change feed itself.
            try db.execute(SQLiteHealthStore.webhookSchema)
        }
        return migrator
    }
}

/// Permissions owned by the person and the app (`app_grants`), tokens' last use, and RFC 8628's
/// permission requests (`authorization_requests`).
enum PeopleGrantsSchema {
    static let sql = """
        -- The person's switches per app: what every token of the app may read and share (the
        -- authorizations' own read_types/share_types only record what a token was made with).
        -- decided_* are the types answered on or off: the sheet asks only for the others.
        CREATE TABLE app_grants (
            user_id INTEGER NOT NULL REFERENCES users(id),
            app TEXT NOT NULL,
            display_name TEXT NOT NULL,
            read_types TEXT NOT NULL,
            share_types TEXT NOT NULL,
            decided_read_types TEXT NOT NULL,
            decided_share_types TEXT NOT NULL,
            created_ms INTEGER NOT NULL,
            last_used_ms INTEGER,
            PRIMARY KEY (user_id, app)
        ) WITHOUT ROWID;
        -- Written at most once a minute per token (UsageStamp).
        ALTER TABLE authorizations ADD COLUMN last_used_ms INTEGER;
        -- A permission request: the device code only as its SHA-256, the user code as its letters.
        -- state: pending, allowed, denied, issued; user_id is the person who answered.
        CREATE TABLE authorization_requests (
            id TEXT PRIMARY KEY,
            device_code_hash BLOB NOT NULL UNIQUE,
            user_code TEXT NOT NULL UNIQUE,
            app TEXT NOT NULL,
            display_name TEXT NOT NULL,
            reason TEXT NOT NULL,
            share_types TEXT NOT NULL,
            read_types TEXT NOT NULL,
            created_ms INTEGER NOT NULL,
            interval_s INTEGER NOT NULL,
            last_poll_ms INTEGER,
            state TEXT NOT NULL,
            user_id INTEGER REFERENCES users(id),
            granted_share_types TEXT NOT NULL,
            granted_read_types TEXT NOT NULL
        );
        CREATE INDEX authorization_requests_by_created ON authorization_requests (created_ms);
        """

    /// An existing database's tokens become grants: per (user, app), the union of what its live
    /// tokens could read and share, all of it decided (the admin answered for the person), created
    /// when the first of them was.
    static func deriveGrants(_ db: Database) throws {
        enum Column: Int, TableColumns {
            case userID, app, readTypes, shareTypes, createdMs
            static let table = "authorizations"
        }
        struct Key: Hashable { var user: Int64; var app: String }
        var grants: [Key: (read: Set<String>, share: Set<String>, created: Int64)] = [:]
        var order: [Key] = []
        let rows = try db.map("""
            SELECT user_id, app, read_types, share_types, created_ms FROM authorizations WHERE revoked_ms IS NULL ORDER BY created_ms, id
            """) { row in
            (Key(user: try row.int64(Column.userID), app: try row.string(Column.app)), StoredForms.typeList(try row.string(Column.readTypes)),
             StoredForms.typeList(try row.string(Column.shareTypes)), try row.int64(Column.createdMs))
        }
        for (key, read, share, created) in rows {
            if var grant = grants[key] {
                grant.read.formUnion(read)
                grant.share.formUnion(share)
                grants[key] = grant
            } else {
                grants[key] = (read, share, created)
                order.append(key)
            }
        }
        for key in order {
            guard let grant = grants[key] else { continue }
            try db.execute("""
                INSERT INTO app_grants (user_id, app, display_name, read_types, share_types, decided_read_types, decided_share_types, created_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, [.integer(key.user), .text(key.app), .text(key.app), .text(StoredForms.typeListText(grant.read)),
                      .text(StoredForms.typeListText(grant.share)), .text(StoredForms.typeListText(grant.read)),
                      .text(StoredForms.typeListText(grant.share)), .integer(grant.created)])
        }
    }
}
