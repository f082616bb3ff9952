import HealthStore
import HealthModel
import SQLite

extension SQLiteHealthStore {
    public func activityGoals(userRowID: Int64) throws -> ActivityGoals {
        try pool.read { db in
            try db.first("SELECT \(ActivityGoalsColumn.selectList) FROM activity_goals WHERE user_id = ?",
                         [.integer(userRowID)]) { row in try ActivityGoals(row: row) } ?? .defaults
        }
    }

    public func setActivityGoals(userRowID: Int64, _ goals: ActivityGoals) throws {
        try pool.write { db in
            try db.execute("""
                INSERT INTO activity_goals (user_id, active_energy_kcal, exercise_minutes, stand_hours) VALUES (?, ?, ?, ?)
                ON CONFLICT(user_id) DO UPDATE SET active_energy_kcal = excluded.active_energy_kcal,
                    exercise_minutes = excluded.exercise_minutes, stand_hours = excluded.stand_hours
                """, [.integer(userRowID), .real(goals.activeEnergyBurned), .real(goals.appleExerciseTime),
                      .real(goals.appleStandHours)])
        }
    }

    /// Milliseconds of [start, end) covered by at least one sample of `type` with a positive value
    /// (the union of their intervals, so overlapping sources count once): the time behind a distance
    /// when computing a pace. `onlySource` restricts to one app's samples (read privacy).
    public func coveredDuration(userRowID: Int64, type: HealthType, start: Int64, end: Int64,
                                onlySource: Int64?) throws -> Int64 {
        guard let typeCode = typeCode(for: type.id), start < end else { return 0 }
        return try pool.read { db in
            let longest = try db.firstInt64("SELECT max_duration_ms FROM type_extents WHERE user_id = ? AND type_id = ?",
                                            [.integer(userRowID), .integer(typeCode)]) ?? 0
            var sql = """
                SELECT start_ms, end_ms FROM samples
                WHERE user_id = ?1 AND type_id = ?2 AND start_ms < ?3 AND start_ms >= ?4 AND end_ms > ?5 AND value > 0
                """
            var values: [SQLValue] = [.integer(userRowID), .integer(typeCode), .integer(end), .integer(start - longest),
                                      .integer(start)]
            if let onlySource {
                sql += " AND source_id = ?6"
                values.append(.integer(onlySource))
            }
            sql += " ORDER BY start_ms"
            let statement = try db.cachedStatement(sql)
            try statement.bind(values)
            var intervals: [(Int64, Int64)] = []
            enum Column: Int, TableColumns {
                case start, end
                static let table = "samples"
            }
            try statement.forEachRow { row in intervals.append((try row.int64(Column.start), try row.int64(Column.end))) }
            return CoveredTime.union(of: intervals, within: start, end)
        }
    }
}
