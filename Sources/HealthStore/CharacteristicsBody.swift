import JSON
import SQLSupport

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
