import HealthModel
import HealthStore
import PostgreSQL

extension PostgresHealthStore {
    // MARK: Characteristics

    /// The user's characteristics (dateOfBirth, biologicalSex, ...), as stored strings.
    public func characteristics(userRowID: Int64) throws -> [(String, String)] {
        try pool.withConnection { connection in
            try connection.firstBytes("SELECT body FROM characteristics WHERE user_id = $1", [.int64(userRowID)])
                .map { body throws(RowDecodingError) in try CharacteristicsBody.decode(body) } ?? []
        }
    }

    /// Replaces all of a user's characteristics.
    public func replaceCharacteristics(userRowID: Int64, _ values: [(String, String)]) throws {
        let body = CharacteristicsBody.encode(values)
        _ = try pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO characteristics (user_id, body) VALUES ($1, $2)
                ON CONFLICT (user_id) DO UPDATE SET body = excluded.body
                """, [.int64(userRowID), .bytes(body)])
        }
    }

    // MARK: Activity goals

    public func activityGoals(userRowID: Int64) throws -> ActivityGoals {
        try pool.withConnection { connection in
            try connection.first("SELECT \(ActivityGoalsColumn.selectList) FROM activity_goals WHERE user_id = $1",
                                 [.int64(userRowID)]) { row in try ActivityGoals(row: row) } ?? .defaults
        }
    }

    public func setActivityGoals(userRowID: Int64, _ goals: ActivityGoals) throws {
        _ = try pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO activity_goals (user_id, active_energy_kcal, exercise_minutes, stand_hours) VALUES ($1, $2, $3, $4)
                ON CONFLICT (user_id) DO UPDATE SET active_energy_kcal = excluded.active_energy_kcal,
                    exercise_minutes = excluded.exercise_minutes, stand_hours = excluded.stand_hours
                """, [.int64(userRowID), .double(goals.activeEnergyBurned), .double(goals.appleExerciseTime),
                      .double(goals.appleStandHours)])
        }
    }

    // MARK: Source priority

    public func sourcePriority(userRowID: Int64, type: HealthType) throws -> [String] {
        guard let typeCode = typeCode(for: type.id) else { return [] }
        return try pool.read { connection in
            try PostgresSourcePriority.effective(connection, userRowID: userRowID, typeCode: typeCode).map(\.app)
        }
    }

    /// Stores the user's order for a type; every app must be one of the user's sources, listed
    /// once. A new order changes who wins every overlap, so the series' rollups are rebuilt in the
    /// same transaction.
    public func setSourcePriority(userRowID: Int64, type: HealthType, apps: [String]) throws {
        guard type.kind == .quantity, type.aggregation != nil, let typeCode = typeCode(for: type.id) else {
            throw StoreError.invalid("type: source priority applies to quantity types; \(type.id) is a \(type.kind.rawValue) type")
        }
        try pool.transaction { connection in
            let known = Set(try Self.appNames(connection, userRowID: userRowID).values)
            var seen = Set<String>()
            for (position, app) in apps.enumerated() {
                guard seen.insert(app).inserted else { throw StoreError.invalid("order[\(position)]: app '\(app)' is listed twice") }
                guard known.contains(app) else {
                    throw StoreError.invalid("order[\(position)]: unknown app '\(app)' (no authorization of this user names it)")
                }
            }
            try connection.execute("""
                INSERT INTO source_priorities (user_id, type_id, apps) VALUES ($1, $2, $3)
                ON CONFLICT (user_id, type_id) DO UPDATE SET apps = excluded.apps
                """, [.int64(userRowID), .int64(typeCode), .text(StoredForms.encodeAppList(apps))])
            try rollupsRebuild(userRowID: userRowID, typeCode: typeCode, connection)
        }
    }
}
