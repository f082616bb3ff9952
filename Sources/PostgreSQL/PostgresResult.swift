import CLibPQ

/// The rows (or command status) of one statement, in PostgreSQL's binary result format. Owns the
/// libpq result; rows read from it directly, without copying the whole set into Swift values.
public final class PostgresResult {
    let handle: OpaquePointer
    public let sql: String?

    init(handle: OpaquePointer, sql: String?) {
        self.handle = handle
        self.sql = sql
    }

    deinit { PQclear(handle) }

    public var rowCount: Int { Int(PQntuples(handle)) }
    public var columnCount: Int { Int(PQnfields(handle)) }

    /// Rows inserted, updated, deleted, copied or selected (0 for other commands).
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    public func columnName(at index: Int) -> String {
        guard index >= 0, index < columnCount else { return "#\(index)" }
        return PQfname(handle, Int32(truncatingIfNeeded: index)).map { String(cString: $0) } ?? "#\(index)"
    }

    /// Row `index` (0-based); valid while the result lives (the row keeps it alive).
    public subscript(index: Int) -> PostgresRow { PostgresRow(result: self, index: Int32(truncatingIfNeeded: index)) }

    public var rows: [PostgresRow] { (0..<rowCount).map { self[$0] } }

    /// Checks a libpq result: success statuses return it, errors become a classified
    /// `PostgresError` (the result is freed either way).
    static func checked(_ result: OpaquePointer?, connection: OpaquePointer, sql: String?) throws(PostgresError) -> PostgresResult {
        guard let result else { throw connectionError(connection, sql: sql) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresResult(handle: result, sql: sql)
        default:
            let error = serverError(result, connection: connection, sql: sql)
            PQclear(result)
            throw error
        }
    }

    /// The error a failed result describes. Without a SQLSTATE (libpq's own failures) or on a
    /// broken session, the failure is the connection's.
    static func serverError(_ result: OpaquePointer, connection: OpaquePointer, sql: String?) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let ascii = code.asciiValue, let text = PQresultErrorField(result, Int32(ascii)) else { return nil }
            return String(cString: text)
        }
        guard let state = field("C"), PQstatus(connection) == CONNECTION_OK else {
            let message = field("M") ?? String(cString: PQresultErrorMessage(result)).asOneLine
            let kind: PostgresError.Kind = PQstatus(connection) == CONNECTION_OK
                ? (field("C").map { PostgresError.kind(sqlState: $0) } ?? .other) : .unavailable
            return PostgresError(kind: kind, sqlState: field("C"), message: message.isEmpty ? "the connection failed" : message, sql: sql)
        }
        return PostgresError(kind: PostgresError.kind(sqlState: state), sqlState: state,
                             message: field("M") ?? "", detail: field("D"), constraint: field("n"),
                             table: field("t"), column: field("c"), sql: sql)
    }

    static func connectionError(_ connection: OpaquePointer, sql: String?) -> PostgresError {
        let message = String(cString: PQerrorMessage(connection)).asOneLine
        return PostgresError(kind: PQstatus(connection) == CONNECTION_OK ? .other : .unavailable,
                             message: message.isEmpty ? "no result from the server" : message, sql: sql)
    }
}

/// One row of a result. Getters are strict: NULL, or a column of another type than asked for,
/// throws `RowDecodingError` naming the column, instead of reading back as 0 or "".
/// Integers read from smallint/integer/bigint/oid and integral numeric (what `sum(bigint)`
/// returns); doubles also from real, integers and numeric; strings from text-like types, json,
/// jsonb and uuid (canonical lowercase form); bytes from bytea and uuid (its 16 bytes).
public struct PostgresRow: TypedRow {
    let result: PostgresResult
    let index: Int32

    public var columnCount: Int { result.columnCount }
    public func columnName(at column: Int) -> String { result.columnName(at: column) }

    /// The position of a one-column query's column.
    static let only = 0

    /// This row, when its result has exactly one column (the one-column readers' guard).
    func onlyColumn() throws(RowDecodingError) -> PostgresRow {
        guard columnCount == 1 else {
            throw RowDecodingError(table: nil, column: columnName(at: PostgresRow.only), problem: "is one of \(columnCount) columns where one was read",
                                   sql: result.sql)
        }
        return self
    }

    public func isNull(at column: Int) -> Bool {
        guard column >= 0, column < columnCount else { return false }
        return PQgetisnull(result.handle, index, Int32(truncatingIfNeeded: column)) == 1
    }

    // MARK: Positional reads

    public func int64(at column: Int) throws(RowDecodingError) -> Int64 { try int64(column, nil) }
    public func int(at column: Int) throws(RowDecodingError) -> Int { Int(truncatingIfNeeded: try int64(at: column)) }
    public func double(at column: Int) throws(RowDecodingError) -> Double { try double(column, nil) }
    public func bool(at column: Int) throws(RowDecodingError) -> Bool { try bool(column, nil) }
    public func string(at column: Int) throws(RowDecodingError) -> String { try string(column, nil) }
    public func bytes(at column: Int) throws(RowDecodingError) -> [UInt8] { try bytes(column, nil) }
    /// A timestamp or timestamptz as microseconds since 1970-01-01 UTC.
    public func microsecondsSince1970(at column: Int) throws(RowDecodingError) -> Int64 {
        try microsecondsSince1970(column, nil)
    }

    public func int64IfPresent(at column: Int) throws(RowDecodingError) -> Int64? { isNull(at: column) ? nil : try int64(at: column) }
    public func doubleIfPresent(at column: Int) throws(RowDecodingError) -> Double? { isNull(at: column) ? nil : try double(at: column) }
    public func boolIfPresent(at column: Int) throws(RowDecodingError) -> Bool? { isNull(at: column) ? nil : try bool(at: column) }
    public func stringIfPresent(at column: Int) throws(RowDecodingError) -> String? { isNull(at: column) ? nil : try string(at: column) }
    public func bytesIfPresent(at column: Int) throws(RowDecodingError) -> [UInt8]? { isNull(at: column) ? nil : try bytes(at: column) }

    /// Lends the column's raw binary value without copying; valid only inside `body`.
    public func withRawBytes<R, E: Error>(at column: Int, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let field = Int32(truncatingIfNeeded: column)
        let count = Int(PQgetlength(result.handle, index, field))
        return try body(UnsafeRawBufferPointer(start: count > 0 ? PQgetvalue(result.handle, index, field) : nil, count: count))
    }

    // MARK: Named reads

    public func int64<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Int64 { try int64(column.rawValue, (C.table, column.name)) }
    public func int<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Int { Int(truncatingIfNeeded: try int64(column)) }
    public func double<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Double { try double(column.rawValue, (C.table, column.name)) }
    public func bool<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Bool { try bool(column.rawValue, (C.table, column.name)) }
    public func string<C: TableColumns>(_ column: C) throws(RowDecodingError) -> String { try string(column.rawValue, (C.table, column.name)) }
    public func bytes<C: TableColumns>(_ column: C) throws(RowDecodingError) -> [UInt8] { try bytes(column.rawValue, (C.table, column.name)) }
    public func microsecondsSince1970<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Int64 {
        try microsecondsSince1970(column.rawValue, (C.table, column.name))
    }

    public func int64IfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Int64? { isNull(at: column.rawValue) ? nil : try int64(column) }
    public func doubleIfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Double? { isNull(at: column.rawValue) ? nil : try double(column) }
    public func boolIfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> Bool? { isNull(at: column.rawValue) ? nil : try bool(column) }
    public func stringIfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> String? { isNull(at: column.rawValue) ? nil : try string(column) }
    public func bytesIfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> [UInt8]? { isNull(at: column.rawValue) ? nil : try bytes(column) }

    /// `bytes`, under the name shared decoders read a bytea by (`TypedRow`).
    public func blob<C: TableColumns>(_ column: C) throws(RowDecodingError) -> [UInt8] { try bytes(column) }
    public func blobIfPresent<C: TableColumns>(_ column: C) throws(RowDecodingError) -> [UInt8]? { try bytesIfPresent(column) }

    // MARK: Decoding

    private func type(_ column: Int) -> UInt32 { PQftype(result.handle, Int32(truncatingIfNeeded: column)) }

    /// A named read's table and column, built only when a read fails (a column's name may cost
    /// a reflection); a positional read has none, and its error names the result's column and SQL.
    typealias ColumnLabel = (table: String, name: String)

    private func failure(_ column: Int, _ label: ColumnLabel?, _ problem: String) -> RowDecodingError {
        guard let label else { return RowDecodingError(table: nil, column: columnName(at: column), problem: problem, sql: result.sql) }
        return RowDecodingError(table: label.table, column: label.name, problem: problem)
    }

    /// The column's bytes, or an error when it is NULL or out of range.
    private func present(_ column: Int, _ label: @autoclosure () -> ColumnLabel?) throws(RowDecodingError) -> UnsafeRawBufferPointer {
        guard column >= 0, column < columnCount else {
            throw failure(column, label(), "does not exist (the result has \(columnCount) columns)")
        }
        guard !isNull(at: column) else { throw failure(column, label(), "is NULL") }
        return withRawBytes(at: column) { $0 }
    }

    private func mismatch(_ column: Int, _ label: ColumnLabel?, wanted: String) -> RowDecodingError {
        failure(column, label, "is \(TypeOID.name(type(column))), not \(wanted)")
    }

    private func int64(_ column: Int, _ label: @autoclosure () -> ColumnLabel?) throws(RowDecodingError) -> Int64 {
        let raw = try present(column, label())
        switch type(column) {
        case TypeOID.int8 where raw.count == 8: return Int64(bitPattern: raw.bigEndianInteger(UInt64.self))
        case TypeOID.int4 where raw.count == 4: return Int64(Int32(bitPattern: raw.bigEndianInteger(UInt32.self)))
        case TypeOID.int2 where raw.count == 2: return Int64(Int16(bitPattern: raw.bigEndianInteger(UInt16.self)))
        case TypeOID.oid where raw.count == 4: return Int64(raw.bigEndianInteger(UInt32.self))
        case TypeOID.numeric:
            guard let value = NumericValue(raw)?.int64 else {
                throw failure(column, label(), "is a numeric that is not an integer in range")
            }
            return value
        default: throw mismatch(column, label(), wanted: "an integer")
        }
    }

    private func double(_ column: Int, _ label: @autoclosure () -> ColumnLabel?) throws(RowDecodingError) -> Double {
        let raw = try present(column, label())
        switch type(column) {
        case TypeOID.float8 where raw.count == 8: return Double(bitPattern: raw.bigEndianInteger(UInt64.self))
        case TypeOID.float4 where raw.count == 4: return Double(Float(bitPattern: raw.bigEndianInteger(UInt32.self)))
        case TypeOID.numeric:
            guard let value = NumericValue(raw)?.double else {
                throw failure(column, label(), "is a numeric that does not decode")
            }
            return value
        case TypeOID.int8, TypeOID.int4, TypeOID.int2: return Double(try int64(column, label()))
        default: throw mismatch(column, label(), wanted: "a number")
        }
    }

    private func bool(_ column: Int, _ label: @autoclosure () -> ColumnLabel?) throws(RowDecodingError) -> Bool {
        let raw = try present(column, label())
        guard type(column) == TypeOID.bool, raw.count == 1 else { throw mismatch(column, label(), wanted: "boolean") }
        return raw[0] != 0
    }

    private func string(_ column: Int, _ label: @autoclosure () -> ColumnLabel?) throws(RowDecodingError) -> String {
        let raw = try present(column, label())
        switch type(column) {
        case TypeOID.text, TypeOID.varchar, TypeOID.bpchar, TypeOID.name, TypeOID.json, TypeOID.unknown:
            return String(decoding: raw, as: UTF8.self)
        case TypeOID.jsonb where raw.count >= 1 && raw[0] == 1:
            // jsonb's binary form is a version byte (1) followed by the JSON text.
            return String(decoding: UnsafeRawBufferPointer(rebasing: raw.dropFirst()), as: UTF8.self)
        case TypeOID.uuid where raw.count == 16:
            return formatUUID(raw)
        default: throw mismatch(column, label(), wanted: "text")
        }
    }

    private func bytes(_ column: Int, _ label: @autoclosure () -> ColumnLabel?) throws(RowDecodingError) -> [UInt8] {
        let raw = try present(column, label())
        switch type(column) {
        case TypeOID.bytea: return Array(raw)
        case TypeOID.uuid where raw.count == 16: return Array(raw)
        default: throw mismatch(column, label(), wanted: "bytea")
        }
    }

    private func microsecondsSince1970(_ column: Int, _ label: @autoclosure () -> ColumnLabel?) throws(RowDecodingError) -> Int64 {
        let raw = try present(column, label())
        guard type(column) == TypeOID.timestamptz || type(column) == TypeOID.timestamp, raw.count == 8 else {
            throw mismatch(column, label(), wanted: "a timestamp")
        }
        // PostgreSQL counts microseconds from 2000-01-01; ±infinity are the extreme integers.
        let since2000 = Int64(bitPattern: raw.bigEndianInteger(UInt64.self))
        let (value, overflow) = since2000.addingReportingOverflow(946_684_800_000_000)
        guard !overflow, since2000 != .max, since2000 != .min else {
            throw failure(column, label(), "is an infinite timestamp")
        }
        return value
    }

    private func formatUUID(_ raw: UnsafeRawBufferPointer) -> String {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (offset, byte) in raw.enumerated() {
            if offset == 4 || offset == 6 || offset == 8 || offset == 10 { out.append(UInt8(ascii: "-")) }
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension UnsafeRawBufferPointer {
    /// A big-endian integer at `offset`; the caller has checked the length.
    @inline(__always)
    func bigEndianInteger<T: FixedWidthInteger>(_: T.Type, at offset: Int = 0) -> T {
        var value: T = 0
        for index in offset..<(offset + MemoryLayout<T>.size) { value = value << 8 | T(self[index]) }
        return value
    }
}

/// PostgreSQL's binary numeric: base-10000 digits with a weight (the power of the first digit).
struct NumericValue {
    let negative: Bool
    let weight: Int
    let digits: [Int64]

    init?(_ raw: UnsafeRawBufferPointer) {
        guard raw.count >= 8 else { return nil }
        let count = Int(raw.bigEndianInteger(UInt16.self))
        weight = Int(Int16(bitPattern: raw.bigEndianInteger(UInt16.self, at: 2)))
        let sign = raw.bigEndianInteger(UInt16.self, at: 4)
        // 0x4000 negative, 0x0000 positive; NaN and the infinities (0xC000, 0xD000, 0xF000) do not decode.
        guard sign == 0 || sign == 0x4000, raw.count == 8 + 2 * count else { return nil }
        negative = sign == 0x4000
        digits = (0..<count).map { Int64(raw.bigEndianInteger(UInt16.self, at: 8 + 2 * $0)) }
    }

    /// The exact integer, when there is no fractional part and it fits.
    var int64: Int64? {
        var value: Int64 = 0
        for (index, digit) in digits.enumerated() where index > weight {
            if digit != 0 { return nil }
        }
        guard weight >= 0 else { return digits.allSatisfy { $0 == 0 } ? 0 : nil }
        for position in 0...weight {
            let digit = position < digits.count ? digits[position] : 0
            let (scaled, overflow1) = value.multipliedReportingOverflow(by: 10_000)
            let (sum, overflow2) = scaled.addingReportingOverflow(negative ? -digit : digit)
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    var double: Double {
        var value = 0.0
        var scale = 1.0
        var exponent = weight
        while exponent > 0 { scale *= 10_000; exponent -= 1 }
        while exponent < 0 { scale /= 10_000; exponent += 1 }
        for digit in digits {
            value += Double(digit) * scale
            scale /= 10_000
        }
        return negative ? -value : value
    }
}
