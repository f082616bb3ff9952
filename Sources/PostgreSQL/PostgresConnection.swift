import CLibPQ
import Glibc

/// One PostgreSQL session over libpq, used synchronously (each call blocks until the server
/// answers). Not thread-safe and not Sendable, like libpq's PGconn: confine it to one thread at
/// a time. `PostgresPool` does that for the server; use a connection directly for tools and tests.
///
/// Parameterized statements are prepared once per connection and reused (keyed by SQL text and
/// parameter wire types), so a hot INSERT or SELECT is parsed and planned once, not per call.
/// (Behind PgBouncer, use session pooling: transaction pooling drops named prepared statements.)
public final class PostgresConnection {
    public enum IsolationLevel: Sendable {
        case readCommitted
        case repeatableRead
        case serializable

        var sql: String {
            switch self {
            case .readCommitted: "READ COMMITTED"
            case .repeatableRead: "REPEATABLE READ"
            case .serializable: "SERIALIZABLE"
            }
        }
    }

    /// Nil once closed.
    private var handle: OpaquePointer?
    public let configuration: PostgresConfiguration
    private var preparedNames: [PreparedKey: String] = [:]
    private var savepointDepth = 0

    private struct PreparedKey: Hashable {
        let sql: String
        let types: [UInt32]
    }

    /// Connects, failing with `.unavailable` when the server cannot be reached.
    public init(configuration: PostgresConfiguration) throws(PostgresError) {
        self.configuration = configuration
        try PostgresConfiguration.requireLibPQ()
        let parameters = configuration.connectionParameters()
        let connection = PostgresConnection.withCStrings(parameters.map(\.0)) { keywords in
            PostgresConnection.withCStrings(parameters.map(\.1)) { values in
                PQconnectdbParams(keywords, values, 1)
            }
        }
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let message = connection.map { String(cString: PQerrorMessage($0)).asOneLine }
                ?? "out of memory"
            PQfinish(connection)
            throw PostgresError(kind: .unavailable, message: "cannot connect to \(configuration.redactedURL): \(message)")
        }
        // libpq prints server notices (NOTICE, WARNING) to stderr by default; healthd's output is
        // its structured log, and the notices its own SQL causes ("already exists, skipping") are
        // expected, so they are dropped.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        self.handle = connection
    }

    public convenience init(url: String) throws(PostgresError) {
        try self.init(configuration: PostgresConfiguration(url: url))
    }

    deinit { PQfinish(handle) }

    public func close() {
        PQfinish(handle)
        handle = nil
        preparedNames.removeAll()
    }

    public var isClosed: Bool { handle == nil }

    /// False once the session broke (server gone, socket closed): such a connection is discarded.
    public var isHealthy: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// True while a transaction is open (also when it failed and awaits ROLLBACK).
    public var isInTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// The server process serving this session (`pg_backend_pid()`); 0 when closed.
    public var backendPID: Int32 { handle.map { PQbackendPID($0) } ?? 0 }

    /// The socket libpq reads from, for waiting on notifications with Dispatch or poll.
    var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    /// Number of statements prepared on this connection (for tests and metrics).
    public var preparedStatementCount: Int { preparedNames.count }

    func openHandle() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw PostgresError.misuse("the PostgreSQL connection is closed") }
        return handle
    }

    // MARK: Running SQL

    /// Runs a script of one or more statements without parameters (simple query protocol).
    public func execute(_ sql: String) throws(PostgresError) {
        let handle = try openHandle()
        _ = try PostgresResult.checked(PQexec(handle, sql), connection: handle, sql: sql)
    }

    /// Runs one statement with `values` as $1, $2, ...; returns the rows it affected.
    @discardableResult
    public func execute(_ sql: String, _ values: [PostgresValue]) throws(PostgresError) -> Int {
        try query(sql, values).affectedRows
    }

    /// Runs one statement with `values` as $1, $2, ... and returns its rows (decoded lazily).
    public func query(_ sql: String, _ values: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        let handle = try openHandle()
        let parameters = try EncodedParameters(values, sql: sql)
        let name = try preparedName(sql, types: parameters.types, handle: handle)
        let result = parameters.withPointers { count, pointers, lengths, formats in
            PQexecPrepared(handle, name, count, pointers, lengths, formats, 1)
        }
        return try PostgresResult.checked(result, connection: handle, sql: sql)
    }

    /// Like `query`, without preparing: for statements run once (DDL with parameters, ad hoc SQL).
    public func queryOnce(_ sql: String, _ values: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        let handle = try openHandle()
        let parameters = try EncodedParameters(values, sql: sql)
        let result = parameters.types.withUnsafeBufferPointer { types in
            parameters.withPointers { count, pointers, lengths, formats in
                PQexecParams(handle, sql, count, types.baseAddress, pointers, lengths, formats, 1)
            }
        }
        return try PostgresResult.checked(result, connection: handle, sql: sql)
    }

    /// The first row of `sql` through `transform`, or nil if there is none.
    public func first<T>(_ sql: String, _ values: [PostgresValue] = [], _ transform: (PostgresRow) throws -> T) throws -> T? {
        let result = try query(sql, values)
        guard result.rowCount > 0 else { return nil }
        return try transform(result[0])
    }

    /// Every row of `sql` through `transform`.
    public func map<T>(_ sql: String, _ values: [PostgresValue] = [], _ transform: (PostgresRow) throws -> T) throws -> [T] {
        let result = try query(sql, values)
        var rows: [T] = []
        rows.reserveCapacity(result.rowCount)
        for index in 0..<result.rowCount { rows.append(try transform(result[index])) }
        return rows
    }

    /// The only column of the first row of `sql`, or nil when there is no row. NULL throws
    /// (`scalarInt64` is the reader that allows it), and so does a query of several columns.
    public func firstInt64(_ sql: String, _ values: [PostgresValue] = []) throws -> Int64? {
        try first(sql, values) { try $0.onlyColumn().int64(at: PostgresRow.only) }
    }

    public func firstString(_ sql: String, _ values: [PostgresValue] = []) throws -> String? {
        try first(sql, values) { try $0.onlyColumn().string(at: PostgresRow.only) }
    }

    public func firstBytes(_ sql: String, _ values: [PostgresValue] = []) throws -> [UInt8]? {
        try first(sql, values) { try $0.onlyColumn().bytes(at: PostgresRow.only) }
    }

    public func firstBool(_ sql: String, _ values: [PostgresValue] = []) throws -> Bool? {
        try first(sql, values) { try $0.onlyColumn().bool(at: PostgresRow.only) }
    }

    /// The first column of the first row as an integer; nil if there is no row or it is NULL.
    public func scalarInt64(_ sql: String, _ values: [PostgresValue] = []) throws -> Int64? {
        try first(sql, values) { try $0.int64IfPresent(at: PostgresRow.only) } ?? nil
    }

    private func preparedName(_ sql: String, types: [UInt32], handle: OpaquePointer) throws(PostgresError) -> String {
        let key = PreparedKey(sql: sql, types: types)
        if let name = preparedNames[key] { return name }
        let name = "healthd_\(preparedNames.count + 1)"
        let result = types.withUnsafeBufferPointer { types in
            PQprepare(handle, name, sql, Int32(types.count), types.baseAddress)
        }
        _ = try PostgresResult.checked(result, connection: handle, sql: sql)
        preparedNames[key] = name
        return name
    }

    // MARK: Transactions

    /// Runs `body` in a transaction: COMMIT if it returns, ROLLBACK if it throws.
    ///
    /// A serialization failure (40001) or deadlock (40P01), in the body or at COMMIT, rolls back
    /// and runs the whole body again on a fresh snapshot, up to `attempts` times with a short
    /// random pause, so callers never see them unless contention persists. The body may therefore
    /// run more than once: keep side effects other than SQL out of it (publish after it returns).
    ///
    /// Not nestable: inside a transaction this throws (misuse); use `savepoint` for nested work.
    public func transaction<T>(_ isolation: IsolationLevel = .readCommitted, readOnly: Bool = false,
                               attempts: Int = 5, _ body: (PostgresConnection) throws -> T) throws -> T {
        guard !isInTransaction else {
            throw PostgresError.misuse("a transaction is already open on this connection; use savepoint for nested work")
        }
        var attempt = 1
        while true {
            do {
                return try transactionOnce(isolation, readOnly: readOnly, body)
            } catch let error as PostgresError where error.isTransactionRetryable && attempt < attempts {
                // Jittered, growing pause: two transactions that collided should not collide again.
                let ceiling = UInt32(min(200_000, 1_000 << min(attempt, 8)))
                usleep(UInt32.random(in: ceiling / 2...ceiling))
                attempt += 1
            }
        }
    }

    private func transactionOnce<T>(_ isolation: IsolationLevel, readOnly: Bool,
                                    _ body: (PostgresConnection) throws -> T) throws -> T {
        try execute(readOnly ? "BEGIN ISOLATION LEVEL \(isolation.sql) READ ONLY" : "BEGIN ISOLATION LEVEL \(isolation.sql)")
        let result: T
        do {
            result = try body(self)
        } catch {
            rollbackIfOpen()
            throw error
        }
        do {
            try execute("COMMIT")
        } catch {
            // COMMIT was sent: if the session broke now, the server may have committed or not.
            let outcomeUnknown = error.kind == .unavailable
            rollbackIfOpen()
            throw error.with(commitOutcomeUnknown: outcomeUnknown)
        }
        return result
    }

    /// Runs `body` in a SAVEPOINT inside the open transaction: if it throws, only its own work is
    /// undone and the transaction stays usable (in PostgreSQL any error otherwise aborts the
    /// whole transaction). Savepoints nest.
    public func savepoint<T>(_ body: () throws -> T) throws -> T {
        guard isInTransaction else { throw PostgresError.misuse("savepoint needs an open transaction") }
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        return try Savepoint.run(depth: savepointDepth, execute: { try execute($0) }, body)
    }

    private func rollbackIfOpen() {
        if isHealthy, isInTransaction { try? execute("ROLLBACK") }
    }

    // MARK: Notifications

    /// Reads what the server has sent without blocking and returns the notifications received
    /// (LISTEN). Throws `.unavailable` when the session broke.
    func drainNotifications() throws(PostgresError) -> [PostgresNotification] {
        let handle = try openHandle()
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(kind: .unavailable,
                                message: String(cString: PQerrorMessage(handle)).asOneLine)
        }
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            notifications.append(PostgresNotification(channel: String(cString: notify.pointee.relname),
                                                      payload: String(cString: notify.pointee.extra),
                                                      senderPID: notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return notifications
    }

    // MARK: C strings

    /// Calls `body` with a NULL-terminated array of C strings that live for the call.
    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}

/// One `NOTIFY` received on a listening connection.
public struct PostgresNotification: Sendable, Hashable {
    public let channel: String
    public let payload: String
    /// The server process of the session that sent it (`pg_backend_pid()` there).
    public let senderPID: Int32
}

/// Parameters in libpq's layout: one byte buffer with every value, plus lengths, formats and
/// types. Numbers are big-endian binary; text is NUL-terminated (text format ignores lengths).
struct EncodedParameters {
    private(set) var types: [UInt32] = []
    private var offsets: [Int] = []
    private var lengths: [Int32] = []
    private var formats: [Int32] = []
    private var bytes: [UInt8] = []

    init(_ values: [PostgresValue], sql: String) throws(PostgresError) {
        types.reserveCapacity(values.count)
        offsets.reserveCapacity(values.count)
        lengths.reserveCapacity(values.count)
        formats.reserveCapacity(values.count)
        for (offset, value) in values.enumerated() {
            types.append(value.wireType)
            formats.append(value.isBinary ? 1 : 0)
            let start = bytes.count
            switch value {
            case .null:
                offsets.append(-1)
                lengths.append(0)
                continue
            case .int64(let integer):
                bytes.appendBigEndian(UInt64(bitPattern: integer))
            case .double(let double):
                bytes.appendBigEndian(double.bitPattern)
            case .bool(let bool):
                bytes.append(bool ? 1 : 0)
            case .text(let text):
                // A NUL would end the C string early and silently store a shorter text.
                let utf8 = text.utf8
                if utf8.contains(0) {
                    throw PostgresError(kind: .nulInText, message: "parameter $\(offset + 1) contains a NUL character, which PostgreSQL text cannot hold",
                                        sql: sql)
                }
                bytes.append(contentsOf: utf8)
                bytes.append(0)
            case .bytes(let data):
                bytes.append(contentsOf: data)
            }
            offsets.append(start)
            lengths.append(Int32(clamping: bytes.count - start))
        }
        // Never an empty buffer: a zero-length value still needs a non-NULL pointer (NULL is SQL NULL).
        bytes.append(0)
    }

    func withPointers<R>(_ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
                                  UnsafePointer<Int32>?) -> R) -> R {
        bytes.withUnsafeBytes { raw in
            let base = raw.baseAddress?.assumingMemoryBound(to: CChar.self)
            let resolved: [UnsafePointer<CChar>?] = offsets.map { offset in
                guard offset >= 0, let base else { return nil }
                return base + offset
            }
            return resolved.withUnsafeBufferPointer { pointerBuffer in
                lengths.withUnsafeBufferPointer { lengthBuffer in
                    formats.withUnsafeBufferPointer { formatBuffer in
                        body(Int32(offsets.count), pointerBuffer.baseAddress, lengthBuffer.baseAddress, formatBuffer.baseAddress)
                    }
                }
            }
        }
    }
}

extension Array where Element == UInt8 {
    @inlinable @inline(__always)
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
