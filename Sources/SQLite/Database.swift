import CSQLite

/// One SQLite connection. Not thread-safe and not Sendable: it is opened with
/// SQLITE_OPEN_NOMUTEX, so it must be confined to one thread at a time. `DatabasePool`
/// does that confinement for the server; use `Database` directly only for tools and tests.
public final class Database {
    public enum OpenMode: Sendable {
        /// Read-write, creating the file if missing.
        case readWriteCreate
        /// Read-write; the file must exist.
        case readWrite
        /// Read-only.
        case readOnly
    }

    public enum TransactionKind: Sendable {
        /// Takes the lock at the first read or write. Right for read transactions.
        case deferred
        /// Takes the write lock at BEGIN, so a busy database fails (or waits) up front instead of
        /// mid-transaction, where a deferred read→write upgrade cannot be retried by waiting.
        case immediate
        case exclusive
    }

    /// Nil once closed.
    private var connection: OpaquePointer?
    public let path: String
    private var statementCache: [String: Statement] = [:]
    /// Statements of queries whose SQL text is built from a few choices (`StatementFamily`), by
    /// family and shape: a hot query then neither rebuilds nor hashes its text per run.
    private var shapedStatementCache: [ShapedStatementKey: Statement] = [:]
    /// Depth of nested `savepoint` calls, used to name savepoints.
    private var savepointDepth = 0

    /// Opens (or creates) the database at `path`. Use ":memory:" for a private in-memory database.
    public init(path: String, mode: OpenMode = .readWriteCreate) throws(SQLiteError) {
        _ = sqliteProcessConfiguration
        var flags = SQLITE_OPEN_NOMUTEX
        switch mode {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let error = SQLiteError.from(connection: handle, code: code, sql: nil)
            // SQLite allocates a handle even on failure; it must still be closed.
            sqlite3_close_v2(handle)
            throw SQLiteError(extendedCode: error.extendedCode, message: "\(error.message) (opening \(path))")
        }
        sqlite3_extended_result_codes(handle, 1)
        self.connection = handle
        self.path = path
    }

    deinit { closeConnection() }

    /// Finalizes cached statements and closes the connection. Statements still held by callers
    /// stay valid until released: `sqlite3_close_v2` defers the real close until then.
    public func close() { closeConnection() }

    public var isClosed: Bool { connection == nil }

    private func closeConnection() {
        guard let handle = connection else { return }
        statementCache.removeAll()
        shapedStatementCache.removeAll()
        connection = nil
        sqlite3_close_v2(handle)
    }

    private func openHandle() throws(SQLiteError) -> OpaquePointer {
        guard let connection else {
            throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "database connection is closed")
        }
        return connection
    }

    // MARK: Running SQL

    /// Runs a script of one or more statements (no parameters, rows discarded).
    public func execute(_ sql: String) throws(SQLiteError) {
        let handle = try openHandle()
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let error = SQLiteError.from(connection: handle, code: code, sql: sql)
            sqlite3_free(message)
            throw error
        }
    }

    /// Runs one statement with `values` bound to its parameters.
    public func execute(_ sql: String, _ values: [SQLValue]) throws(SQLiteError) {
        try cachedStatement(sql).execute(values)
    }

    /// Prepares a new statement that the caller owns.
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try Statement(connection: try openHandle(), sql: sql)
    }

    /// Returns this connection's prepared statement for `sql`, preparing it on first use.
    /// It comes back reset with cleared bindings. Do not keep it across another
    /// `cachedStatement` call with the same SQL if you need both at once: they are one object.
    public func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        if let statement = statementCache[sql] {
            statement.reset()
            statement.clearBindings()
            return statement
        }
        let statement = try prepare(sql)
        statementCache[sql] = statement
        return statement
    }

    /// The prepared statement of one shape of a family's query, preparing `sql()` on its first
    /// use; like `cachedStatement(_:)` it comes back reset with cleared bindings. `shape` must
    /// determine the SQL text completely: the text is built only when the shape is new.
    public func cachedStatement(_ family: StatementFamily, shape: Int, sql: () -> String) throws(SQLiteError) -> Statement {
        let key = ShapedStatementKey(family: ObjectIdentifier(family), shape: shape)
        if let statement = shapedStatementCache[key] {
            statement.reset()
            statement.clearBindings()
            return statement
        }
        let statement = try prepare(sql())
        shapedStatementCache[key] = statement
        return statement
    }

    /// True when this connection has prepared that shape of the family's query.
    public func hasCachedStatement(_ family: StatementFamily, shape: Int) -> Bool {
        shapedStatementCache[ShapedStatementKey(family: ObjectIdentifier(family), shape: shape)] != nil
    }

    /// Number of statements held by the caches (for tests and metrics).
    public var cachedStatementCount: Int { statementCache.count + shapedStatementCache.count }

    /// Reads the first row of `sql` through `transform`, or nil if there are no rows.
    public func first<T>(_ sql: String, _ values: [SQLValue] = [], _ transform: (Row) throws -> T) throws -> T? {
        let statement = try cachedStatement(sql)
        try statement.bind(values)
        return try statement.first(transform)
    }

    /// Reads every row of `sql` through `transform`.
    public func map<T>(_ sql: String, _ values: [SQLValue] = [], _ transform: (Row) throws -> T) throws -> [T] {
        let statement = try cachedStatement(sql)
        try statement.bind(values)
        return try statement.map(transform)
    }

    /// The only column of the first row of `sql`, or nil when there is no row. NULL throws
    /// (`scalarInt64` is the reader that allows it), and so does a query of several columns.
    public func firstInt64(_ sql: String, _ values: [SQLValue] = []) throws -> Int64? {
        let statement = try cachedStatement(sql)
        try statement.bind(values)
        return try statement.firstInt64()
    }

    public func firstString(_ sql: String, _ values: [SQLValue] = []) throws -> String? {
        let statement = try cachedStatement(sql)
        try statement.bind(values)
        return try statement.firstString()
    }

    public func firstBlob(_ sql: String, _ values: [SQLValue] = []) throws -> [UInt8]? {
        let statement = try cachedStatement(sql)
        try statement.bind(values)
        return try statement.firstBlob()
    }

    /// The first column of the first row as an integer, or nil if no row or NULL.
    public func scalarInt64(_ sql: String, _ values: [SQLValue] = []) throws -> Int64? {
        try first(sql, values) { $0.int64IfPresent(at: Row.only) } ?? nil
    }

    /// Row ID of the most recent successful INSERT on this connection.
    public var lastInsertRowID: Int64 { connection.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    /// Rows changed by the most recent INSERT/UPDATE/DELETE on this connection.
    public var changes: Int { connection.map { Int(sqlite3_changes64($0)) } ?? 0 }

    /// Rows changed since the connection opened.
    public var totalChanges: Int { connection.map { Int(sqlite3_total_changes64($0)) } ?? 0 }

    /// True while a transaction is open on this connection.
    public var isInTransaction: Bool { connection.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    /// Sets how long a statement waits for a lock held by another connection before failing with SQLITE_BUSY.
    public func setBusyTimeout(milliseconds: Int) throws(SQLiteError) {
        let handle = try openHandle()
        let code = sqlite3_busy_timeout(handle, Int32(clamping: milliseconds))
        if code != SQLITE_OK { throw SQLiteError.from(connection: handle, code: code, sql: nil) }
    }

    // MARK: PRAGMAs

    /// Runs `PRAGMA name` and returns the first column of its first row as text (nil if none).
    public func pragma(_ name: String) throws -> String? {
        try readPragma("PRAGMA \(name)")
    }

    /// Runs `PRAGMA name = value` and returns what SQLite reports back, if anything
    /// (e.g. journal_mode answers with the mode actually in effect).
    @discardableResult
    public func setPragma(_ name: String, _ value: String) throws -> String? {
        try readPragma("PRAGMA \(name) = \(value)")
    }

    private func readPragma(_ sql: String) throws -> String? {
        // Not cached: PRAGMAs run rarely and some carry values in their SQL text.
        let statement = try prepare(sql)
        return try statement.first { $0.stringIfPresent(at: Row.only) } ?? nil
    }

    public func userVersion() throws -> Int {
        Int(try pragma("user_version").flatMap { Int($0) } ?? 0)
    }

    public func setUserVersion(_ version: Int) throws {
        try execute("PRAGMA user_version = \(version)")
    }

    // MARK: Transactions

    /// Runs `body` in a transaction of `kind`: COMMIT if it returns, ROLLBACK if it throws.
    ///
    /// Not nestable: if a transaction is already open on this connection this throws (misuse)
    /// rather than quietly running `body` with other locking than `kind` asked for. Use
    /// `savepoint` for all-or-nothing work inside a transaction.
    public func transaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws -> T) throws -> T {
        let handle = try openHandle()
        if sqlite3_get_autocommit(handle) == 0 {
            throw SQLiteError(extendedCode: SQLITE_MISUSE,
                              message: "a transaction is already open on this connection; use savepoint for nested work")
        }
        // Cached so a request-sized transaction does not re-parse BEGIN/COMMIT every time.
        switch kind {
        case .deferred: try cachedStatement("BEGIN DEFERRED").execute()
        case .immediate: try cachedStatement("BEGIN IMMEDIATE").execute()
        case .exclusive: try cachedStatement("BEGIN EXCLUSIVE").execute()
        }
        let result: T
        do {
            result = try body()
            resetBusyCachedStatements()
            try cachedStatement("COMMIT").execute()
        } catch {
            rollbackIfOpen(handle)
            throw error
        }
        return result
    }

    /// Runs `body` in a SAVEPOINT inside the open transaction: if it throws, only its own work is
    /// undone and the transaction stays open for the caller to commit or roll back. Savepoints
    /// nest. Outside a transaction SQLite would open a deferred one for it, so that throws
    /// (misuse): say which transaction you want with `transaction(_:_:)`.
    public func savepoint<T>(_ body: () throws -> T) throws -> T {
        let handle = try openHandle()
        guard sqlite3_get_autocommit(handle) == 0 else {
            throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "savepoint needs an open transaction")
        }
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        return try Savepoint.run(depth: savepointDepth, execute: { try execute($0) }, body)
    }

    private func rollbackIfOpen(_ handle: OpaquePointer) {
        resetBusyCachedStatements()
        // Some errors (SQLITE_FULL, SQLITE_IOERR, ...) already rolled back; a second ROLLBACK would fail.
        if sqlite3_get_autocommit(handle) == 0 {
            try? cachedStatement("ROLLBACK").execute()
        }
    }

    /// A cached SELECT left mid-iteration keeps its read cursor open; reset such statements so
    /// COMMIT/ROLLBACK never trips over them and the next transaction starts a fresh snapshot.
    private func resetBusyCachedStatements() {
        for statement in statementCache.values where sqlite3_stmt_busy(statement.handle) != 0 {
            statement.reset()
        }
        for statement in shapedStatementCache.values where sqlite3_stmt_busy(statement.handle) != 0 {
            statement.reset()
        }
    }

    // MARK: WAL

    public enum CheckpointMode: Sendable { case passive, full, restart, truncate }

    /// Checkpoints the WAL into the database file. Returns (frames in the WAL, frames checkpointed).
    @discardableResult
    public func checkpoint(_ mode: CheckpointMode = .passive) throws(SQLiteError) -> (walFrames: Int, checkpointed: Int) {
        let handle = try openHandle()
        let rawMode: Int32 = switch mode {
        case .passive: SQLITE_CHECKPOINT_PASSIVE
        case .full: SQLITE_CHECKPOINT_FULL
        case .restart: SQLITE_CHECKPOINT_RESTART
        case .truncate: SQLITE_CHECKPOINT_TRUNCATE
        }
        var walFrames: Int32 = 0
        var checkpointed: Int32 = 0
        let code = sqlite3_wal_checkpoint_v2(handle, nil, rawMode, &walFrames, &checkpointed)
        guard code == SQLITE_OK else { throw SQLiteError.from(connection: handle, code: code, sql: nil) }
        return (Int(walFrames), Int(checkpointed))
    }
}

/// Process-wide SQLite settings, applied once before the first connection opens: no memory
/// statistics (each allocation would otherwise take a global mutex; nothing here reads them).
private let sqliteProcessConfiguration: Void = {
    _ = healthd_sqlite3_disable_memory_statistics()
}()

/// A query whose SQL text varies with a few choices (which filters are present, the order): one
/// instance per query, kept for the process's life, names its statements in each connection's
/// cache together with a shape number that encodes the choices (`Database.cachedStatement(_:shape:sql:)`).
public final class StatementFamily: Sendable {
    public init() {}
}

private struct ShapedStatementKey: Hashable {
    let family: ObjectIdentifier
    let shape: Int
}
