import HealthStore
import HealthModel
import SQLite

extension SQLiteHealthStore {
    /// Saves summaries in one transaction; a day already stored is replaced (a later export knows the
    /// finished day).
    public func saveActivitySummaries(_ summaries: [ActivitySummary], userRowID: Int64) throws {
        guard !summaries.isEmpty else { return }
        try pool.write { db in
            let statement = try db.cachedStatement(ActivitySummary.upsertSQL(.sqlite))
            for summary in summaries {
                statement.reset()
                var values: [SQLValue] = [.integer(userRowID), .text(summary.day.description)]
                values += summary.values.map { $0.map(SQLValue.real) ?? .null }
                try statement.bind(values)
                _ = try statement.step()
            }
        }
    }

    /// The user's summaries for days in `range` (inclusive), oldest first.
    public func activitySummaries(userRowID: Int64, from first: HealthDay, through last: HealthDay) throws -> [ActivitySummary] {
        try pool.read { db in
            let statement = try db.cachedStatement("""
                SELECT day, active_energy_burned, active_energy_burned_goal, apple_move_time, apple_move_time_goal,
                    apple_exercise_time, apple_exercise_time_goal, apple_stand_hours, apple_stand_hours_goal
                FROM activity_summaries WHERE user_id = ? AND day >= ? AND day <= ? ORDER BY day
                """)
            try statement.bind([.integer(userRowID), .text(first.description), .text(last.description)])
            var summaries: [ActivitySummary] = []
            try statement.forEachRow { row in summaries.append(try ActivitySummary(row: row)) }
            return summaries
        }
    }
}

