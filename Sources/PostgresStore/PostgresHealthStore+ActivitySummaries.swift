import HealthModel
import HealthStore

extension PostgresHealthStore {
    /// Saves summaries in one transaction; a day already stored is replaced.
    public func saveActivitySummaries(_ summaries: [ActivitySummary], userRowID: Int64) throws {
        guard !summaries.isEmpty else { return }
        try pool.transaction { connection in try PostgresActivitySummaries.save(summaries, userRowID: userRowID, on: connection) }
    }

    public func activitySummaries(userRowID: Int64, from first: HealthDay, through last: HealthDay) throws -> [ActivitySummary] {
        try pool.read { connection in
            try PostgresActivitySummaries.load(userRowID: userRowID, from: first, through: last, on: connection)
        }
    }
}
