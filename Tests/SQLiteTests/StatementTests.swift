import Testing
@testable import SQLite

@Suite struct StatementTests {
    private enum PersonColumn: Int, TableColumns {
        case id, name, nickname, photo
        static let table = "people"
        var name: String {
            switch self {
            case .id: "id"
            case .name: "full_name"
            case .nickname: "nickname"
            case .photo: "photo"
            }
        }
    }

    @Test func namedColumnsBuildTheSelectListInPositionOrder() throws {
        #expect(PersonColumn.selectList == "id, full_name, nickname, photo")
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE people (photo BLOB, nickname TEXT, full_name TEXT, id INTEGER)")
        try db.execute("INSERT INTO people VALUES (x'0102', NULL, 'Ada', 7)")
        let read = try db.first("SELECT \(PersonColumn.selectList) FROM people") { row in
            (try row.int64(PersonColumn.id), try row.string(PersonColumn.name), row.stringIfPresent(PersonColumn.nickname),
             try row.blob(PersonColumn.photo))
        }
        #expect(read?.0 == 7 && read?.1 == "Ada" && read?.2 == nil && read?.3 == [1, 2])
    }

    /// One-column readers: nil without a row; NULL, or a query of more than one column (whose
    /// other columns the reader would ignore), is an error. A case's own name is its column's
    /// name where none is given.
    @Test func oneColumnReadersRefuseNullAndWiderQueries() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (n INTEGER, s TEXT, b BLOB)")
        #expect(try db.firstInt64("SELECT n FROM t") == nil)
        try db.execute("INSERT INTO t VALUES (7, 'seven', x'07'), (NULL, NULL, NULL)")
        #expect(try db.firstInt64("SELECT n FROM t WHERE n = 7") == 7)
        #expect(try db.firstString("SELECT s FROM t WHERE n = 7") == "seven")
        #expect(try db.firstBlob("SELECT b FROM t WHERE n = 7") == [7])
        #expect(throws: RowDecodingError.self) { try db.firstInt64("SELECT n FROM t WHERE n IS NULL") }
        #expect(throws: RowDecodingError(table: nil, column: "n", problem: "is one of 2 columns where one was read",
                                         sql: "SELECT n, s FROM t")) { try db.firstInt64("SELECT n, s FROM t") }
        enum Totals: Int, TableColumns {
            case rows, sum
            static let table = "t"
        }
        #expect(Totals.selectList == "rows, sum")
        let totals = try db.first("SELECT count(*) AS rows, sum(n) AS sum FROM t") { (try $0.int(Totals.rows), try $0.int64(Totals.sum)) }
        #expect(totals?.0 == 2 && totals?.1 == 7)
    }

    /// SQLite reads NULL as 0 or ""; a reader that needs a value gets an error naming the column.
    @Test func nullWhereAValueIsRequiredNamesTableAndColumn() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE people (id INTEGER, full_name TEXT, nickname TEXT, photo BLOB)")
        try db.execute("INSERT INTO people VALUES (NULL, NULL, NULL, NULL)")
        do {
            _ = try db.first("SELECT \(PersonColumn.selectList) FROM people") { try $0.int64(PersonColumn.id) }
            Issue.record("NULL must not read as 0")
        } catch let error as RowDecodingError {
            #expect(error.table == "people" && error.column == "id")
            #expect(error.description.contains("people.id is NULL"))
        }
        #expect(throws: RowDecodingError(table: "people", column: "full_name", problem: "is NULL")) {
            try db.first("SELECT \(PersonColumn.selectList) FROM people") { try $0.string(PersonColumn.name) }
        }
        // Positional reads name the column as selected and carry the SQL.
        do {
            _ = try db.first("SELECT photo AS picture FROM people") { try $0.blob(at: 0) }
            Issue.record("NULL must not read as an empty blob")
        } catch let error as RowDecodingError {
            #expect(error.column == "picture" && error.table == nil)
            #expect(error.sql == "SELECT photo AS picture FROM people")
        }
        #expect(throws: RowDecodingError.self) { try db.first("SELECT id FROM people") { try $0.double(at: 0) } }
        #expect(throws: RowDecodingError.self) { try db.first("SELECT id FROM people") { try $0.bool(at: 0) } }
        #expect(throws: RowDecodingError.self) { try db.first("SELECT id FROM people") { try $0.int(at: 0) } }
        #expect(throws: RowDecodingError.self) { try db.first("SELECT id FROM people") { try $0.string(at: 0) } }
        // Where NULL is allowed, it reads as nil.
        #expect(try db.first("SELECT \(PersonColumn.selectList) FROM people") { $0.int64IfPresent(PersonColumn.id) } == .some(nil))
    }

    @Test func decodeRejectsBytesOfTheWrongShape() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE people (id INTEGER, full_name TEXT, nickname TEXT, photo BLOB)")
        try db.execute("INSERT INTO people VALUES (1, 'Ada', NULL, x'010203')")
        let pair = { (bytes: UnsafeRawBufferPointer) -> [UInt8]? in bytes.count == 2 ? Array(bytes) : nil }
        #expect(throws: RowDecodingError(table: "people", column: "photo", problem: "is not a 2-byte pair")) {
            try db.first("SELECT \(PersonColumn.selectList) FROM people") { try $0.decode(PersonColumn.photo, as: "a 2-byte pair", pair) }
        }
        #expect(throws: RowDecodingError(table: "people", column: "nickname", problem: "is NULL")) {
            try db.first("SELECT \(PersonColumn.selectList) FROM people") { try $0.decode(PersonColumn.nickname, as: "text", pair) }
        }
    }

    @Test func typedBindingsRoundTrip() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n INTEGER, flag INTEGER)")
        let insert = try db.prepare("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)")
        let text = "héllo 🌍 \u{0}after-nul 日本語"
        let bytes: [UInt8] = [0, 1, 2, 255, 0, 128]
        try insert.bind(Int64.max, at: 1)
        try insert.bind(-0.125, at: 2)
        try insert.bind(text, at: 3)
        try insert.bind(bytes, at: 4)
        try insert.bindNull(at: 5)
        try insert.bind(true, at: 6)
        #expect(try insert.step() == false)
        insert.reset()
        try insert.bind(Int64.min, at: 1)
        try insert.bind(Double.greatestFiniteMagnitude, at: 2)
        try insert.bind("", at: 3)
        try insert.bind([UInt8](), at: 4)
        try insert.bind(42, at: 5)
        try insert.bind(false, at: 6)
        try insert.step()

        let select = try db.prepare("SELECT i, r, s, b, n, flag FROM t ORDER BY rowid")
        #expect(try select.step())
        #expect(select.columnCount == 6)
        #expect(select.columnName(at: 2) == "s")
        #expect(try select.int64(at: 0) == Int64.max)
        #expect(try select.double(at: 1) == -0.125)
        #expect(try select.string(at: 2) == text)
        #expect(try select.blob(at: 3) == bytes)
        #expect(select.isNull(at: 4))
        #expect(select.row.int64IfPresent(at: 4) == nil)
        #expect(try select.bool(at: 5))
        #expect(try select.step())
        #expect(try select.int64(at: 0) == Int64.min)
        #expect(try select.double(at: 1) == Double.greatestFiniteMagnitude)
        // Empty text and empty blobs must stay empty values, not become NULL.
        #expect(!select.isNull(at: 2))
        #expect(try select.string(at: 2) == "")
        #expect(!select.isNull(at: 3))
        #expect(try select.blob(at: 3) == [])
        #expect(try select.int(at: 4) == 42)
        #expect(try select.bool(at: 5) == false)
        #expect(try select.step() == false)
    }

    @Test func valueListBindingAndDynamicRead() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (a, b, c, d, e)")
        let values: [SQLValue] = [nil, 7, 2.5, "ünïcode", .blob([9, 8, 7])]
        try db.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", values)
        let read = try db.first("SELECT * FROM t") { row in (0..<row.count).map { row.value(at: $0) } }
        #expect(read == values)

        let statement = try db.prepare("INSERT INTO t VALUES (?, ?, ?, ?, ?)")
        // A missing value would silently store NULL, so a short list is an error.
        #expect(throws: SQLiteError.self) { try statement.execute(1, 2) }
        try statement.execute(SQLValue(Int64?.none), SQLValue(Int?(3)), SQLValue(true), SQLValue(String?.none), nil)
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 2)
    }

    @Test func forEachRowVisitsEveryRowAndResets() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3);")
        let select = try db.prepare("SELECT n FROM t WHERE n >= ? ORDER BY n")
        try select.bind(2, at: 1)
        var seen: [Int64] = []
        try select.forEachRow { seen.append(try $0.int64(at: 0)) }
        #expect(seen == [2, 3])
        // Reset keeps bindings, so the same query can run again.
        #expect(try select.map { try $0.int64(at: 0) } == [2, 3])
        #expect(try select.first { try $0.int64(at: 0) } == 2)
        var blobLength = 0
        try db.execute("CREATE TABLE b (x BLOB); INSERT INTO b VALUES (x'0102030405')")
        try db.prepare("SELECT x FROM b").forEachRow { row in
            row.withBlob(at: 0) { blobLength = $0.count }
        }
        #expect(blobLength == 5)
    }

    @Test func statementCacheReusesPreparedStatements() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (n INTEGER)")
        let sql = "INSERT INTO t VALUES (?)"
        let first = try db.cachedStatement(sql)
        try first.bind(1, at: 1)
        try first.step()
        let second = try db.cachedStatement(sql)
        #expect(first === second)
        #expect(db.cachedStatementCount == 1)
        // The cache hands statements back with cleared bindings: an unbound parameter is NULL.
        try second.step()
        #expect(try db.scalarInt64("SELECT count(*) FROM t WHERE n IS NULL") == 1)
        for value in 0..<100 { try db.execute(sql, [.integer(Int64(value))]) }
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 102)
        // The insert plus the two distinct count queries; 100 executions added nothing.
        #expect(db.cachedStatementCount == 3)
    }

    @Test func prepareAcceptsOneStatementOnly() throws {
        let db = try Database(path: ":memory:")
        #expect(throws: SQLiteError.self) { try db.prepare("SELECT 1; SELECT 2") }
        #expect(throws: SQLiteError.self) { try db.prepare("   ") }
        let statement = try db.prepare("SELECT 1; -- trailing comment\n")
        #expect(try statement.first { try $0.int64(at: 0) } == 1)
    }

    @Test func syntaxErrorCarriesMessageAndSQL() throws {
        let db = try Database(path: ":memory:")
        do {
            _ = try db.prepare("SELEC 1")
            Issue.record("expected a syntax error")
        } catch {
            #expect(error.code == .error)
            #expect(error.sql == "SELEC 1")
            #expect(error.description.contains("syntax error"))
            #expect(error.description.contains("SELEC 1"))
        }
    }

    @Test func bindingOutOfRangeIsARangeError() throws {
        let db = try Database(path: ":memory:")
        let statement = try db.prepare("SELECT ?")
        do {
            try statement.bind(1, at: 2)
            Issue.record("expected a range error")
        } catch {
            #expect(error.code == .range)
        }
    }

    @Test func closedDatabaseReportsMisuse() throws {
        let db = try Database(path: ":memory:")
        let statement = try db.prepare("SELECT 1")
        db.close()
        #expect(db.isClosed)
        #expect(throws: SQLiteError.self) { try db.execute("SELECT 1") }
        // A statement outliving close() is still usable: sqlite3_close_v2 defers the real close.
        #expect(try statement.first { try $0.int64(at: 0) } == 1)
    }
}

import CSQLite

@Suite struct ProcessConfigurationTests {
    /// Memory statistics are off (each SQLite allocation would take a global mutex for them), so
    /// SQLite reports no memory in use even with a connection open and a table filled.
    @Test func sqliteKeepsNoMemoryStatistics() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (x BLOB); INSERT INTO t VALUES (zeroblob(100000))")
        #expect(sqlite3_memory_used() == 0)
    }

    /// A family's statements are found by shape: the text is built once per shape and
    /// connection, two families never share a statement, and each comes back reset.
    @Test func shapedStatementsAreCachedByFamilyAndShape() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (n INTEGER)")
        try db.execute("INSERT INTO t VALUES (1), (2), (3)")
        let ascending = StatementFamily(), other = StatementFamily()
        var built = 0
        func statement(_ family: StatementFamily, _ shape: Int) throws -> Statement {
            try db.cachedStatement(family, shape: shape) {
                built += 1
                return shape == 0 ? "SELECT n FROM t ORDER BY n" : "SELECT n FROM t ORDER BY n DESC"
            }
        }
        #expect(!db.hasCachedStatement(ascending, shape: 0))
        let first = try statement(ascending, 0)
        #expect(db.hasCachedStatement(ascending, shape: 0) && !db.hasCachedStatement(other, shape: 0))
        // Left mid-iteration: it must come back reset, from the first row.
        #expect(try first.step() && first.row.int64IfPresent(at: 0) == 1)
        let again = try statement(ascending, 0)
        #expect(again === first && built == 1)
        #expect(try again.map { try $0.int64(at: 0) } == [1, 2, 3])
        #expect(try statement(ascending, 1).map { try $0.int64(at: 0) } == [3, 2, 1])
        #expect(try statement(other, 0) !== first && built == 3)
        #expect(db.cachedStatementCount == 3)
        // A transaction's end resets a shaped statement left mid-iteration too.
        try db.transaction(.deferred) {
            let busy = try statement(ascending, 1)
            #expect(try busy.step())
        }
        #expect(try db.transaction(.immediate) { try db.cachedStatement("SELECT count(*) FROM t").first { try $0.int64(at: 0) } } == 3)
    }
}
