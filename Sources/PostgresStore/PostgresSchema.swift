/// The PostgreSQL schema as ordered, named migrations (like the SQLite store's `Schema`). Never
/// edit a shipped migration: append one.
///
/// Distributed by user, so a Citus cluster needs nothing but the statements in
/// `citusDistributionStatements`:
/// - every per-user table carries `user_id`, and its primary and unique keys start with it;
/// - no statement joins or compares two users' rows; each per-user query names one `user_id`, so
///   it runs on one shard (the only exceptions are maintenance: the tombstone purge and the list of
///   users with running workouts, which touch every shard on purpose);
/// - there are no sequences: a user's change numbers come from their own `change_counters` row,
///   updated in the writing transaction, and other ids are chosen by the store (random user ids,
///   per-user source numbers, device ids hashed from the device);
/// - foreign keys only point from reference tables to reference tables;
/// - the shared tables (`users`, `authorizations`: the apps and their tokens, `type_codes`: the
///   type catalog, `meta`: the signing secret) are small and change rarely: reference tables,
///   copied to every node.
public enum PostgresSchema {
    /// (name, SQL) in order. The names follow the SQLite migrations' style.
    public static let migrations: [(name: String, sql: String)] = [
        ("001-users-authorizations-samples", usersAuthorizationsSamples),
        ("002-statistics-rollups-activity", statisticsRollupsActivity),
        (PostgresSessionsSchema.migrationName, PostgresSessionsSchema.sql),
        ("004-statistics-rollups-lz4", statisticsRollupsLZ4),
        (PostgresPeopleSchema.migrationName, PostgresPeopleSchema.sql),
        ("011-people-grants", peopleGrants),
        ("012-people-access", PostgresHealthStore.accessLogSchema),
        (PostgresWebhookSchema.migrationName, PostgresWebhookSchema.sql),
    ]

    /// The shared tables: replicated to every node by `create_reference_table`.
    public static let referenceTables = ["users", "authorizations", "type_codes", "meta"] + PostgresPeopleSchema.referenceTables
        + ["app_grants", "authorization_requests"]
        + PostgresWebhookSchema.referenceTables

    /// The per-user tables, all distributed on `user_id` and co-located with `samples`.
    public static let distributedTables = [
        "samples", "change_counters", "sources", "devices", "source_types", "deleted_samples", "change_horizons",
        "source_priorities", "characteristics", "type_extents", "activity_goals", "activity_summaries",
        "statistics_days", "statistics_series",
    ] + PostgresSessionsSchema.distributedTables + ["access_log"]

    /// What distributes this schema on a Citus cluster (run once, after the first start has made
    /// the tables and before data arrives; docs/operations.md, "PostgreSQL and more than one machine").
    public static var citusDistributionStatements: [String] {
        referenceTables.map { "SELECT create_reference_table('\($0)');" }
            + ["SELECT create_distributed_table('samples', 'user_id');"]
            + distributedTables.dropFirst().map { "SELECT create_distributed_table('\($0)', 'user_id', colocate_with => 'samples');" }
    }

    /// The person's switches per app (which every token of the app reads its access from), tokens'
    /// last use, and RFC 8628's permission requests. Reference tables, like `authorizations`: a
    /// token is looked up with its grant before its user is known, and a request by its codes.
    static let peopleGrants = """
        -- decided_* are the types answered on or off: the permission sheet asks only for the others.
        -- The authorizations' own read_types/share_types now only record what a token was made with.
        CREATE TABLE app_grants (
            user_id bigint NOT NULL REFERENCES users (id),
            app text NOT NULL,
            display_name text NOT NULL,
            read_types text NOT NULL,
            share_types text NOT NULL,
            decided_read_types text NOT NULL,
            decided_share_types text NOT NULL,
            created_ms bigint NOT NULL,
            last_used_ms bigint,
            PRIMARY KEY (user_id, app)
        );
        -- Written at most once a minute per token.
        ALTER TABLE authorizations ADD COLUMN last_used_ms bigint;
        -- The device code only as its SHA-256, the user code as its letters. state: pending,
        -- allowed, denied, issued; user_id is the person who answered.
        CREATE TABLE authorization_requests (
            id text PRIMARY KEY,
            device_code_hash bytea NOT NULL UNIQUE,
            user_code text NOT NULL UNIQUE,
            app text NOT NULL,
            display_name text NOT NULL,
            reason text NOT NULL,
            share_types text NOT NULL,
            read_types text NOT NULL,
            created_ms bigint NOT NULL,
            interval_s integer NOT NULL,
            last_poll_ms bigint,
            state text NOT NULL,
            user_id bigint REFERENCES users (id),
            granted_share_types text NOT NULL,
            granted_read_types text NOT NULL
        );
        CREATE INDEX authorization_requests_by_created ON authorization_requests (created_ms);
        -- An existing database's tokens become grants: per (user, app), the union of what its live
        -- tokens could read and share, all of it decided (the admin answered for the person).
        INSERT INTO app_grants (user_id, app, display_name, read_types, share_types, decided_read_types, decided_share_types, created_ms)
        SELECT l.user_id, l.app, l.app, l.read_types, l.share_types, l.read_types, l.share_types, l.created_ms FROM (
            SELECT a.user_id, a.app, min(a.created_ms) AS created_ms,
                coalesce((SELECT string_agg(DISTINCT t, ',' ORDER BY t) FROM authorizations b, unnest(string_to_array(b.read_types, ',')) AS t
                          WHERE b.user_id = a.user_id AND b.app = a.app AND b.revoked_ms IS NULL AND t <> ''), '') AS read_types,
                coalesce((SELECT string_agg(DISTINCT t, ',' ORDER BY t) FROM authorizations b, unnest(string_to_array(b.share_types, ',')) AS t
                          WHERE b.user_id = a.user_id AND b.app = a.app AND b.revoked_ms IS NULL AND t <> ''), '') AS share_types
            FROM authorizations a WHERE a.revoked_ms IS NULL GROUP BY a.user_id, a.app
        ) l;
        """

    static let usersAuthorizationsSamples = """
        -- Reference tables. users.id is a random positive 63-bit number chosen by the store (no
        -- sequence to share between nodes); it is the distribution key of every per-user table.
        CREATE TABLE users (
            id bigint PRIMARY KEY,
            external_id text NOT NULL UNIQUE,
            name text NOT NULL UNIQUE,
            created_ms bigint NOT NULL
        );
        -- One token = one app acting for one user; only the SHA-256 of the token is kept. A
        -- reference table: a token is looked up before its user is known, and there are a few per
        -- user. source_id is the app's source number for this user (sources below).
        CREATE TABLE authorizations (
            id text PRIMARY KEY,
            user_id bigint NOT NULL REFERENCES users (id),
            app text NOT NULL,
            source_id integer NOT NULL,
            token_hash bytea NOT NULL UNIQUE,
            read_types text NOT NULL,
            share_types text NOT NULL,
            created_ms bigint NOT NULL,
            revoked_ms bigint,
            discloses_read boolean NOT NULL DEFAULT false
        );
        CREATE INDEX authorizations_by_user_app ON authorizations (user_id, app);
        -- The type catalog's stable small codes (the same on every node).
        CREATE TABLE type_codes (
            id integer PRIMARY KEY,
            name text NOT NULL UNIQUE
        );
        CREATE TABLE meta (
            key text PRIMARY KEY,
            value bytea NOT NULL
        );

        -- Per user: the last change number handed out. Every write takes the row's lock (an
        -- UPDATE ... RETURNING in its transaction), so one user's changes are numbered in commit
        -- order whichever node writes, and other users never wait.
        CREATE TABLE change_counters (
            user_id bigint PRIMARY KEY,
            seq bigint NOT NULL
        );
        -- A source is an app writing for a user (HKSource); id is numbered per user from 1.
        CREATE TABLE sources (
            user_id bigint NOT NULL,
            id integer NOT NULL,
            app text NOT NULL,
            PRIMARY KEY (user_id, id),
            UNIQUE (user_id, app)
        );
        -- Devices per user; id is the first 8 bytes of the SHA-256 of body, so a writer knows it
        -- without a round trip.
        CREATE TABLE devices (
            user_id bigint NOT NULL,
            id bigint NOT NULL,
            body bytea NOT NULL,
            PRIMARY KEY (user_id, id)
        );
        -- One row per sample; the client's uuid is the key, so a re-sent batch conflicts instead
        -- of storing twice. seq is the user's change number (anchors, keyset paging). Quantities
        -- and category codes live in value; everything else in body (the SQLite store's encoding).
        CREATE TABLE samples (
            user_id bigint NOT NULL,
            uuid uuid NOT NULL,
            seq bigint NOT NULL,
            type_id integer NOT NULL,
            source_id integer NOT NULL,
            device_id bigint,
            start_ms bigint NOT NULL,
            end_ms bigint NOT NULL,
            value double precision,
            parent_seq bigint,
            created_ms bigint NOT NULL,
            body bytea,
            PRIMARY KEY (user_id, uuid)
        );
        CREATE UNIQUE INDEX samples_by_seq ON samples (user_id, seq);
        CREATE INDEX samples_by_type_start ON samples (user_id, type_id, start_ms);
        CREATE INDEX samples_by_parent ON samples (user_id, parent_seq) WHERE parent_seq IS NOT NULL;
        -- Which sources (and devices) saved which type, and when first: HKSourceQuery, default priority.
        CREATE TABLE source_types (
            user_id bigint NOT NULL,
            type_id integer NOT NULL,
            source_id integer NOT NULL,
            device_id bigint NOT NULL DEFAULT 0,
            first_seq bigint NOT NULL,
            PRIMARY KEY (user_id, type_id, source_id, device_id)
        );
        -- Tombstones for the change feed, numbered from the same counter as samples; what the
        -- sample was, so statistics can be corrected exactly.
        CREATE TABLE deleted_samples (
            user_id bigint NOT NULL,
            seq bigint NOT NULL,
            uuid uuid NOT NULL,
            type_id integer NOT NULL,
            source_id integer NOT NULL,
            deleted_ms bigint NOT NULL,
            sample_seq bigint NOT NULL,
            start_ms bigint NOT NULL,
            end_ms bigint NOT NULL,
            value double precision,
            PRIMARY KEY (user_id, seq)
        );
        CREATE INDEX deleted_by_time ON deleted_samples (deleted_ms);
        -- Per user: the highest seq of a purged tombstone; an older anchor is expired (410).
        CREATE TABLE change_horizons (
            user_id bigint PRIMARY KEY,
            seq bigint NOT NULL
        );
        -- The user's source order per type, as a JSON array of app names.
        CREATE TABLE source_priorities (
            user_id bigint NOT NULL,
            type_id integer NOT NULL,
            apps text NOT NULL,
            PRIMARY KEY (user_id, type_id)
        );
        CREATE TABLE characteristics (
            user_id bigint PRIMARY KEY,
            body bytea NOT NULL
        );
        -- The longest sample per user and type, so an overlap query can bound its index scan.
        CREATE TABLE type_extents (
            user_id bigint NOT NULL,
            type_id integer NOT NULL,
            max_duration_ms bigint NOT NULL,
            PRIMARY KEY (user_id, type_id)
        );
        -- The user's Move, Exercise and Stand goals (HKActivitySummary).
        CREATE TABLE activity_goals (
            user_id bigint PRIMARY KEY,
            active_energy_kcal double precision NOT NULL,
            exercise_minutes double precision NOT NULL,
            stand_hours double precision NOT NULL
        );
        """

    /// Every sample write rewrites the rollup rows of the days it touched, in its transaction (and,
    /// for one user, under the change counter's lock): compressing a day's detail with lz4 instead
    /// of the default pglz costs several times less (same WAL), and lz4 reads back faster too. Old
    /// rows keep their compression until rewritten; a server without lz4 (built without it, or
    /// before PostgreSQL 14) keeps pglz.
    static let statisticsRollupsLZ4 = """
        DO $$
        BEGIN
            IF current_setting('server_version_num')::integer >= 140000 THEN
                EXECUTE 'ALTER TABLE statistics_days ALTER COLUMN body SET COMPRESSION lz4, '
                     || 'ALTER COLUMN detail SET COMPRESSION lz4';
            END IF;
        EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
            NULL;
        END
        $$;
        """

    static let statisticsRollupsActivity = """
        -- Statistics rollups, the SQLite store's shapes: one row per (user, quantity type, UTC
        -- day) in the Statistics module's DayRollup format, rewritten in the transaction that
        -- changes the day; detail holds a cumulative day's whole function.
        CREATE TABLE statistics_days (
            user_id bigint NOT NULL,
            type_id integer NOT NULL,
            day bigint NOT NULL,
            body bytea NOT NULL,
            detail bytea,
            PRIMARY KEY (user_id, type_id, day)
        );
        -- Bumped with every change to a series' rows: a node's decoded copy is current while its
        -- version is, whichever node wrote.
        CREATE TABLE statistics_series (
            user_id bigint NOT NULL,
            type_id integer NOT NULL,
            version bigint NOT NULL,
            PRIMARY KEY (user_id, type_id)
        );
        -- HKActivitySummary per user and calendar day (from imports); NULL where the source had none.
        CREATE TABLE activity_summaries (
            user_id bigint NOT NULL,
            day date NOT NULL,
            active_energy_burned double precision,
            active_energy_burned_goal double precision,
            apple_move_time double precision,
            apple_move_time_goal double precision,
            apple_exercise_time double precision,
            apple_exercise_time_goal double precision,
            apple_stand_hours double precision,
            apple_stand_hours_goal double precision,
            PRIMARY KEY (user_id, day)
        );
        """
}
