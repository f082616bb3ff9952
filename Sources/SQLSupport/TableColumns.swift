/// The columns one query reads, declared once beside it: both drivers' rows read a column at its
/// case's position (the raw value: 0, 1, 2, ... in declaration order), so a decoder names what it
/// reads and a decoding error names table and column. The position is a constant, not a lookup:
/// reading by name costs what reading by index does.
///
/// Declare it as `enum X: Int, TableColumns`. Where the cases are a table's columns, give each its
/// SQL name and build the SELECT list from `selectList`, so SQL text and reader cannot drift
/// apart; for a query's own result list (aggregates, joins) the case names are the names.
public protocol TableColumns: CaseIterable, Sendable, RawRepresentable where RawValue == Int {
    /// The table (or, for a query's own result list, what the query reads), named in decoding errors.
    static var table: String { get }
    /// The column's name in SQL.
    var name: String { get }
}

extension TableColumns {
    /// The case's own name: where the SQL says `... AS name` or the column is named as the case.
    public var name: String { String(describing: self) }

    /// "a, b, c": the SELECT list in position order.
    public static var selectList: String { allCases.map(\.name).joined(separator: ", ") }
}
