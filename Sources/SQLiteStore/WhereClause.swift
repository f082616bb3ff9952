import HealthStore
import SQLite

extension AccessPolicy {
    /// Narrows a `samples` query on `type` to the token's own rows when it may not read the type.
    func narrow(_ type: String, into clause: inout WhereClause) {
        guard let own = visibleSource(of: type) else { return }
        let source = clause.bind(.integer(own))
        clause.require("source_id = ?\(source)")
    }

    func narrow(_ type: String, conditions: inout [String], values: inout [SQLValue]) {
        var clause = WhereClause(conditions: conditions, values: values)
        narrow(type, into: &clause)
        conditions = clause.conditions
        values = clause.values
    }
}

/// A WHERE clause's parameter values, and its text only when the caller needs it: a query whose
/// text is fixed by a few choices (`StatementFamily`) builds it once per connection, not per run.
struct WhereClause {
    let buildsText: Bool
    private(set) var conditions: [String]
    private(set) var values: [SQLValue]

    init(buildsText: Bool = true, conditions: [String] = [], values: [SQLValue] = []) {
        self.buildsText = buildsText
        self.conditions = conditions
        self.values = values
    }

    /// Adds a parameter value and returns its number (`?N` in the text).
    mutating func bind(_ value: SQLValue) -> Int {
        values.append(value)
        return values.count
    }

    /// Adds a condition (ANDed with the others); its text is built only when `buildsText`.
    mutating func require(_ condition: @autoclosure () -> String) {
        if buildsText { conditions.append(condition()) }
    }

    /// The conditions joined by AND (empty unless `buildsText`).
    var text: String { conditions.joined(separator: " AND ") }
}
