import HealthModel
import HealthStore
import PostgreSQL
import Statistics

// The parts of HealthDataStore this build of the PostgreSQL store does not provide yet: statistics
// (and the rollups every sample write keeps), activity summaries, IMU sessions and workout
// sessions. Each refuses with `PostgresStoreError.unsupported`, never a made-up answer, and
// `unsupportedFeatures` names them so `healthd serve --database postgres://...` refuses to start
// instead of serving some routes wrong. The statistics side of the store replaces this file.

extension PostgresHealthStore {
    /// What this build cannot serve yet (`unsupportedFeatures`); empty once the store is complete.
    static let pendingFeatures = ["statistics", "activity summaries", "IMU sessions", "workout sessions"]

    /// The statistics rollups' share of a sample write (the samples saved or deleted), in the
    /// writing transaction. Rollups are not kept yet: `statistics` refuses instead of reading them.
    func rollupsChanged(_ touches: [RollupTouch], userRowID: Int64, _ connection: PostgresConnection) throws {}

    /// Rebuilds a series' rollups after its source order changed (see `rollupsChanged`).
    func rollupsRebuild(userRowID: Int64, typeCode: Int64, _ connection: PostgresConnection) throws {}

    public func statistics(userRowID: Int64, type: HealthType, buckets: [CalendarBucket], options: StatisticsOptions)
        throws -> StatisticsAnswer {
        throw PostgresStoreError.unsupported("statistics")
    }

    public func saveActivitySummaries(_ summaries: [ActivitySummary], userRowID: Int64) throws {
        throw PostgresStoreError.unsupported("activity summaries")
    }

    public func activitySummaries(userRowID: Int64, from first: HealthDay, through last: HealthDay) throws -> [ActivitySummary] {
        throw PostgresStoreError.unsupported("activity summaries")
    }

    public func imuSession(app: AppAuthorization, session: String, seq: Int?) throws -> IMUSessionLookup {
        throw PostgresStoreError.unsupported("IMU sessions")
    }

    public func commitIMU(app: AppAuthorization, session: String, seq: Int?, device: SampleDevice?, basis: IMUSessionState,
                          result: IMUBatchResult, completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        completion(.failure(PostgresStoreError.unsupported("IMU sessions")))
    }

    public func pedometerTotals(app: AppAuthorization, start: Int64, end: Int64) throws -> PedometerTotals {
        throw PostgresStoreError.unsupported("IMU sessions")
    }

    public func startWorkoutSession(app: AppAuthorization, activityType: String, zone: HeartRateZoneBounds?,
                                    at start: Int64) throws -> WorkoutSession {
        throw PostgresStoreError.unsupported("workout sessions")
    }

    public func workoutSession(id: String, app: AppAuthorization) throws -> WorkoutSession? {
        throw PostgresStoreError.unsupported("workout sessions")
    }

    public func changeWorkoutSession(id: String, app: AppAuthorization, action: WorkoutSessionAction, now: Int64) throws
        -> WorkoutSession {
        throw PostgresStoreError.unsupported("workout sessions")
    }

    public func endWorkoutSession(id: String, app: AppAuthorization, now: Int64, workoutUUID: HealthUUID) throws -> WorkoutSession {
        throw PostgresStoreError.unsupported("workout sessions")
    }

    /// No sessions can exist in this build: none are running (the zone monitor asks at start-up).
    public func activeWorkoutSessionCounts() throws -> [Int64: Int] { [:] }

    public func advanceWorkoutZones(userRowID: Int64) throws -> [WorkoutZoneChange] { [] }
}
