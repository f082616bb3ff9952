import HealthModel
import SQLSupport

// Rows both stores read alike: the column lists and the decoders that are the same in SQLite and
// PostgreSQL, generic over the driver's row (`TypedRow`). Each store keeps its SQL; a query selects
// a decoder's columns in its column list's order.

// MARK: Users

/// A `users` row as `User(row:)` reads it, in SELECT order (`selectList`).
package enum UserColumn: Int, TableColumns {
    case rowID, id, name

    package static let table = "users"

    package var name: String {
        switch self {
        case .rowID: "id"
        case .id: "external_id"
        case .name: "name"
        }
    }
}

extension User {
    package init(row: some TypedRow) throws(RowDecodingError) {
        self.init(rowID: try row.int64(UserColumn.rowID), id: try row.string(UserColumn.id), name: try row.string(UserColumn.name))
    }
}

/// What `SignInAccount(row:)` reads: `UserColumn`'s columns, then the password hash (NULL until
/// the account is activated).
package enum SignInAccountColumn: Int, TableColumns {
    case rowID, id, name, passwordHash

    package static let table = "users"

    package var name: String {
        UserColumn(rawValue: rawValue)?.name ?? "password_hash"
    }
}

extension SignInAccount {
    package init(row: some TypedRow) throws(RowDecodingError) {
        self.init(user: try User(row: row), passwordHash: try row.stringIfPresent(SignInAccountColumn.passwordHash))
    }
}

// MARK: Grants and tokens

extension AppGrant {
    /// A row of `app_grants` selected in `AppGrantColumn` order.
    package init(row: some TypedRow) throws(RowDecodingError) {
        self.init(app: try row.string(AppGrantColumn.app), displayName: try row.string(AppGrantColumn.displayName),
                  read: StoredForms.typeList(try row.string(AppGrantColumn.readTypes)),
                  share: StoredForms.typeList(try row.string(AppGrantColumn.shareTypes)),
                  decidedRead: StoredForms.typeList(try row.string(AppGrantColumn.decidedReadTypes)),
                  decidedShare: StoredForms.typeList(try row.string(AppGrantColumn.decidedShareTypes)),
                  created: try row.int64(AppGrantColumn.createdMs), lastUsed: try row.int64IfPresent(AppGrantColumn.lastUsedMs))
    }
}

/// What `AppAuthorization(row:)` reads, a token with its user and its app's grant (where its
/// access comes from), in SELECT order; a query may add `tokenHash` after them.
package enum AuthorizationColumn: Int, TableColumns {
    case id, userID, userExternalID, app, readTypes, shareTypes, sourceID, disclosesRead, tokenHash

    package static let table = "authorizations"
}

extension AppAuthorization {
    package init(row: some TypedRow) throws(RowDecodingError) {
        self.init(id: try row.string(AuthorizationColumn.id), userRowID: try row.int64(AuthorizationColumn.userID),
                  userID: try row.string(AuthorizationColumn.userExternalID), appName: try row.string(AuthorizationColumn.app),
                  sourceRowID: try row.int64(AuthorizationColumn.sourceID),
                  read: StoredForms.typeList(try row.string(AuthorizationColumn.readTypes)),
                  share: StoredForms.typeList(try row.string(AuthorizationColumn.shareTypes)),
                  disclosesRead: try row.bool(AuthorizationColumn.disclosesRead))
    }
}

/// A source and its grant's switches (`s.app, g.read_types, g.share_types`; no grant, no switches).
package enum AppPermissionsColumn: Int, TableColumns {
    case app, readTypes, shareTypes

    package static let table = "app_grants"
}

extension AppPermissions {
    /// One source's row as `folding` takes it.
    package static func row(_ row: some TypedRow) throws(RowDecodingError) -> (app: String, read: String?, share: String?) {
        (try row.string(AppPermissionsColumn.app), try row.stringIfPresent(AppPermissionsColumn.readTypes),
         try row.stringIfPresent(AppPermissionsColumn.shareTypes))
    }
}

/// A live token with its app's switches (`a.id, a.app, g.read_types, g.share_types, a.created_ms,
/// a.last_used_ms`), for the admin's list.
package enum AuthorizationListingColumn: Int, TableColumns {
    case id, app, readTypes, shareTypes, created, lastUsed

    package static let table = "authorizations"
}

extension AuthorizationListing {
    package init(row: some TypedRow) throws(RowDecodingError) {
        self.init(id: try row.string(AuthorizationListingColumn.id), app: try row.string(AuthorizationListingColumn.app),
                  read: StoredForms.typeList(try row.string(AuthorizationListingColumn.readTypes)),
                  share: StoredForms.typeList(try row.string(AuthorizationListingColumn.shareTypes)),
                  created: try row.int64(AuthorizationListingColumn.created),
                  lastUsed: try row.int64IfPresent(AuthorizationListingColumn.lastUsed))
    }
}

extension AppGrant {
    /// Inserts or replaces a grant. Parameters: the user, `app`, `displayName`, the switches
    /// (`StoredForms.typeListText` of read, share, decidedRead, decidedShare) and `created`;
    /// `last_used_ms` is the store's to write, and is kept.
    package static func upsertSQL(_ dialect: SQLDialect) -> String {
        """
        INSERT INTO app_grants (user_id, app, display_name, read_types, share_types, decided_read_types, decided_share_types, created_ms)
        VALUES (\(dialect.placeholders(1...8)))
        ON CONFLICT (user_id, app) DO UPDATE SET display_name = excluded.display_name, read_types = excluded.read_types,
            share_types = excluded.share_types, decided_read_types = excluded.decided_read_types,
            decided_share_types = excluded.decided_share_types
        """
    }
}

// MARK: Permission requests

extension AuthorizationRequestRecord {
    /// A row of `authorization_requests` selected in `AuthorizationRequestColumn` order.
    package init(row: some TypedRow) throws(RowDecodingError) {
        typealias Column = AuthorizationRequestColumn
        let stateText = try row.string(Column.state)
        guard let state = State(rawValue: stateText) else {
            throw RowDecodingError(table: Column.table, column: Column.state.name, problem: "is '\(stateText)', not a request state")
        }
        self.init(
            id: try row.string(Column.id), userCode: try row.string(Column.userCode),
            app: try row.string(Column.app), displayName: try row.string(Column.displayName),
            reason: try row.string(Column.reason),
            share: StoredForms.orderedTypeList(try row.string(Column.shareTypes)),
            read: StoredForms.orderedTypeList(try row.string(Column.readTypes)),
            created: try row.int64(Column.createdMs), interval: try row.int(Column.intervalSeconds),
            lastPoll: try row.int64IfPresent(Column.lastPollMs), state: state,
            userRowID: try row.int64IfPresent(Column.userID),
            grantedShare: StoredForms.orderedTypeList(try row.string(Column.grantedShareTypes)),
            grantedRead: StoredForms.orderedTypeList(try row.string(Column.grantedReadTypes)))
    }

    /// Stores a new request unless its id or a code is taken. Parameters: `id`, the device code's
    /// hash, `userCode`, `app`, `displayName`, `reason`, `share` and `read`
    /// (`StoredForms.orderedTypeListText`), `created`, `interval`, `state`.
    package static func insertSQL(_ dialect: SQLDialect) -> String {
        """
        INSERT INTO authorization_requests (id, device_code_hash, user_code, app, display_name, reason, share_types, read_types,
            created_ms, interval_s, last_poll_ms, state, user_id, granted_share_types, granted_read_types)
        VALUES (\(dialect.placeholders(1...10)), NULL, \(dialect.placeholder(11)), NULL, '', '') ON CONFLICT DO NOTHING
        """
    }

    /// Writes back what a poll or an answer changed. Parameters: `interval`, `lastPoll`, `state`,
    /// `userRowID`, `grantedShare` and `grantedRead` (`StoredForms.orderedTypeListText`),
    /// `displayName`, and the `id` of the row.
    package static func updateSQL(_ dialect: SQLDialect) -> String {
        let p = (1...8).map(dialect.placeholder)
        return """
            UPDATE authorization_requests SET interval_s = \(p[0]), last_poll_ms = \(p[1]), state = \(p[2]), user_id = \(p[3]),
                granted_share_types = \(p[4]), granted_read_types = \(p[5]), display_name = \(p[6]) WHERE id = \(p[7])
            """
    }
}

// MARK: People's data

/// The columns of `access_log` a user's entries are read from, in SELECT order.
package enum AccessLogColumn: Int, TableColumns {
    case slot, app, type, reads, samplesRead, writesCount, samplesWritten, lastAccess

    package static let table = "access_log"

    package var name: String {
        switch self {
        case .slot: "slot"
        case .app: "app"
        case .type: "type"
        case .reads: "reads"
        case .samplesRead: "samples_read"
        case .writesCount: "writes"
        case .samplesWritten: "samples_written"
        case .lastAccess: "last_access_ms"
        }
    }
}

extension AccessLogEntry {
    /// One of `userRowID`'s rows of `access_log`, selected with `AccessLogColumn.selectList`.
    package init(row: some TypedRow, userRowID: Int64) throws(RowDecodingError) {
        self.init(userRowID: userRowID, app: try row.string(AccessLogColumn.app), type: try row.string(AccessLogColumn.type),
                  slot: try row.int64(AccessLogColumn.slot),
                  counts: AccessCounts(reads: try row.int64(AccessLogColumn.reads),
                                       samplesRead: try row.int64(AccessLogColumn.samplesRead),
                                       writes: try row.int64(AccessLogColumn.writesCount),
                                       samplesWritten: try row.int64(AccessLogColumn.samplesWritten),
                                       lastAccess: try row.int64(AccessLogColumn.lastAccess)))
    }
}

/// A user for the admin's list (`id, external_id, name, created_ms`, and whether a password is set).
package enum UserListingColumn: Int, TableColumns {
    case rowID, id, name, created, activated

    package static let table = "users"
}

extension UserListing {
    package init(row: some TypedRow) throws(RowDecodingError) {
        self.init(user: User(rowID: try row.int64(UserListingColumn.rowID), id: try row.string(UserListingColumn.id),
                             name: try row.string(UserListingColumn.name)),
                  created: try row.int64(UserListingColumn.created), activated: try row.bool(UserListingColumn.activated))
    }
}

// MARK: Profile

extension ActivityGoals {
    /// The user's row of `activity_goals`, selected with `ActivityGoalsColumn.selectList`.
    package init(row: some TypedRow) throws(RowDecodingError) {
        self.init(activeEnergyBurned: try row.double(ActivityGoalsColumn.activeEnergyBurned),
                  appleExerciseTime: try row.double(ActivityGoalsColumn.appleExerciseTime),
                  appleStandHours: try row.double(ActivityGoalsColumn.appleStandHours))
    }
}

/// The columns of `activity_summaries` a read gives, in SELECT order (the day as `YYYY-MM-DD` text).
package enum ActivitySummaryColumn: Int, TableColumns {
    case day, activeEnergyBurned, activeEnergyBurnedGoal, appleMoveTime, appleMoveTimeGoal, appleExerciseTime,
         appleExerciseTimeGoal, appleStandHours, appleStandHoursGoal

    package static let table = "activity_summaries"
}

extension ActivitySummary {
    package init(row: some TypedRow) throws(RowDecodingError) {
        let dayText = try row.string(ActivitySummaryColumn.day)
        guard let day = HealthDate.parseDay(dayText) else {
            throw RowDecodingError(table: ActivitySummaryColumn.table, column: "day", problem: "is not a day: '\(dayText)'")
        }
        func value(_ column: ActivitySummaryColumn) throws(RowDecodingError) -> Double? { try row.doubleIfPresent(column) }
        self.init(day: day, activeEnergyBurned: try value(.activeEnergyBurned), activeEnergyBurnedGoal: try value(.activeEnergyBurnedGoal),
                  appleMoveTime: try value(.appleMoveTime), appleMoveTimeGoal: try value(.appleMoveTimeGoal),
                  appleExerciseTime: try value(.appleExerciseTime), appleExerciseTimeGoal: try value(.appleExerciseTimeGoal),
                  appleStandHours: try value(.appleStandHours), appleStandHoursGoal: try value(.appleStandHoursGoal))
    }
}

// MARK: IMU sessions

/// A batch's totals as the pedometer query reads them, in SELECT order.
package enum IMUBatchColumn: Int, TableColumns {
    case start, end, steps, distance, floorsUp, floorsDown, cadence, pace

    package static let table = "imu_batches"
}

extension PedometerTotalsAccumulator {
    /// Adds one batch's row (`IMUBatchColumn`).
    package mutating func add(row: some TypedRow) throws(RowDecodingError) {
        add(batchStart: try row.int64(IMUBatchColumn.start), batchEnd: try row.int64(IMUBatchColumn.end),
            steps: try row.int64(IMUBatchColumn.steps), distance: try row.double(IMUBatchColumn.distance),
            floorsUp: try row.int64(IMUBatchColumn.floorsUp), floorsDown: try row.int64(IMUBatchColumn.floorsDown),
            cadence: try row.doubleIfPresent(IMUBatchColumn.cadence), pace: try row.doubleIfPresent(IMUBatchColumn.pace))
    }
}

// MARK: Changes

extension DeletedSample {
    /// A row of `deleted_samples` (`TombstoneColumn`) with its change number; `deleted` is nil for
    /// a uuid that is not 16 bytes. `typeName` names the stored type code.
    package static func tombstone(_ row: some TypedRow, typeName: (Int64) -> String?)
        throws(RowDecodingError) -> (seq: Int64, deleted: DeletedSample?) {
        let type = typeName(try row.int64(TombstoneColumn.typeID)) ?? "unknown"
        return (seq: try row.int64(TombstoneColumn.seq),
                deleted: HealthUUID(bytes: try row.blob(TombstoneColumn.uuid)).map { DeletedSample(uuid: $0, type: type) })
    }
}

// MARK: Workout sessions

/// The columns of `workout_sessions` a session is read from, in SELECT order. The session's own id
/// is `id` in PostgreSQL and `external_id` in SQLite (whose `id` is the integer row id), so each
/// store names that column in `selectList(id:)`.
package enum WorkoutSessionColumn: Int, TableColumns {
    case id, userID, sourceID, activityType, zoneLow, zoneHigh, state, start, end, events, workoutUUID

    package static let table = "workout_sessions"

    package var name: String {
        switch self {
        case .id: "id"
        case .userID: "user_id"
        case .sourceID: "source_id"
        case .activityType: "activity_type"
        case .zoneLow: "zone_low"
        case .zoneHigh: "zone_high"
        case .state: "state"
        case .start: "start_ms"
        case .end: "end_ms"
        case .events: "events"
        case .workoutUUID: "workout_uuid"
        }
    }

    /// "external_id, user_id, ...": the SELECT list with the store's column of the session's id.
    package static func selectList(id idColumn: String) -> String {
        allCases.map { $0 == .id ? idColumn : $0.name }.joined(separator: ", ")
    }
}

extension WorkoutSession {
    package init(row: some TypedRow) throws(RowDecodingError) {
        typealias Column = WorkoutSessionColumn
        var zone: HeartRateZoneBounds?
        if let low = try row.doubleIfPresent(Column.zoneLow) { zone = HeartRateZoneBounds(low: low, high: try row.double(Column.zoneHigh)) }
        let stateText = try row.string(Column.state)
        guard let state = WorkoutSessionState(rawValue: stateText) else {
            throw RowDecodingError(table: Column.table, column: Column.state.name, problem: "holds unknown state '\(stateText)'")
        }
        var workoutUUID: HealthUUID?
        if let bytes = try row.blobIfPresent(Column.workoutUUID) {
            guard let uuid = HealthUUID(bytes: bytes) else {
                throw RowDecodingError(table: Column.table, column: Column.workoutUUID.name, problem: "is not a 16-byte uuid")
            }
            workoutUUID = uuid
        }
        self.init(
            id: try row.string(Column.id), userRowID: try row.int64(Column.userID), sourceRowID: try row.int64(Column.sourceID),
            activityType: try row.string(Column.activityType), zone: zone, state: state,
            timeline: WorkoutSessionTimeline(start: try row.int64(Column.start),
                                             events: try WorkoutSession.decodeEvents(try row.string(Column.events)),
                                             end: try row.int64IfPresent(Column.end)),
            workoutUUID: workoutUUID)
    }
}
