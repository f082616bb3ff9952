import HealthModel
import HealthStore
import PostgreSQL
import Statistics

/// Workout sessions (HKWorkoutSession) and their heart-rate zone judgement in PostgreSQL
/// (`workout_sessions`), with the SQLite store's rules; what changes is that several nodes may act
/// on one session at once:
/// - a second running session of one app for one user is refused by a unique index, so two nodes
///   starting one at the same instant cannot both succeed;
/// - pause, resume and end lock the session's row (`FOR UPDATE`) and apply the transition to the
///   state they then read, so two nodes' transitions take turns;
/// - zone judgement locks the running sessions' rows, so two nodes' monitors judging one user at
///   once take turns, and the second judges only readings after the first's `zone_seq`: a state
///   change is published once. Readings are judged by change number, which a user's writes take in
///   commit order (`change_counters`), so none is skipped.
enum PostgresWorkoutSessions {
    /// Starts a session; a running or paused one of the same app and user is a `conflict` naming it.
    /// `currentChange` is the user's change number now: readings after it are judged.
    static func start(app: AppAuthorization, activityType: String, zone: HeartRateZoneBounds?, at start: Int64,
                      currentChange: Int64, on connection: PostgresConnection) throws -> WorkoutSession {
        let user: PostgresValue = .int64(app.userRowID), source: PostgresValue = .int64(app.sourceRowID)
        if let active = try activeSession(user: user, source: source, on: connection) { throw conflict(active) }
        let session = WorkoutSession(id: HealthUUID.random().lowercasedString, userRowID: app.userRowID,
                                     sourceRowID: app.sourceRowID, activityType: activityType, zone: zone,
                                     state: .running, timeline: WorkoutSessionTimeline(start: start), workoutUUID: nil)
        do {
            // A savepoint: if another node's start won the unique index meanwhile, the transaction
            // stays usable to read which session it was.
            _ = try connection.savepoint {
                try connection.execute("""
                    INSERT INTO workout_sessions (user_id, id, source_id, activity_type, zone_low, zone_high, state, start_ms,
                                                  events, zone_seq)
                    VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, '[]', $8)
                    """, [user, .text(session.id), source, .text(activityType), PostgresValue(zone?.low),
                          PostgresValue(zone?.high), .int64(start), .int64(currentChange)])
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            guard let active = try activeSession(user: user, source: source, on: connection) else { throw error }
            throw conflict(active)
        }
        return session
    }

    private static func activeSession(user: PostgresValue, source: PostgresValue,
                                      on connection: PostgresConnection) throws -> (id: String, state: String)? {
        enum Active: Int, TableColumns {
            case id, state
            static let table = "workout_sessions"
        }
        return try connection.first("""
            SELECT id, state FROM workout_sessions WHERE user_id = $1 AND source_id = $2 AND state <> 'ended'
            """, [user, source]) { (try $0.string(Active.id), try $0.string(Active.state)) }
    }

    private static func conflict(_ active: (id: String, state: String)) -> StoreError {
        StoreError.conflict("this app's session \(active.id) is \(active.state); end it before starting another")
    }

    /// The session `id` if it is this app's for this user (another's is nil, as if it did not
    /// exist); `locking` takes its row lock until the transaction ends.
    static func owned(id: String, owner: AppSource, locking: Bool = false,
                      on connection: PostgresConnection) throws -> WorkoutSession? {
        try connection.first("""
            SELECT \(WorkoutSessionColumn.selectList(id: "id")) FROM workout_sessions WHERE user_id = $1 AND id = $2 AND source_id = $3\(locking ? " FOR UPDATE" : "")
            """, [.int64(owner.userRowID), .text(id), .int64(owner.sourceRowID)]) { row in try WorkoutSession(row: row) }
    }

    /// Pauses or resumes at `now`, in the caller's transaction. A resume forgets the zone state, so
    /// the first reading after it reports again.
    static func change(id: String, owner: AppSource, action: WorkoutSessionAction, now: Int64,
                       on connection: PostgresConnection) throws -> WorkoutSession {
        guard action != .end else { throw StoreError.invalid("ending a session goes through endWorkoutSession, which saves the workout") }
        guard var session = try owned(id: id, owner: owner, locking: true, on: connection) else {
            throw StoreError.notFound("no workout session \(id)")
        }
        session.state = try session.state.applying(action)
        let type: WorkoutEventType = action == .pause ? .pause : .resume
        session.timeline.events.append(WorkoutEvent(type: type, date: session.timeline.eventDate(now: now)))
        try connection.execute("""
            UPDATE workout_sessions SET state = $3, events = $4, zone_state = CASE WHEN $5 THEN NULL ELSE zone_state END
            WHERE user_id = $1 AND id = $2
            """, [.int64(owner.userRowID), .text(id), .text(session.state.rawValue),
                  .text(WorkoutSession.encodeEvents(session.timeline.events)), .bool(action == .resume)])
        return session
    }

    /// Ends the session at `now` in the caller's transaction and saves its `workout` sample through
    /// `saveWorkout` (the store's sample writer, in the same transaction). Totals are the merged
    /// `activeEnergyBurned` and `distanceWalkingRunning` over the running stretches, of the samples
    /// `visibility` sees (another app's only with read permission for the type).
    static func end<Saved>(id: String, app: AppAuthorization, visibility: ReadVisibility, now: Int64, workoutUUID: HealthUUID,
                           typeCode: (String) -> Int64?, on connection: PostgresConnection,
                           saveWorkout: (HealthSample) throws -> Saved) throws -> (WorkoutSession, Saved) {
        guard var session = try owned(id: id, owner: AppSource(app), locking: true, on: connection) else {
            throw StoreError.notFound("no workout session \(id)")
        }
        session.state = try session.state.applying(.end)
        let end = session.timeline.eventDate(now: now)
        session.timeline.end = end
        let intervals = session.timeline.runningIntervals
        func total(_ type: String) throws -> Double? {
            guard let code = typeCode(type), !intervals.isEmpty else { return nil }
            return try runningTotal(visibility: visibility, type: type, typeCode: code, start: session.timeline.start, end: end,
                                    intervals: intervals, on: connection)
        }
        let workout = HealthSample(
            uuid: workoutUUID, type: "workout", start: session.timeline.start, end: end,
            content: .workout(WorkoutDetails(activityType: session.activityType, totalEnergyBurned: try total("activeEnergyBurned"),
                                             totalDistance: try total("distanceWalkingRunning"), events: session.timeline.events)))
        let saved = try saveWorkout(workout)
        session.workoutUUID = workoutUUID
        try connection.execute("""
            UPDATE workout_sessions SET state = 'ended', end_ms = $3, workout_uuid = $4 WHERE user_id = $1 AND id = $2
            """, [.int64(app.userRowID), .text(id), .int64(end), .bytes(workoutUUID.bytes)])
        return (session, saved)
    }

    private static func runningTotal(visibility: ReadVisibility, type: String, typeCode: Int64, start: Int64, end: Int64,
                                     intervals: [Range<Int64>], on connection: PostgresConnection) throws -> Double? {
        let userRowID = visibility.userRowID
        let longest = try connection.scalarInt64("SELECT max_duration_ms FROM type_extents WHERE user_id = $1 AND type_id = $2",
                                                 [.int64(userRowID), .int64(typeCode)]) ?? 0
        // -1 is no source: every source's samples count when the reader sees the type whole.
        let result = try connection.query("""
            SELECT seq, start_ms, end_ms, value, source_id FROM samples
            WHERE user_id = $1 AND type_id = $2 AND ($3 < 0 OR source_id = $3) AND value IS NOT NULL
              AND start_ms >= $4 AND start_ms < $5 AND (end_ms > $6 OR (end_ms = start_ms AND start_ms >= $6))
            """, [.int64(userRowID), .int64(typeCode), .int64(visibility.sources(of: type).onlySource ?? -1),
                  .int64(start - longest), .int64(end), .int64(start)])
        var samples: [StatisticsSample] = []
        for index in 0..<result.rowCount {
            if let sample = try PostgresRollups.statisticsSample(result[index]) { samples.append(sample) }
        }
        let priority = try PostgresRollups.sourcePriority(connection, userRowID: userRowID, typeCode: typeCode)
        return try WorkoutSession.runningTotal(of: samples, intervals: intervals, end: end, priority: priority)
    }

    /// Users with a running or paused session, and how many each has (the one statement that
    /// reads every user's rows: the zone monitor's list of whom to watch).
    static func activeCounts(on connection: PostgresConnection) throws -> [Int64: Int] {
        let result = try connection.query("SELECT user_id, count(*) FROM workout_sessions WHERE state <> 'ended' GROUP BY user_id")
        var counts: [Int64: Int] = [:]
        enum Active: Int, TableColumns {
            case userID, sessions
            static let table = "workout_sessions"
        }
        for index in 0..<result.rowCount { counts[try result[index].int64(Active.userID)] = try result[index].int(Active.sessions) }
        return counts
    }

    /// Judges the user's heart-rate readings committed since the last call against each running
    /// session with a zone, in the caller's transaction; returns the state changes to publish.
    static func advanceZones(userRowID: Int64, heartRateCode: Int64, on connection: PostgresConnection) throws -> [WorkoutZoneChange] {
        enum Watched: Int, TableColumns {
            case id, zoneLow, zoneHigh, start, events, zoneSeq, zoneState, zoneLatest
            static let table = "workout_sessions"
        }
        let sessions = try connection.map("""
            SELECT id, zone_low, zone_high, start_ms, events, zone_seq, zone_state, zone_latest_ms
            FROM workout_sessions WHERE user_id = $1 AND state = 'running' AND zone_low IS NOT NULL
            ORDER BY id FOR UPDATE
            """, [.int64(userRowID)]) { row in
            (id: try row.string(Watched.id), bounds: HeartRateZoneBounds(low: try row.double(Watched.zoneLow), high: try row.double(Watched.zoneHigh)),
             timeline: WorkoutSessionTimeline(start: try row.int64(Watched.start),
                                              events: try WorkoutSession.decodeEvents(try row.string(Watched.events))),
             seq: try row.int64(Watched.zoneSeq), state: try row.stringIfPresent(Watched.zoneState).flatMap(HeartRateZoneState.init(rawValue:)),
             latest: try row.int64IfPresent(Watched.zoneLatest))
        }
        enum Reading: Int, TableColumns {
            case seq, start, value
            static let table = "samples"
        }
        var changes: [WorkoutZoneChange] = []
        for session in sessions {
            let readings = try connection.map("""
                SELECT seq, start_ms, value FROM samples
                WHERE user_id = $1 AND seq > $2 AND type_id = $3 AND value IS NOT NULL ORDER BY start_ms, seq
                """, [.int64(userRowID), .int64(session.seq), .int64(heartRateCode)]) {
                (seq: try $0.int64(Reading.seq), start: try $0.int64(Reading.start), value: try $0.double(Reading.value))
            }
            guard let lastSeq = readings.map(\.seq).max() else { continue }
            var tracker = HeartRateZoneTracker(bounds: session.bounds, current: session.state, latestReading: session.latest)
            let intervals = session.timeline.runningIntervals
            for reading in readings where intervals.contains(where: { $0.contains(reading.start) }) {
                if let state = tracker.judge(heartRate: reading.value, at: reading.start) {
                    changes.append(WorkoutZoneChange(session: session.id, heartRate: reading.value, state: state,
                                                     date: reading.start, zone: session.bounds))
                }
            }
            try connection.execute("""
                UPDATE workout_sessions SET zone_seq = $3, zone_state = $4, zone_latest_ms = $5 WHERE user_id = $1 AND id = $2
                """, [.int64(userRowID), .text(session.id), .int64(lastSeq), PostgresValue(tracker.current?.rawValue),
                      PostgresValue(tracker.latestReading)])
        }
        return changes
    }
}
