import CSQLite

/// Tells SQLite to copy bound text/blob bytes, so the Swift buffer may go away right after binding.
/// (SQLite's SQLITE_TRANSIENT macro is a cast of -1 that Swift cannot import.)
let transientDestructor = unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)

/// A prepared statement. Not thread-safe: use it only on the thread that owns its `Database`.
///
/// As in SQLite's C API, parameter indexes start at 1 and column indexes start at 0.
public final class Statement {
    /// The raw statement handle; valid until the statement is finalized.
    let handle: OpaquePointer
    /// The connection, kept for error messages. Valid for the statement's whole life because
    /// connections are closed with `sqlite3_close_v2`, which waits for outstanding statements.
    let connection: OpaquePointer
    public let sql: String

    init(connection: OpaquePointer, sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        // The tail points into the temporary C string, so it is inspected inside the closure.
        let (code, hasMoreSQL) = sql.withCString { text -> (Int32, Bool) in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v3(connection, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            guard code == SQLITE_OK, let tail, tail.pointee != 0 else { return (code, false) }
            return (code, Statement.containsCode(tail, connection: connection))
        }
        guard code == SQLITE_OK else {
            sqlite3_finalize(statement)
            throw SQLiteError.from(connection: connection, code: code, sql: sql)
        }
        guard let statement else {
            // Empty SQL or only a comment prepares to nothing; treat as caller error.
            throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "SQL contains no statement", sql: sql)
        }
        // One statement per prepare keeps "which SQL failed" unambiguous; scripts go through `execute`.
        if hasMoreSQL {
            sqlite3_finalize(statement)
            throw SQLiteError(extendedCode: SQLITE_MISUSE,
                              message: "prepare accepts one statement; use Database.execute for scripts", sql: sql)
        }
        self.handle = statement
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// True if `tail` holds another statement rather than only whitespace, semicolons, or comments.
    private static func containsCode(_ tail: UnsafePointer<CChar>, connection: OpaquePointer) -> Bool {
        var next: OpaquePointer?
        let code = sqlite3_prepare_v2(connection, tail, -1, &next, nil)
        defer { sqlite3_finalize(next) }
        // A tail that fails to prepare is also "more SQL"; reject it rather than ignore it.
        return code != SQLITE_OK || next != nil
    }

    // MARK: Binding

    public var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    @inline(__always)
    private func check(_ code: Int32) throws(SQLiteError) {
        if code != SQLITE_OK { throw SQLiteError.from(connection: connection, code: code, sql: sql) }
    }

    public func bind(_ value: Int64, at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_int64(handle, Int32(truncatingIfNeeded: index), value))
    }

    public func bind(_ value: Int, at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_int64(handle, Int32(truncatingIfNeeded: index), Int64(value)))
    }

    public func bind(_ value: Bool, at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_int64(handle, Int32(truncatingIfNeeded: index), value ? 1 : 0))
    }

    public func bind(_ value: Double, at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_double(handle, Int32(truncatingIfNeeded: index), value))
    }

    /// Binds UTF-8 text. Native Swift strings are bound from their own storage (no Swift
    /// allocation); SQLite copies the bytes because the buffer is only valid during the call.
    public func bind(_ value: String, at index: Int) throws(SQLiteError) {
        var value = value
        let code = value.withUTF8 { bytes -> Int32 in
            // A nil base address would bind NULL, so empty text binds a literal "" instead.
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return sqlite3_bind_text64(handle, Int32(truncatingIfNeeded: index), "", 0,
                                           transientDestructor, UInt8(SQLITE_UTF8))
            }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text64(handle, Int32(truncatingIfNeeded: index), $0, UInt64(bytes.count),
                                    transientDestructor, UInt8(SQLITE_UTF8))
            }
        }
        try check(code)
    }

    /// Binds a blob; SQLite copies the bytes.
    public func bind(_ value: [UInt8], at index: Int) throws(SQLiteError) {
        let code = value.withUnsafeBytes { bindBlob($0, index) }
        try check(code)
    }

    /// Binds a blob from raw bytes (e.g. a slice or a Data-like buffer); SQLite copies them.
    public func bind(bytes: UnsafeRawBufferPointer, at index: Int) throws(SQLiteError) {
        try check(bindBlob(bytes, index))
    }

    private func bindBlob(_ raw: UnsafeRawBufferPointer, _ index: Int) -> Int32 {
        guard let base = raw.baseAddress, raw.count > 0 else {
            // A NULL pointer would bind SQL NULL; an empty blob is a zero-length zeroblob.
            return sqlite3_bind_zeroblob(handle, Int32(truncatingIfNeeded: index), 0)
        }
        return sqlite3_bind_blob64(handle, Int32(truncatingIfNeeded: index), base, UInt64(raw.count), transientDestructor)
    }

    public func bindNull(at index: Int) throws(SQLiteError) {
        try check(sqlite3_bind_null(handle, Int32(truncatingIfNeeded: index)))
    }

    /// Binds the value, or NULL when there is none.
    public func bindIfPresent(_ value: Int64?, at index: Int) throws(SQLiteError) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    public func bindIfPresent(_ value: Double?, at index: Int) throws(SQLiteError) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    public func bindIfPresent(_ value: [UInt8]?, at index: Int) throws(SQLiteError) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    public func bind(_ value: SQLValue, at index: Int) throws(SQLiteError) {
        switch value {
        case .null: try bindNull(at: index)
        case .integer(let integer): try bind(integer, at: index)
        case .real(let real): try bind(real, at: index)
        case .text(let text): try bind(text, at: index)
        case .blob(let blob): try bind(blob, at: index)
        }
    }

    /// Binds `values` to parameters 1...n. Throws if the count differs from the statement's
    /// parameter count, because a silently unbound parameter would be stored as NULL.
    public func bind(_ values: [SQLValue]) throws(SQLiteError) {
        guard values.count == parameterCount else {
            throw SQLiteError(extendedCode: SQLITE_RANGE,
                              message: "statement has \(parameterCount) parameters, \(values.count) values given", sql: sql)
        }
        for (offset, value) in values.enumerated() { try bind(value, at: offset + 1) }
    }

    /// Rewinds the statement so it can run again; bindings are kept.
    /// The error of a failed step was already thrown by `step()`, so it is not reported again.
    public func reset() { sqlite3_reset(handle) }

    /// Sets every parameter back to NULL.
    public func clearBindings() { sqlite3_clear_bindings(handle) }

    // MARK: Stepping

    /// Advances to the next row. Returns true when a row is available, false when done.
    /// On error the statement is reset, so it can be reused right away.
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        let error = SQLiteError.from(connection: connection, code: code, sql: sql)
        sqlite3_reset(handle)
        throw error
    }

    /// Resets, binds `values` (parameters 1...n), runs to completion, and resets again.
    /// With no values it runs with the current bindings, so typed `bind` calls then `execute()`
    /// is the allocation-free way to run an INSERT per row.
    public func execute(_ values: SQLValue...) throws(SQLiteError) {
        try execute(values)
    }

    public func execute(_ values: [SQLValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        if !values.isEmpty { try bind(values) }
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Runs the statement as bound so far and calls `body` for each row.
    /// The row view reads columns straight from SQLite; it is only valid inside `body`.
    /// The statement is reset afterwards (also when `body` throws).
    public func forEachRow(_ body: (Row) throws -> Void) throws {
        defer { sqlite3_reset(handle) }
        let row = Row(handle: handle)
        while try step() { try body(row) }
    }

    /// Maps every row through `transform`, then resets the statement.
    public func map<T>(_ transform: (Row) throws -> T) throws -> [T] {
        var results: [T] = []
        try forEachRow { row in results.append(try transform(row)) }
        return results
    }

    /// Reads the first row through `transform`, or nil if there is none; then resets.
    public func first<T>(_ transform: (Row) throws -> T) throws -> T? {
        defer { sqlite3_reset(handle) }
        guard try step() else { return nil }
        return try transform(Row(handle: handle))
    }

    // MARK: One-column queries

    /// The only column of the first row as an integer, or nil when there is no row; NULL throws,
    /// and so does a query with more than one column (a reader that would pick one by position).
    public func firstInt64() throws -> Int64? { try first { try $0.onlyColumn().int64(at: Row.only) } }
    public func firstInt() throws -> Int? { try firstInt64().map { Int(truncatingIfNeeded: $0) } }
    public func firstString() throws -> String? { try first { try $0.onlyColumn().string(at: Row.only) } }
    public func firstBlob() throws -> [UInt8]? { try first { try $0.onlyColumn().blob(at: Row.only) } }

    // MARK: Columns of the current row

    /// A view of the current row; valid until the next `step()` or `reset()`.
    public var row: Row { Row(handle: handle) }

    public var columnCount: Int { Int(sqlite3_column_count(handle)) }
    public func columnName(at index: Int) -> String { row.columnName(at: index) }
    public func isNull(at index: Int) -> Bool { row.isNull(at: index) }
    public func int64(at index: Int) throws(RowDecodingError) -> Int64 { try row.int64(at: index) }
    public func int(at index: Int) throws(RowDecodingError) -> Int { try row.int(at: index) }
    public func bool(at index: Int) throws(RowDecodingError) -> Bool { try row.bool(at: index) }
    public func double(at index: Int) throws(RowDecodingError) -> Double { try row.double(at: index) }
    public func string(at index: Int) throws(RowDecodingError) -> String { try row.string(at: index) }
    public func blob(at index: Int) throws(RowDecodingError) -> [UInt8] { try row.blob(at: index) }
    public func value(at index: Int) -> SQLValue { row.value(at: index) }
}

/// A non-copying view of a statement's current row. It must not outlive the callback or the
/// step that produced it: every getter reads SQLite's current row directly.
///
/// Getters do not follow SQLite's silent conversion of NULL to 0, 0.0, "" or []: a NULL throws
/// `RowDecodingError` naming the column. Where NULL is allowed, use the `...IfPresent` getters.
/// Read columns through the query's `TableColumns` type (declared beside the query); positions
/// (`at:`) are the primitive those reads are built on.
public struct Row {
    @usableFromInline let handle: OpaquePointer

    public var count: Int { Int(sqlite3_column_count(handle)) }

    public func columnName(at index: Int) -> String {
        sqlite3_column_name(handle, Int32(truncatingIfNeeded: index)).map { String(cString: $0) } ?? ""
    }

    /// The position of a one-column query's column.
    static let only = 0

    /// This row, when its query has exactly one column (the one-column readers' guard).
    func onlyColumn() throws(RowDecodingError) -> Row {
        guard count == 1 else {
            throw RowDecodingError(table: nil, column: columnName(at: Row.only), problem: "is one of \(count) columns where one was read",
                                   sql: sqlite3_sql(handle).map { String(cString: $0) })
        }
        return self
    }

    @inlinable
    public func isNull(at index: Int) -> Bool {
        sqlite3_column_type(handle, Int32(truncatingIfNeeded: index)) == SQLITE_NULL
    }

    @inline(__always)
    private func requirePresent(_ index: Int) throws(RowDecodingError) {
        if isNull(at: index) {
            throw RowDecodingError(table: nil, column: columnName(at: index), problem: "is NULL",
                                   sql: sqlite3_sql(handle).map { String(cString: $0) })
        }
    }

    public func int64(at index: Int) throws(RowDecodingError) -> Int64 {
        try requirePresent(index)
        return rawInt64(index)
    }

    public func int(at index: Int) throws(RowDecodingError) -> Int { Int(truncatingIfNeeded: try int64(at: index)) }
    public func bool(at index: Int) throws(RowDecodingError) -> Bool { try int64(at: index) != 0 }

    public func double(at index: Int) throws(RowDecodingError) -> Double {
        try requirePresent(index)
        return rawDouble(index)
    }

    public func string(at index: Int) throws(RowDecodingError) -> String {
        try requirePresent(index)
        return rawString(index)
    }

    public func blob(at index: Int) throws(RowDecodingError) -> [UInt8] {
        try requirePresent(index)
        return rawBlob(index)
    }

    /// Lends the column's bytes without copying; the buffer is valid only inside `body`.
    /// NULL lends an empty buffer: check `isNull(at:)` first where that matters. Inlinable, so
    /// per-row decoders in other modules (a sample's uuid) call it without generic dispatch.
    @inlinable
    public func withBlob<R, E: Error>(at index: Int, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let column = Int32(truncatingIfNeeded: index)
        let base = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: count > 0 ? base : nil, count: count))
    }

    /// The value first: only a 0 can be a NULL, so most reads make one call into SQLite, not two.
    @inlinable
    public func int64IfPresent(at index: Int) -> Int64? {
        let value = rawInt64(index)
        return value == 0 && isNull(at: index) ? nil : value
    }
    @inlinable
    public func doubleIfPresent(at index: Int) -> Double? { isNull(at: index) ? nil : rawDouble(index) }
    @inlinable
    public func stringIfPresent(at index: Int) -> String? { isNull(at: index) ? nil : rawString(index) }
    @inlinable
    public func blobIfPresent(at index: Int) -> [UInt8]? { isNull(at: index) ? nil : rawBlob(index) }

    /// The column as stored, following its dynamic type.
    public func value(at index: Int) -> SQLValue {
        switch sqlite3_column_type(handle, Int32(truncatingIfNeeded: index)) {
        case SQLITE_INTEGER: .integer(rawInt64(index))
        case SQLITE_FLOAT: .real(rawDouble(index))
        case SQLITE_TEXT: .text(rawString(index))
        case SQLITE_BLOB: .blob(rawBlob(index))
        default: .null
        }
    }

    // MARK: Named columns
    // Inlinable, so a decoder in another module reads at a constant position with no generic
    // dispatch: a named read costs what a positional one does.

    @inlinable
    func requirePresent<C: TableColumns>(_ column: C) throws(RowDecodingError) {
        if isNull(at: column.rawValue) { throw RowDecodingError(table: C.table, column: column.name, problem: "is NULL") }
    }

    @inlinable public func int64<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Int64 {
        try requirePresent(column)
        return rawInt64(column.rawValue)
    }

    @inlinable public func int<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Int {
        Int(truncatingIfNeeded: try int64(column))
    }

    @inlinable public func bool<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Bool { try int64(column) != 0 }

    @inlinable public func double<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Double {
        try requirePresent(column)
        return rawDouble(column.rawValue)
    }

    @inlinable public func string<C: TableColumns>(_ column: C) throws(RowDecodingError) -> String {
        try requirePresent(column)
        return rawString(column.rawValue)
    }

    @inlinable public func blob<C: TableColumns>(_ column: C) throws(RowDecodingError) -> [UInt8] {
        try requirePresent(column)
        return rawBlob(column.rawValue)
    }

    /// Lends the column's bytes without copying (see `withBlob(at:_:)`).
    @inlinable
    public func withBlob<C: TableColumns, R, E: Error>(_ column: C, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withBlob(at: column.rawValue, body)
    }

    @inlinable public func int64IfPresent<C: TableColumns>(_ column: C) -> Int64? { int64IfPresent(at: column.rawValue) }
    @inlinable public func doubleIfPresent<C: TableColumns>(_ column: C) -> Double? { doubleIfPresent(at: column.rawValue) }
    @inlinable public func stringIfPresent<C: TableColumns>(_ column: C) -> String? { stringIfPresent(at: column.rawValue) }
    @inlinable public func blobIfPresent<C: TableColumns>(_ column: C) -> [UInt8]? { blobIfPresent(at: column.rawValue) }

    /// Decodes a present column with `decode`; NULL, or nil from `decode`, is an error naming the
    /// column (`problem` says what the bytes should have been).
    @inlinable public func decode<C: TableColumns, T>(_ column: C, as problem: String,
                                           _ decode: (UnsafeRawBufferPointer) -> T?) throws(RowDecodingError) -> T {
        try requirePresent(column)
        guard let value = withBlob(at: column.rawValue, decode) else {
            throw RowDecodingError(table: C.table, column: column.name, problem: "is not \(problem)")
        }
        return value
    }

    // MARK: Raw reads (SQLite's conversions; callers have checked for NULL)

    @usableFromInline
    func rawInt64(_ index: Int) -> Int64 { sqlite3_column_int64(handle, Int32(truncatingIfNeeded: index)) }

    @usableFromInline
    func rawDouble(_ index: Int) -> Double { sqlite3_column_double(handle, Int32(truncatingIfNeeded: index)) }

    @usableFromInline
    func rawString(_ index: Int) -> String {
        let column = Int32(truncatingIfNeeded: index)
        // Text first, then bytes: that order returns the byte count of the UTF-8 form.
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    @usableFromInline
    func rawBlob(_ index: Int) -> [UInt8] { withBlob(at: index) { Array($0) } }
}

/// The named getters above are the protocol's: shared decoders read SQLite rows through them.
extension Row: TypedRow {}
