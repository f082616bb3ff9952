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

    package static func decode(_ body: [UInt8]) throws -> [(String, String)] {
        guard case .object(let object) = try JSONParser.parse(body) else { return [] }
        return object.members.compactMap { member in member.value.stringValue.map { (member.key, $0) } }
    }
}

extension HealthStore {
    /// All of the user's characteristics (dateOfBirth, biologicalSex, ...), as stored strings, for
    /// the admin's paths (seeding, importing); a token reads `characteristics(for:)`.
    public func characteristics(userRowID: Int64) throws -> [(String, String)] {
        try pool.read { db in
            try db.first("SELECT body FROM characteristics WHERE user_id = ?", [.integer(userRowID)],
                         { try CharacteristicsBody.decode(try $0.blob(at: 0)) }) ?? []
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
