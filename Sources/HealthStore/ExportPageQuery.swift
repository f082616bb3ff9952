/// Where the two backends' SQL differs when one query builder serves both: the parameter
/// placeholders (`?1` for SQLite, `$1` for PostgreSQL). Parameters stay values of each driver.
package struct SQLDialect: Sendable {
    package let placeholderPrefix: String

    package static let sqlite = SQLDialect(placeholderPrefix: "?")
    package static let postgres = SQLDialect(placeholderPrefix: "$")

    package func placeholder(_ number: Int) -> String { placeholderPrefix + String(number) }

    /// "?1, ?2, ?3": the placeholders of `numbers`, comma-separated.
    package func placeholders(_ numbers: ClosedRange<Int>) -> String { numbers.map(placeholder).joined(separator: ", ") }
}

/// The query of `exportPage` for either backend: a user's top-level samples of one type, oldest
/// first by (start, seq), after a cursor (keyset paging on the (user, type, start) index),
/// optionally of one source. Every parameter is an integer, in placeholder order.
package struct ExportPageQuery {
    package let sql: String
    package let parameters: [Int64]

    package init(_ dialect: SQLDialect, userRowID: Int64, typeCode: Int64, onlySource: Int64?, after: SampleCursor?, limit: Int) {
        var parameters = [userRowID, typeCode]
        func parameter(_ value: Int64) -> String {
            parameters.append(value)
            return dialect.placeholder(parameters.count)
        }
        var conditions = ["user_id = \(dialect.placeholder(1))", "type_id = \(dialect.placeholder(2))", "parent_seq IS NULL"]
        if let onlySource { conditions.append("source_id = \(parameter(onlySource))") }
        if let after {
            let start = parameter(after.start)
            let seq = parameter(after.seq)
            // The bound on start_ms alone is what the index ranges over; seq breaks ties within it.
            conditions.append("start_ms >= \(start) AND (start_ms > \(start) OR seq > \(seq))")
        }
        let limitPlaceholder = parameter(Int64(limit))
        sql = """
            SELECT \(SampleRow.selectList) FROM samples WHERE \(conditions.joined(separator: " AND "))
            ORDER BY start_ms, seq LIMIT \(limitPlaceholder)
            """
        self.parameters = parameters
    }
}

/// The ids of a user's live (unrevoked) tokens, of one app or of all: parameters (user row id[, app]).
package enum LiveTokenQuery {
    package static func sql(_ dialect: SQLDialect, ofOneApp: Bool) -> String {
        "SELECT id FROM authorizations WHERE user_id = \(dialect.placeholder(1))"
            + (ofOneApp ? " AND app = \(dialect.placeholder(2))" : "") + " AND revoked_ms IS NULL"
    }
}
