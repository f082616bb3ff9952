import CLibPQ

/// Rows for `COPY ... FROM STDIN (FORMAT binary)`, PostgreSQL's fastest way in: no SQL parsing
/// per row and no text conversion. Each field must be written in the exact binary form of its
/// column's type (an `integer` column takes `int32`, a `bigint` column `int64`...); the server
/// rejects the whole COPY otherwise, so nothing is half-written.
///
/// Data goes to the server in chunks while rows are written, so memory stays bounded.
public final class PostgresCopyWriter {
    private var buffer: [UInt8] = []
    private let send: ([UInt8]) throws(PostgresError) -> Void
    private var fieldsLeft = 0
    private let chunkSize = 256 * 1024
    public private(set) var rowCount = 0

    init(send: @escaping ([UInt8]) throws(PostgresError) -> Void) {
        self.send = send
        buffer.reserveCapacity(chunkSize + 1_024)
        // Signature, flags (no OIDs), header extension length.
        buffer.append(contentsOf: Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00])
        buffer.appendBigEndian(UInt32(0))
        buffer.appendBigEndian(UInt32(0))
    }

    /// Starts a row of `fieldCount` fields; the previous row must be complete.
    public func beginRow(fieldCount: Int) throws(PostgresError) {
        guard fieldsLeft == 0 else { throw PostgresError.misuse("COPY row ended with \(fieldsLeft) fields missing") }
        if buffer.count >= chunkSize {
            try send(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
        buffer.appendBigEndian(Int16(clamping: fieldCount))
        fieldsLeft = fieldCount
        rowCount += 1
    }

    public func appendNull() throws(PostgresError) {
        try field()
        buffer.appendBigEndian(Int32(-1))
    }

    public func append(int64 value: Int64) throws(PostgresError) { try appendInteger(value) }
    public func append(int32 value: Int32) throws(PostgresError) { try appendInteger(value) }
    public func append(int16 value: Int16) throws(PostgresError) { try appendInteger(value) }

    /// bigint, integer, smallint: the field length, then the value big-endian.
    private func appendInteger<T: FixedWidthInteger>(_ value: T) throws(PostgresError) {
        try field()
        buffer.appendBigEndian(Int32(MemoryLayout<T>.size))
        buffer.appendBigEndian(value)
    }

    public func append(double value: Double) throws(PostgresError) { try appendInteger(value.bitPattern) }

    public func append(bool value: Bool) throws(PostgresError) {
        try field()
        buffer.appendBigEndian(Int32(1))
        buffer.append(value ? 1 : 0)
    }

    /// text/varchar: the binary form is the UTF-8 bytes.
    public func append(text value: String) throws(PostgresError) {
        try field()
        let utf8 = value.utf8
        buffer.appendBigEndian(Int32(clamping: utf8.count))
        buffer.append(contentsOf: utf8)
    }

    /// bytea.
    public func append(bytes value: some Collection<UInt8>) throws(PostgresError) {
        try field()
        buffer.appendBigEndian(Int32(clamping: value.count))
        buffer.append(contentsOf: value)
    }

    /// uuid: its 16 bytes.
    public func append(uuid value: some Collection<UInt8>) throws(PostgresError) {
        guard value.count == 16 else { throw PostgresError.misuse("a uuid is 16 bytes, not \(value.count)") }
        try append(bytes: value)
    }

    /// timestamptz/timestamp from microseconds since 1970-01-01 UTC.
    public func append(microsecondsSince1970 value: Int64) throws(PostgresError) {
        try append(int64: value &- 946_684_800_000_000)
    }

    private func field() throws(PostgresError) {
        guard fieldsLeft > 0 else { throw PostgresError.misuse("COPY row has more fields than beginRow announced") }
        fieldsLeft -= 1
    }

    /// The trailer and any data not yet sent.
    func finish() throws(PostgresError) {
        guard fieldsLeft == 0 else { throw PostgresError.misuse("COPY row ended with \(fieldsLeft) fields missing") }
        buffer.appendBigEndian(Int16(-1))
        try send(buffer)
        buffer.removeAll()
    }
}

extension PostgresConnection {
    /// Runs `sql` (a `COPY table (columns) FROM STDIN (FORMAT binary)`) and streams the rows
    /// `write` produces. All or nothing: if `write` throws, the COPY is aborted and nothing is
    /// stored. Returns the number of rows the server stored.
    @discardableResult
    public func copyIn(_ sql: String, _ write: (PostgresCopyWriter) throws -> Void) throws -> Int {
        let handle = try openHandle()
        guard let start = PQexec(handle, sql) else { throw PostgresResult.connectionError(handle, sql: sql) }
        guard PQresultStatus(start) == PGRES_COPY_IN else {
            // Not a COPY FROM STDIN (or it failed): report the server's error, or the misuse.
            _ = try PostgresResult.checked(start, connection: handle, sql: sql)
            throw PostgresError.misuse("copyIn needs a COPY ... FROM STDIN statement", sql: sql)
        }
        PQclear(start)
        let writer = PostgresCopyWriter { (chunk: [UInt8]) throws(PostgresError) in
            let sent = chunk.withUnsafeBytes { raw in
                PQputCopyData(handle, raw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(clamping: raw.count))
            }
            if sent != 1 { throw PostgresResult.connectionError(handle, sql: sql) }
        }
        var failure: (any Error)?
        do {
            try write(writer)
            try writer.finish()
        } catch {
            failure = error
        }
        // Ending with an error message makes the server abort the COPY (and roll back its rows).
        let ended = failure == nil ? PQputCopyEnd(handle, nil) : PQputCopyEnd(handle, "aborted by the client")
        var copied = 0
        var serverError: PostgresError?
        if ended != 1 { serverError = PostgresResult.connectionError(handle, sql: sql) }
        // Drain every result so the connection is ready for the next command.
        while let result = PQgetResult(handle) {
            do {
                copied = try PostgresResult.checked(result, connection: handle, sql: sql).affectedRows
            } catch {
                if serverError == nil { serverError = error }
            }
        }
        if let failure { throw failure }
        if let serverError { throw serverError }
        return copied
    }
}
