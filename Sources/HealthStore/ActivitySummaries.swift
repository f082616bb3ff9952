import HealthModel
import SQLite

extension ActivitySummary {
    /// The columns of `activity_summaries` after the day, in order.
    package var values: [Double?] {
        [activeEnergyBurned, activeEnergyBurnedGoal, appleMoveTime, appleMoveTimeGoal, appleExerciseTime,
         appleExerciseTimeGoal, appleStandHours, appleStandHoursGoal]
    }

    /// Saves one day for a user, replacing the day if stored, in either backend's SQL: parameters
    /// are the user, the day (`YYYY-MM-DD`, cast to `dayType` where the column needs it) and
    /// `values`.
    package static func upsertSQL(_ dialect: SQLDialect, dayType: String? = nil) -> String {
        let placeholders = (1...10).map(dialect.placeholder)
        let day = dayType.map { "\(placeholders[1])::\($0)" } ?? placeholders[1]
        return """
            INSERT INTO activity_summaries (user_id, day, active_energy_burned, active_energy_burned_goal,
                apple_move_time, apple_move_time_goal, apple_exercise_time, apple_exercise_time_goal,
                apple_stand_hours, apple_stand_hours_goal)
            VALUES (\(placeholders[0]), \(day), \(placeholders[2...].joined(separator: ", ")))
            ON CONFLICT (user_id, day) DO UPDATE SET
                active_energy_burned = excluded.active_energy_burned,
                active_energy_burned_goal = excluded.active_energy_burned_goal,
                apple_move_time = excluded.apple_move_time, apple_move_time_goal = excluded.apple_move_time_goal,
                apple_exercise_time = excluded.apple_exercise_time,
                apple_exercise_time_goal = excluded.apple_exercise_time_goal,
                apple_stand_hours = excluded.apple_stand_hours, apple_stand_hours_goal = excluded.apple_stand_hours_goal
            """
    }
}

extension HealthStore {
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
            try statement.forEachRow { row in
                let dayText = try row.string(ActivitySummaryColumn.day)
                guard let day = HealthDate.parseDay(dayText) else {
                    throw RowDecodingError(table: "activity_summaries", column: "day", problem: "is not a day: '\(dayText)'")
                }
                func value(_ column: ActivitySummaryColumn) -> Double? { row.doubleIfPresent(column) }
                summaries.append(ActivitySummary(
                    day: day, activeEnergyBurned: value(.activeEnergyBurned), activeEnergyBurnedGoal: value(.activeEnergyBurnedGoal),
                    appleMoveTime: value(.appleMoveTime), appleMoveTimeGoal: value(.appleMoveTimeGoal),
                    appleExerciseTime: value(.appleExerciseTime), appleExerciseTimeGoal: value(.appleExerciseTimeGoal),
                    appleStandHours: value(.appleStandHours), appleStandHoursGoal: value(.appleStandHoursGoal)))
            }
            return summaries
        }
    }
}

/// The columns of `activity_summaries` a read gives, in SELECT order.
enum ActivitySummaryColumn: Int, TableColumns {
    case day, activeEnergyBurned, activeEnergyBurnedGoal, appleMoveTime, appleMoveTimeGoal, appleExerciseTime,
         appleExerciseTimeGoal, appleStandHours, appleStandHoursGoal

    static let table = "activity_summaries"
}
