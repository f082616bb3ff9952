import JSON

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
