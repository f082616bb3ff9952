import HealthModel

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
