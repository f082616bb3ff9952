/// A column held a value its reader does not allow: NULL where the schema promises a value, or
/// bytes that do not decode (a uuid that is not 16 bytes, another type than asked for). Names
/// where, so a corrupt row is diagnosable from one log line instead of reading back as 0 or "".
/// Both drivers (SQLite, PostgreSQL) throw it.
public struct RowDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The table, when the reader knows it (named columns); nil for positional reads of an
    /// arbitrary query, whose SQL is given instead.
    public let table: String?
    public let column: String
    public let problem: String
    public let sql: String?

    public init(table: String?, column: String, problem: String, sql: String? = nil) {
        self.table = table
        self.column = column
        self.problem = problem
        self.sql = sql
    }

    public var description: String {
        var text = "column \(table.map { "\($0)." } ?? "")\(column) \(problem)"
        if let sql { text += " — while reading: \(sql)" }
        return text
    }
}
