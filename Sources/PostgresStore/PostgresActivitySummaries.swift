import HealthModel
import HealthStore
import PostgreSQL

/// HKActivitySummary rows in PostgreSQL (`activity_summaries`, one per user and calendar day).
enum PostgresActivitySummaries {
    /// Saves summaries in the caller's transaction; a day already stored is replaced (a later
    /// export knows the finished day).
    static func save(_ summaries: [ActivitySummary], userRowID: Int64, on connection: PostgresConnection) throws {
        for summary in summaries {
            try connection.execute(ActivitySummary.upsertSQL(.postgres, dayType: "date"),
                                   [.int64(userRowID), .text(summary.day.description)] + summary.values.map(PostgresValue.init))
        }
    }

    /// The user's summaries for days first...last, oldest first.
    static func load(userRowID: Int64, from first: HealthDay, through last: HealthDay,
                     on connection: PostgresConnection) throws -> [ActivitySummary] {
        // to_char, not day::text: the text form of a date follows the session's DateStyle.
        let result = try connection.query("""
            SELECT to_char(day, 'YYYY-MM-DD'), active_energy_burned, active_energy_burned_goal, apple_move_time,
                apple_move_time_goal, apple_exercise_time, apple_exercise_time_goal, apple_stand_hours, apple_stand_hours_goal
            FROM activity_summaries WHERE user_id = $1 AND day >= $2::date AND day <= $3::date ORDER BY day
            """, [.int64(userRowID), .text(first.description), .text(last.description)])
        var summaries: [ActivitySummary] = []
        summaries.reserveCapacity(result.rowCount)
        for index in 0..<result.rowCount { summaries.append(try ActivitySummary(row: result[index])) }
        return summaries
    }
}
