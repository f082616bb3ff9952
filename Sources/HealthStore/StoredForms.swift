import JSON
import SQLSupport

/// How both stores write the access policy and the user's source order into their tables and SQL,
/// so the two backends agree on one form.
package enum StoredForms {
    /// A stored permission list (comma-separated type ids) as a set.
    package static func typeList(_ text: String) -> Set<String> { Set(text.split(separator: ",").map(String.init)) }

    package static func encodeAppList(_ apps: [String]) -> String {
        var writer = JSONWriter()
        writer.beginArray()
        for app in apps { writer.string(app) }
        writer.endArray()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Written only by `encodeAppList`; a list that is not a JSON array is a damaged row, and
    /// throws rather than reading as no order (which would silently change how sources merge).
    package static func decodeAppList(_ text: String) throws(RowDecodingError) -> [String] {
        guard let values = (try? JSONParser.parse(text))?.arrayValue else {
            throw RowDecodingError(table: "source_priorities", column: "apps", problem: "is not a JSON array of app names")
        }
        return values.compactMap(\.stringValue)
    }
}

/// The columns both stores read a sample by for statistics, in SELECT order.
package enum StatisticsSampleColumn: Int, TableColumns {
    case seq, start, end, value, source

    package static let table = "samples"

    package var name: String {
        switch self {
        case .seq: "seq"
        case .start: "start_ms"
        case .end: "end_ms"
        case .value: "value"
        case .source: "source_id"
        }
    }
}

/// The columns of `sources` that queries read to name a source (`id, app`, or a query's own
/// columns in that order).
package enum SourceColumn: Int, TableColumns {
    case id, app

    package static let table = "sources"
}

/// The columns of `deleted_samples` both stores' change feeds read, in SELECT order.
package enum TombstoneColumn: Int, TableColumns {
    case seq, uuid, typeID

    package static let table = "deleted_samples"

    package var name: String {
        switch self {
        case .seq: "seq"
        case .uuid: "uuid"
        case .typeID: "type_id"
        }
    }
}

/// The columns of `activity_goals` in both stores, in SELECT order.
package enum ActivityGoalsColumn: Int, TableColumns {
    case activeEnergyBurned, appleExerciseTime, appleStandHours

    package static let table = "activity_goals"

    package var name: String {
        switch self {
        case .activeEnergyBurned: "active_energy_kcal"
        case .appleExerciseTime: "exercise_minutes"
        case .appleStandHours: "stand_hours"
        }
    }
}
