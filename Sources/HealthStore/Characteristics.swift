import JSON
import SQLite

/// How a user's characteristics are stored: one JSON object of strings, in the order given.
package enum CharacteristicsBody {
    package static func encode(_ values: [(String, String)]) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        for (key, value) in values { writer.field(key, value) }
        writer.endObject()
        return writer.bytes
    }

    /// Written only by `encode`; a body that is not a JSON object is a damaged row.
    package static func decode(_ body: [UInt8]) throws(RowDecodingError) -> [(String, String)] {
        guard case .object(let object)? = try? JSONParser.parse(body) else {
            throw RowDecodingError(table: "characteristics", column: "body", problem: "is not a JSON object")
        }
        return object.members.compactMap { member in member.value.stringValue.map { (member.key, $0) } }
    }
}

extension HealthStore {
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
