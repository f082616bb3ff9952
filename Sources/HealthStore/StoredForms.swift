import JSON
import SQLSupport

/// How both stores write the access policy and the user's source order into their tables and SQL,
/// so the two backends agree on one form.
package enum StoredForms {
    /// A stored permission list (comma-separated type ids) as a set.
    package static func typeList(_ text: String) -> Set<String> { Set(text.split(separator: ",").map(String.init)) }

    /// A permission set as stored: its type ids sorted, comma-separated.
    package static func typeListText(_ types: Set<String>) -> String { types.sorted().joined(separator: ",") }

    /// An ordered list of type ids (what an app asked for, in its order), comma-separated.
    package static func orderedTypeListText(_ types: [String]) -> String { types.joined(separator: ",") }

    package static func orderedTypeList(_ text: String) -> [String] { text.split(separator: ",").map(String.init) }

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

/// `app_grants`' columns, in SELECT order (both stores).
package enum AppGrantColumn: Int, TableColumns {
    case app, displayName, readTypes, shareTypes, decidedReadTypes, decidedShareTypes, createdMs, lastUsedMs

    package static let table = "app_grants"

    package var name: String {
        switch self {
        case .app: "app"
        case .displayName: "display_name"
        case .readTypes: "read_types"
        case .shareTypes: "share_types"
        case .decidedReadTypes: "decided_read_types"
        case .decidedShareTypes: "decided_share_types"
        case .createdMs: "created_ms"
        case .lastUsedMs: "last_used_ms"
        }
    }
}

/// `authorization_requests`' columns, in SELECT order (both stores).
package enum AuthorizationRequestColumn: Int, TableColumns {
    case id, userCode, app, displayName, reason, shareTypes, readTypes, createdMs, intervalSeconds, lastPollMs, state, userID,
         grantedShareTypes, grantedReadTypes

    package static let table = "authorization_requests"

    package var name: String {
        switch self {
        case .id: "id"
        case .userCode: "user_code"
        case .app: "app"
        case .displayName: "display_name"
        case .reason: "reason"
        case .shareTypes: "share_types"
        case .readTypes: "read_types"
        case .createdMs: "created_ms"
        case .intervalSeconds: "interval_s"
        case .lastPollMs: "last_poll_ms"
        case .state: "state"
        case .userID: "user_id"
        case .grantedShareTypes: "granted_share_types"
        case .grantedReadTypes: "granted_read_types"
        }
    }
}
