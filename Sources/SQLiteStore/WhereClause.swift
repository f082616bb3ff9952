import HealthStore
import SQLite

extension WhereClause {
    /// Narrows a query on one type to what the reader sees of it: one source's rows, or (for
    /// every source) no condition.
    mutating func narrow(to visibility: SourceVisibility) {
        guard case .onlySource(let source) = visibility else { return }
        let parameter = bind(.integer(source))
        require("source_id = ?\(parameter)")
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
