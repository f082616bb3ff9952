import HealthStore
import HealthModel
import JSON
import SQLite
import Statistics

/// The columns of `workout_sessions` that name an app's active session, in SELECT order.
enum ActiveSessionColumn: Int, TableColumns {
    case id, state

    static let table = "workout_sessions"

    var name: String {
        switch self {
        case .id: "external_id"
        case .state: "state"
        }
    }
}

extension SQLiteHealthStore {
    static let workoutSessionColumns = WorkoutSessionColumn.selectList(id: "external_id")

    /// Starting and ending a session need share permission for `workout`: ending saves one as the app.

    /// Starts a session as `app`. An app runs one session at a time per user (as HealthKit runs one
    /// per app): while another is running or paused this is a `conflict` naming it.
    public func startWorkoutSession(granted: WriteGrant, activityType: String, zone: HeartRateZoneBounds?,
                                    at start: Int64) throws -> WorkoutSession {
        let app = granted.app
        return try pool.write { db in
            try Self.requireUser(db, userRowID: app.userRowID)
            if let active = try db.first("""
                SELECT external_id, state FROM workout_sessions WHERE user_id = ? AND source_id = ? AND state <> 'ended'
                """, [.integer(app.userRowID), .integer(app.sourceRowID)], {
                    (try $0.string(ActiveSessionColumn.id), try $0.string(ActiveSessionColumn.state))
                }) {
                throw StoreError.conflict("this app's session \(active.0) is \(active.1); end it before starting another")
            }
            let session = WorkoutSession(id: HealthUUID.random().lowercasedString, userRowID: app.userRowID,
                                         sourceRowID: app.sourceRowID, activityType: activityType, zone: zone,
                                         state: .running, timeline: WorkoutSessionTimeline(start: start), workoutUUID: nil)
            // Heart rates judged for the zone are those committed from now on.
            let seq = try ChangeSequence.current(db)
            try db.execute("""
                INSERT INTO workout_sessions (external_id, user_id, source_id, activity_type, zone_low, zone_high, state,
                                              start_ms, events, zone_seq)
                VALUES (?, ?, ?, ?, ?, ?, 'running', ?, '[]', ?)
                """, [.text(session.id), .integer(app.userRowID), .integer(app.sourceRowID), .text(activityType),
                      zone.map { .real($0.low) } ?? .null, zone.map { .real($0.high) } ?? .null, .integer(start), .integer(seq)])
            return session
        }
    }

    /// The session `id` if it is this app's for this user; another app's or user's is nil, exactly
    /// as if it did not exist.
    public func workoutSession(id: String, owner: AppSource) throws -> WorkoutSession? {
        try pool.read { db in try Self.ownedWorkoutSession(db, id: id, owner: owner) }
    }

    /// Pauses or resumes at `now` (never before the last event). A resume forgets the zone state,
    /// so the first reading after it reports again. `WorkoutSessionTransitionError` when the state
    /// does not allow it, `notFound` for a session that is not this app's.
    public func changeWorkoutSession(id: String, owner: AppSource, action: WorkoutSessionAction,
                                     now: Int64) throws -> WorkoutSession {
        guard action != .end else { throw StoreError.invalid("ending a session goes through endWorkoutSession, which saves the workout") }
        return try pool.write { db in
            guard var session = try Self.ownedWorkoutSession(db, id: id, owner: owner) else {
                throw StoreError.notFound("no workout session \(id)")
            }
            session.state = try session.state.applying(action)
            let type: WorkoutEventType = action == .pause ? .pause : .resume
            session.timeline.events.append(WorkoutEvent(type: type, date: session.timeline.eventDate(now: now)))
            try db.execute("""
                UPDATE workout_sessions SET state = ?, events = ?,
                    zone_state = CASE WHEN ? THEN NULL ELSE zone_state END
                WHERE external_id = ?
                """, [.text(session.state.rawValue), .text(WorkoutSession.encodeEvents(session.timeline.events)),
                      .integer(action == .resume ? 1 : 0), .text(id)])
            return session
        }
    }

    /// Ends the session at `now` and saves its `workout` sample as the session's app, in one
    /// transaction: the session, its events and its totals, or nothing. Totals are the merged
    /// (as statistics merge sources) `activeEnergyBurned` and `distanceWalkingRunning` over the
    /// running stretches, pro-rated by overlap, of the samples the grant's reads see (another app's
    /// only with read permission for the type). A type with no sample there gives no total (absent, not 0).
    public func endWorkoutSession(id: String, granted: WriteGrant, now: Int64,
                                  workoutUUID: HealthUUID) throws -> WorkoutSession {
        let app = granted.app
        let created = Self.nowMilliseconds()
        let (session, change) = try pool.write { db -> (WorkoutSession, CommittedChange) in
            guard var session = try Self.ownedWorkoutSession(db, id: id, owner: AppSource(app)) else {
                throw StoreError.notFound("no workout session \(id)")
            }
            session.state = try session.state.applying(.end)
            let end = session.timeline.eventDate(now: now)
            session.timeline.end = end
            let intervals = session.timeline.runningIntervals
            let energy = try runningTotal(db, type: "activeEnergyBurned", visibility: granted.reads, start: session.timeline.start,
                                          end: end, intervals: intervals)
            let distance = try runningTotal(db, type: "distanceWalkingRunning", visibility: granted.reads, start: session.timeline.start,
                                            end: end, intervals: intervals)
            let workout = HealthSample(
                uuid: workoutUUID, type: "workout", start: session.timeline.start, end: end,
                content: .workout(WorkoutDetails(activityType: session.activityType, totalEnergyBurned: energy,
                                                 totalDistance: distance, events: session.timeline.events)))
            var writer = try SampleWriter(db: db, store: self, userRowID: app.userRowID, sourceRowID: app.sourceRowID,
                                          created: created)
            try writer.insert(PreparedBatch([workout], store: self))
            try writer.finish()
            session.workoutUUID = workoutUUID
            try db.execute("UPDATE workout_sessions SET state = 'ended', end_ms = ?, workout_uuid = ? WHERE external_id = ?",
                           [.integer(end), .blob(workoutUUID.bytes), .text(id)])
            return (session, CommittedChange(userRowID: app.userRowID, typeIDs: writer.touchedTypes, lastSeq: writer.lastSeq))
        }
        if !change.typeIDs.isEmpty { publish(change) }
        return session
    }

    /// Users with a running or paused session, and how many each has (for the zone monitor).
    public func activeWorkoutSessionCounts() throws -> [Int64: Int] {
        try pool.read { db in
            var counts: [Int64: Int] = [:]
            enum Active: Int, TableColumns {
                case userID, sessions
                static let table = "workout_sessions"
            }
            for (user, count) in try db.map("SELECT user_id, count(*) FROM workout_sessions WHERE state <> 'ended' GROUP BY user_id",
                                            [], { (try $0.int64(Active.userID), try $0.int(Active.sessions)) }) {
                counts[user] = count
            }
            return counts
        }
    }

    /// Judges the user's heart-rate readings committed since the last call against each running
    /// session with a zone, and records how far it got, in one transaction; returns the state
    /// changes to publish, per session in time order. Only readings that start while the session
    /// runs count (not before its start, not while paused); every source's readings count.
    public func advanceWorkoutZones(userRowID: Int64) throws -> [WorkoutZoneChange] {
        guard let heartRateCode = typeCode(for: "heartRate") else { return [] }
        return try pool.write { db in
            enum Watched: Int, TableColumns {
                case rowID, id, zoneLow, zoneHigh, start, events, zoneSeq, zoneState, zoneLatest
                static let table = "workout_sessions"
            }
            let sessions = try db.map("""
                SELECT id, external_id, zone_low, zone_high, start_ms, events, zone_seq, zone_state, zone_latest_ms
                FROM workout_sessions WHERE user_id = ? AND state = 'running' AND zone_low IS NOT NULL
                """, [.integer(userRowID)]) { row in
                (rowID: try row.int64(Watched.rowID), id: try row.string(Watched.id),
                 bounds: HeartRateZoneBounds(low: try row.double(Watched.zoneLow), high: try row.double(Watched.zoneHigh)),
                 timeline: WorkoutSessionTimeline(start: try row.int64(Watched.start),
                                                  events: try WorkoutSession.decodeEvents(try row.string(Watched.events))),
                 seq: try row.int64(Watched.zoneSeq), state: row.stringIfPresent(Watched.zoneState).flatMap(HeartRateZoneState.init(rawValue:)),
                 latest: row.int64IfPresent(Watched.zoneLatest))
            }
            enum Reading: Int, TableColumns {
                case seq, start, value
                static let table = "samples"
            }
            var changes: [WorkoutZoneChange] = []
            for session in sessions {
                let readings = try db.map("""
                    SELECT seq, start_ms, value FROM samples WHERE user_id = ? AND seq > ? AND type_id = ? AND value IS NOT NULL
                    """, [.integer(userRowID), .integer(session.seq), .integer(heartRateCode)]) {
                    (seq: try $0.int64(Reading.seq), start: try $0.int64(Reading.start), value: try $0.double(Reading.value))
                }
                guard let lastSeq = readings.map(\.seq).max() else { continue }
                var tracker = HeartRateZoneTracker(bounds: session.bounds, current: session.state, latestReading: session.latest)
                let intervals = session.timeline.runningIntervals
                for reading in readings.sorted(by: { ($0.start, $0.seq) < ($1.start, $1.seq) })
                where intervals.contains(where: { $0.contains(reading.start) }) {
                    if let state = tracker.judge(heartRate: reading.value, at: reading.start) {
                        changes.append(WorkoutZoneChange(session: session.id, heartRate: reading.value, state: state, date: reading.start,
                                                          zone: session.bounds))
                    }
                }
                try db.execute("UPDATE workout_sessions SET zone_seq = ?, zone_state = ?, zone_latest_ms = ? WHERE id = ?",
                               [.integer(lastSeq), tracker.current.map { .text($0.rawValue) } ?? .null,
                                tracker.latestReading.map { .integer($0) } ?? .null, .integer(session.rowID)])
            }
            return changes
        }
    }

    // MARK: Helpers

    static func ownedWorkoutSession(_ db: Database, id: String, owner: AppSource) throws -> WorkoutSession? {
        try db.first("SELECT \(workoutSessionColumns) FROM workout_sessions WHERE external_id = ? AND user_id = ? AND source_id = ?",
                     [.text(id), .integer(owner.userRowID), .integer(owner.sourceRowID)]) { row in try WorkoutSession(row: row) }
    }

    /// The merged sum of one cumulative type over the running stretches, or nil without data.
    private func runningTotal(_ db: Database, type: String, visibility: ReadVisibility, start: Int64, end: Int64,
                              intervals: [Range<Int64>]) throws -> Double? {
        guard let typeCode = typeCode(for: type), !intervals.isEmpty else { return nil }
        let userRowID = visibility.userRowID
        var clause = WhereClause(conditions: ["user_id = ?1", "type_id = ?2"], values: [.integer(userRowID), .integer(typeCode)])
        clause.narrow(to: visibility.sources(of: type))
        let e = clause.bind(.integer(end))
        clause.require("start_ms < ?\(e)")
        let s = clause.bind(.integer(start))
        clause.require("(end_ms > ?\(s) OR (end_ms = start_ms AND start_ms >= ?\(s)))")
        let longest = try db.firstInt64("SELECT max_duration_ms FROM type_extents WHERE user_id = ? AND type_id = ?",
                                        [.integer(userRowID), .integer(typeCode)]) ?? 0
        let lower = clause.bind(.integer(start - longest))
        clause.require("start_ms >= ?\(lower)")
        let samples = try db.map("SELECT seq, start_ms, end_ms, value, source_id FROM samples WHERE \(clause.text)",
                                 clause.values) { row in
            StatisticsSample(id: try row.int64(StatisticsSampleColumn.seq), start: try row.int64(StatisticsSampleColumn.start),
                             end: try row.int64(StatisticsSampleColumn.end), value: try row.double(StatisticsSampleColumn.value),
                             source: Int32(truncatingIfNeeded: try row.int64(StatisticsSampleColumn.source)))
        }
        return try WorkoutSession.runningTotal(
            of: samples, intervals: intervals, end: end,
            priority: SourcePriority(try Self.effectiveSourcePriority(db, userRowID: userRowID, typeCode: typeCode).map(\.source)))
    }
}
