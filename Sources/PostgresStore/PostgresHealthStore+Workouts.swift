import HealthModel
import HealthStore

// Workout sessions on PostgreSQL (`PostgresWorkoutSessions`); ending one saves its workout sample
// through the store's sample writer in the same transaction. Zone events reach every node: the
// zone monitor of each node judges after commits it is told of, its own and (by NOTIFY) the others'.

extension PostgresHealthStore {
    public func startWorkoutSession(granted: WriteGrant, activityType: String, zone: HeartRateZoneBounds?,
                                    at start: Int64) throws -> WorkoutSession {
        let app = granted.app
        return try pool.transaction { connection in
            try Self.requireUser(app.userRowID, connection)
            // Heart rates judged for the zone are those committed from now on.
            let current = try Self.currentChangeNumber(userRowID: app.userRowID, connection)
            return try PostgresWorkoutSessions.start(app: app, activityType: activityType, zone: zone, at: start,
                                                     currentChange: current, on: connection)
        }
    }

    public func workoutSession(id: String, owner: AppSource) throws -> WorkoutSession? {
        try pool.read { connection in try PostgresWorkoutSessions.owned(id: id, owner: owner, on: connection) }
    }

    public func changeWorkoutSession(id: String, owner: AppSource, action: WorkoutSessionAction, now: Int64) throws
        -> WorkoutSession {
        try pool.transaction { connection in
            try PostgresWorkoutSessions.change(id: id, owner: owner, action: action, now: now, on: connection)
        }
    }

    public func endWorkoutSession(id: String, granted: WriteGrant, now: Int64, workoutUUID: HealthUUID) throws -> WorkoutSession {
        let app = granted.app
        let created = StoreClock.nowMilliseconds()
        let (session, change) = try pool.transaction { connection in
            try PostgresWorkoutSessions.end(id: id, app: app, visibility: granted.reads, now: now, workoutUUID: workoutUUID, typeCode: typeCode(for:),
                                            on: connection) { workout -> CommittedChange in
                var batch = try PostgresSampleBatch([workout], sourceRowID: { _ in app.sourceRowID }, typeCodes: typeCodes,
                                                    rollupStyles: rollupStyles, userRowID: app.userRowID, created: created)
                let (effects, last) = try write(&batch, userRowID: app.userRowID, userExternalID: app.userID, connection)
                try rollupsChanged(effects.rollups, userRowID: app.userRowID, connection)
                let change = CommittedChange(userRowID: app.userRowID, typeIDs: effects.touchedTypes, lastSeq: last)
                try notifyCommit(change, connection)
                return change
            }
        }
        if !change.typeIDs.isEmpty { publish(change) }
        return session
    }

    public func activeWorkoutSessionCounts() throws -> [Int64: Int] {
        try pool.read { connection in try PostgresWorkoutSessions.activeCounts(on: connection) }
    }

    public func advanceWorkoutZones(userRowID: Int64) throws -> [WorkoutZoneChange] {
        guard let heartRate = typeCode(for: "heartRate") else { return [] }
        return try pool.transaction { connection in
            try PostgresWorkoutSessions.advanceZones(userRowID: userRowID, heartRateCode: heartRate, on: connection)
        }
    }
}
