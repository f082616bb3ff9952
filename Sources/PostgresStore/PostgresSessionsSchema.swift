/// The PostgreSQL tables of IMU sessions and workout sessions, a migration of their own after the
/// accounts, samples and statistics migrations (`PostgresSchema`) whose users, sources and change
/// numbers they refer to.
///
/// Distribution: every table is per user. Each carries `user_id`, and every primary and unique key
/// starts with it, so on Citus each is `create_distributed_table('<table>', 'user_id',
/// colocate_with => 'samples')` and every statement below (all filter on one `user_id`) is
/// single-shard, in the same shard as the samples it is maintained with. Nothing uses a sequence
/// or an identity column: IMU sessions are keyed by (user, source, session name) and workout
/// sessions by (user, uuid), so no key needs a cluster-wide counter.
enum PostgresSessionsSchema {
    static let migrationName = "003-imu-workout-sessions"

    /// Per-user tables, distributed on `user_id` and co-located with `samples` like the others.
    static let distributedTables = ["imu_sessions", "imu_batches", "workout_sessions"]

    static let sql = """
        -- A phone's IMU session: the pedometer's state after the last acknowledged batch. A batch
        -- commits only with UPDATE ... WHERE next_seq = <the seq it read> AND NOT ended, so two nodes
        -- taking copies of one batch (or two batches) at once never both commit.
        CREATE TABLE imu_sessions (
            user_id bigint NOT NULL,
            source_id integer NOT NULL,
            session text NOT NULL,
            device bytea,
            next_seq integer NOT NULL,
            state bytea NOT NULL,
            ended boolean NOT NULL DEFAULT false,
            PRIMARY KEY (user_id, source_id, session)
        );
        -- Each acknowledged batch (seq -1 is the session's end): its answer, replayed byte for byte for
        -- a repeated seq, and its figures for GET /v1/pedometer.
        CREATE TABLE imu_batches (
            user_id bigint NOT NULL,
            source_id integer NOT NULL,
            session text NOT NULL,
            seq integer NOT NULL,
            start_ms bigint NOT NULL,
            end_ms bigint NOT NULL,
            steps bigint NOT NULL,
            distance double precision NOT NULL,
            floors_up bigint NOT NULL,
            floors_down bigint NOT NULL,
            cadence double precision,
            pace double precision,
            response bytea NOT NULL,
            PRIMARY KEY (user_id, source_id, session, seq)
        );
        CREATE INDEX imu_batches_by_time ON imu_batches (user_id, source_id, end_ms);
        -- A live workout (HKWorkoutSession) of one app for one user. events: the pause and resume events
        -- as JSON [[type, ms], ...]. zone_*: the heart-rate zone judgement so far: heart-rate samples
        -- after change position zone_seq are not judged yet, zone_state is the last state published
        -- (NULL: none since the start or the last resume), zone_latest_ms the latest reading judged.
        CREATE TABLE workout_sessions (
            user_id bigint NOT NULL,
            id text NOT NULL,
            source_id integer NOT NULL,
            activity_type text NOT NULL,
            zone_low double precision,
            zone_high double precision,
            state text NOT NULL,
            start_ms bigint NOT NULL,
            end_ms bigint,
            events text NOT NULL,
            workout_uuid bytea,
            zone_seq bigint NOT NULL,
            zone_state text,
            zone_latest_ms bigint,
            PRIMARY KEY (user_id, id)
        );
        -- One running or paused session per app and user: the index that makes a second start a
        -- conflict even when two nodes start one at the same instant.
        CREATE UNIQUE INDEX workout_sessions_active ON workout_sessions (user_id, source_id) WHERE state <> 'ended';
        """
}
