import HealthStore
import JSON
import SQLite

extension SQLiteHealthStore {
    /// All of the user's characteristics (dateOfBirth, biologicalSex, ...), as stored strings, for
    /// the admin's paths (seeding, importing); a token reads `characteristics(for:)`.
    public func characteristics(userRowID: Int64) throws -> [(String, String)] {
        try pool.read { db in
            try db.firstBlob("SELECT body FROM characteristics WHERE user_id = ?", [.integer(userRowID)])
                .map { body throws(RowDecodingError) in try CharacteristicsBody.decode(body) } ?? []
        }
    }

    /// Replaces all of a user's characteristics (HealthKit has apps read them; only the admin writes).
    public func replaceCharacteristics(userRowID: Int64, _ values: [(String, String)]) throws {
        let body = CharacteristicsBody.encode(values)
        try pool.write { db in
            try db.execute("""
                INSERT INTO characteristics (user_id, body) VALUES (?, ?)
                ON CONFLICT(user_id) DO UPDATE SET body = excluded.body
                """, [.integer(userRowID), .blob(body)])
        }
    }
}
