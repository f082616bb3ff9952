import HealthStore
import SQLite

extension SQLiteHealthStore {
    /// How many samples (top-level and correlation objects) of `type` the user has from `app`.
    public func sampleCount(userRowID: Int64, type: String, app: String) throws -> Int {
        guard let typeCode = typeCode(for: type) else { return 0 }
        return try pool.read { db in
            Int(try db.firstInt64("""
                SELECT count(*) FROM samples WHERE user_id = ? AND type_id = ?
                AND source_id = (SELECT id FROM sources WHERE user_id = ? AND app = ?)
                """, [.integer(userRowID), .integer(typeCode), .integer(userRowID), .text(app)]) ?? 0)
        }
    }
}
