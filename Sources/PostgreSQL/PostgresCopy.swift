import CLibPQ

/// Rows in the form `COPY ... FROM STDIN (FORMAT binary)` takes, PostgreSQL's fastest way in: no
/// SQL parsing per row and no text conversion. Each field must be written in the exact binary form
/// of its column's type (an `integer` column takes `int32`, a `bigint` column `int64`...); the
/// server rejects the whole COPY otherwise, so nothing is half-written.
///
/// Encoded ahead of the statement, rows need no connection: a writer builds them before its
/// transaction opens (or a benchmark before its clock starts), writes in place a value known only
/// later (`overwrite(int64:at:)`: a change number handed out inside the transaction), and
/// `copyIn(_:rows:)` sends them. `copyIn(_:_:)` streams rows of the same encoding as they are made.
public struct PostgresCopyRows: Sendable {
    /// The encoded bytes are `storage[..<count]`; the rest is zeroed room to write into. Each
    /// value is stored straight into that room (one bounds check and a store), not appended
    /// through a temporary buffer: a batch writes a dozen fields per row.
    @usableFromInline var storage: [UInt8]
    @usableFromInline var count = 0
    @usableFromInline var fieldsLeft = 0
    @usableFromInline var rows = 0

    /// Rows begun so far.
    public var rowCount: Int { rows }

    /// `reservingCapacity`: the expected size in bytes, so a large batch grows its buffer once.
    public init(reservingCapacity capacity: Int = 0) {
        self.init(header: true, capacity: capacity)
    }

    init(header: Bool, capacity: Int) {
        storage = Array(repeating: 0, count: max(capacity, 0) + 32)
        // Signature, flags (no OIDs), header extension length.
        if header {
            for byte in Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] { store(byte) }
            store(UInt32(0))
            store(UInt32(0))
        }
    }

    /// Bytes encoded so far.
    public var byteCount: Int { count }

    /// Makes room for `extra` more bytes past `count`.
    @inlinable
    mutating func reserve(_ extra: Int) {
        guard count + extra > storage.count else { return }
        storage.append(contentsOf: repeatElement(0, count: max(storage.count, count + extra - storage.count, 256)))
    }

    /// `value` big-endian at `count`.
    @inlinable
    mutating func store<T: FixedWidthInteger>(_ value: T) {
        reserve(MemoryLayout<T>.size)
        let at = count
        storage.withUnsafeMutableBytes { $0.storeBytes(of: value.bigEndian, toByteOffset: at, as: T.self) }
        count += MemoryLayout<T>.size
    }

    /// A field's length and then its value, both big-endian, with one store of each.
    @inlinable
    mutating func store<T: FixedWidthInteger>(length: Int32, _ value: T) {
        reserve(4 + MemoryLayout<T>.size)
        let at = count
        storage.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: length.bigEndian, toByteOffset: at, as: Int32.self)
            bytes.storeBytes(of: value.bigEndian, toByteOffset: at + 4, as: T.self)
        }
        count += 4 + MemoryLayout<T>.size
    }

    @inlinable
    mutating func store(contentsOf bytes: some Collection<UInt8>) {
        reserve(bytes.count)
        var at = count
        storage.withUnsafeMutableBufferPointer { buffer in
            for byte in bytes {
                buffer[at] = byte
                at += 1
            }
        }
        count = at
    }

    @inlinable
    mutating func store(contentsOf bytes: [UInt8]) {
        reserve(bytes.count)
        let at = count
        storage.withUnsafeMutableBytes { target in
            bytes.withUnsafeBytes { source in
                guard let from = source.baseAddress, let to = target.baseAddress, !source.isEmpty else { return }
                (to + at).copyMemory(from: from, byteCount: source.count)
            }
        }
        count += bytes.count
    }

    /// Starts a row of `fieldCount` fields; the previous row must be complete.
    @inlinable
    public mutating func beginRow(fieldCount: Int) throws(PostgresError) {
        guard fieldsLeft == 0 else { throw PostgresError.misuse("COPY row ended with \(fieldsLeft) fields missing") }
        store(Int16(clamping: fieldCount))
        fieldsLeft = fieldCount
        rows += 1
    }

    @inlinable
    public mutating func appendNull() throws(PostgresError) {
        try field()
        store(Int32(-1))
    }

    /// bigint. Returns where the value's 8 bytes start, for `overwrite(int64:at:)`.
    @inlinable @discardableResult
    public mutating func append(int64 value: Int64) throws(PostgresError) -> Int { try appendInteger(value) }
    @inlinable
    public mutating func append(int32 value: Int32) throws(PostgresError) { try appendInteger(value) }
    @inlinable
    public mutating func append(int16 value: Int16) throws(PostgresError) { try appendInteger(value) }

    /// bigint, integer, smallint: the field length, then the value big-endian.
    @inlinable @discardableResult
    mutating func appendInteger<T: FixedWidthInteger>(_ value: T) throws(PostgresError) -> Int {
        try field()
        store(length: Int32(MemoryLayout<T>.size), value)
        return count - MemoryLayout<T>.size
    }

    /// Writes `value` over the 8 bytes at `offset`, where `append(int64:)` put a bigint.
    @inlinable
    public mutating func overwrite(int64 value: Int64, at offset: Int) throws(PostgresError) {
        guard offset >= 4, offset + 8 <= count else {
            throw PostgresError.misuse("no bigint field at offset \(offset) of \(count) COPY bytes")
        }
        storage.withUnsafeMutableBytes { $0.storeBytes(of: value.bigEndian, toByteOffset: offset, as: Int64.self) }
    }

    @inlinable
    public mutating func append(double value: Double) throws(PostgresError) { try appendInteger(value.bitPattern) }

    public mutating func append(bool value: Bool) throws(PostgresError) {
        try field()
        store(length: 1, UInt8(value ? 1 : 0))
    }

    /// text/varchar: the binary form is the UTF-8 bytes.
    public mutating func append(text value: String) throws(PostgresError) {
        try field()
        let utf8 = value.utf8
        store(Int32(clamping: utf8.count))
        store(contentsOf: utf8)
    }

    /// bytea.
    @inlinable
    public mutating func append(bytes value: some Collection<UInt8>) throws(PostgresError) {
        try field()
        store(Int32(clamping: value.count))
        store(contentsOf: value)
    }

    /// bytea from an array: one copy of its bytes.
    @inlinable
    public mutating func append(bytes value: [UInt8]) throws(PostgresError) {
        try field()
        store(Int32(clamping: value.count))
        store(contentsOf: value)
    }

    /// uuid: its 16 bytes.
    public mutating func append(uuid value: some Collection<UInt8>) throws(PostgresError) {
        guard value.count == 16 else { throw PostgresError.misuse("a uuid is 16 bytes, not \(value.count)") }
        try append(bytes: value)
    }

    /// uuid from its two halves, most significant first (no array per value).
    @inlinable
    public mutating func append(uuidHigh high: UInt64, low: UInt64) throws(PostgresError) {
        try field()
        store(length: 16, high)
        store(low)
    }

    /// timestamptz/timestamp from microseconds since 1970-01-01 UTC.
    public mutating func append(microsecondsSince1970 value: Int64) throws(PostgresError) {
        try append(int64: value &- 946_684_800_000_000)
    }

    @inlinable
    mutating func field() throws(PostgresError) {
        guard fieldsLeft > 0 else { throw PostgresError.misuse("COPY row has more fields than beginRow announced") }
        fieldsLeft -= 1
    }

    /// Checks the last row is complete.
    func requireComplete() throws(PostgresError) {
        guard fieldsLeft == 0 else { throw PostgresError.misuse("COPY row ended with \(fieldsLeft) fields missing") }
    }

    /// The bytes encoded so far.
    func withEncodedBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    /// Sends the bytes encoded so far (and `trailer` after them, when asked) and starts over; rows
    /// keep counting. How the streaming writer sends its chunks.
    mutating func flush(withTrailer: Bool, _ send: (UnsafeRawBufferPointer) throws(PostgresError) -> Void) throws(PostgresError) {
        if withTrailer { store(contentsOf: Self.trailer) }
        var failure: PostgresError?
        withEncodedBytes { bytes in
            do throws(PostgresError) { try send(bytes) } catch { failure = error }
        }
        count = 0
        if let failure { throw failure }
    }

    /// The end of the data (not part of the rows' bytes, so rows can be sent more than once).
    static let trailer: [UInt8] = [0xFF, 0xFF]
}

/// Rows streamed to the server while `copyIn(_:_:)` runs, in chunks, so memory stays bounded
/// however many rows are written. The same encoding and checks as `PostgresCopyRows`.
public final class PostgresCopyWriter {
    private var rows: PostgresCopyRows
    private let send: (UnsafeRawBufferPointer) throws(PostgresError) -> Void
    private let chunkSize = 256 * 1024

    public var rowCount: Int { rows.rowCount }

    init(send: @escaping (UnsafeRawBufferPointer) throws(PostgresError) -> Void) {
        self.send = send
        rows = PostgresCopyRows(header: true, capacity: chunkSize + 1_024)
    }

    /// Starts a row of `fieldCount` fields; the previous row must be complete.
    public func beginRow(fieldCount: Int) throws(PostgresError) {
        if rows.byteCount >= chunkSize {
            try rows.requireComplete()
            try rows.flush(withTrailer: false, send)
        }
        try rows.beginRow(fieldCount: fieldCount)
    }

    public func appendNull() throws(PostgresError) { try rows.appendNull() }
    public func append(int64 value: Int64) throws(PostgresError) { try rows.append(int64: value) }
    public func append(int32 value: Int32) throws(PostgresError) { try rows.append(int32: value) }
    public func append(int16 value: Int16) throws(PostgresError) { try rows.append(int16: value) }
    public func append(double value: Double) throws(PostgresError) { try rows.append(double: value) }
    public func append(bool value: Bool) throws(PostgresError) { try rows.append(bool: value) }
    public func append(text value: String) throws(PostgresError) { try rows.append(text: value) }
    public func append(bytes value: some Collection<UInt8>) throws(PostgresError) { try rows.append(bytes: value) }
    public func append(uuid value: some Collection<UInt8>) throws(PostgresError) { try rows.append(uuid: value) }
    public func append(microsecondsSince1970 value: Int64) throws(PostgresError) {
        try rows.append(microsecondsSince1970: value)
    }

    /// The trailer and any data not yet sent.
    func finish() throws(PostgresError) {
        try rows.requireComplete()
        try rows.flush(withTrailer: true, send)
    }
}

extension PostgresConnection {
    /// Runs `sql` (a `COPY table (columns) FROM STDIN (FORMAT binary)`) and streams the rows
    /// `write` produces. All or nothing: if `write` throws, the COPY is aborted and nothing is
    /// stored. Returns the number of rows the server stored.
    @discardableResult
    public func copyIn(_ sql: String, _ write: (PostgresCopyWriter) throws -> Void) throws -> Int {
        try copy(sql) { send in
            let writer = PostgresCopyWriter(send: send)
            try write(writer)
            try writer.finish()
        }
    }

    /// Runs `sql` (a `COPY ... FROM STDIN (FORMAT binary)`) with rows encoded beforehand. All or
    /// nothing, like the streaming form. Returns the number of rows the server stored.
    @discardableResult
    public func copyIn(_ sql: String, rows: PostgresCopyRows) throws -> Int {
        try rows.requireComplete()
        return try copy(sql) { send in
            // In pieces of a few hundred KiB: libpq copies what it is given into its own buffer.
            let chunk = 256 * 1024
            try rows.withEncodedBytes { bytes in
                var start = 0
                while start < bytes.count {
                    let end = min(bytes.count, start + chunk)
                    try send(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                    start = end
                }
            }
            try PostgresCopyRows.trailer.withUnsafeBytes { try send($0) }
        }
    }

    /// Starts the COPY, lets `produce` send its data, ends it (aborting it if `produce` threw) and
    /// drains the results. Returns the rows stored.
    private func copy(_ sql: String,
                      _ produce: (_ send: @escaping (UnsafeRawBufferPointer) throws(PostgresError) -> Void) throws -> Void) throws -> Int {
        let handle = try openHandle()
        guard let start = PQexec(handle, sql) else { throw PostgresResult.connectionError(handle, sql: sql) }
        guard PQresultStatus(start) == PGRES_COPY_IN else {
            // Not a COPY FROM STDIN (or it failed): report the server's error, or the misuse.
            _ = try PostgresResult.checked(start, connection: handle, sql: sql)
            throw PostgresError.misuse("copyIn needs a COPY ... FROM STDIN statement", sql: sql)
        }
        PQclear(start)
        let send = { (chunk: UnsafeRawBufferPointer) throws(PostgresError) in
            let sent = PQputCopyData(handle, chunk.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(clamping: chunk.count))
            if sent != 1 { throw PostgresResult.connectionError(handle, sql: sql) }
        }
        var failure: (any Error)?
        do {
            try produce(send)
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
