/// A row read by its query's named columns (`TableColumns`): what both drivers' rows (SQLite's
/// `Row`, PostgreSQL's `PostgresRow`) offer, so a decoder that reads the same columns in both
/// stores is written once, generic over the row. Each driver maps its own storage: a bool is an
/// integer in SQLite and a `boolean` in PostgreSQL, a blob is a BLOB or a `bytea`.
///
/// Getters are strict: NULL where a value is read, or a column of another type, throws
/// `RowDecodingError` naming table and column; the `...IfPresent` getters read NULL as nil.
public protocol TypedRow {
    func int64<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Int64
    func int<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Int
    func double<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Double
    func bool<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Bool
    func string<C: TableColumns>(_ column: C) throws(RowDecodingError) -> String
    func blob<C: TableColumns>(_ column: C) throws(RowDecodingError) -> [UInt8]

    func int64IfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Int64?
    func doubleIfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Double?
    func stringIfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> String?
    func blobIfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> [UInt8]?
}
