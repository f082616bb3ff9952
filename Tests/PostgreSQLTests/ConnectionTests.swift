import Foundation
import PostgresTestSupport
import Testing
@testable import PostgreSQL

/// Parameters, rows and errors against a real server.
@Suite(.enabled(if: TestPostgres.isAvailable, TestPostgres.skipReason))
struct ConnectionTests {
    @Test func parametersRoundTripExactly() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try db.execute("""
            CREATE TABLE t (i bigint, d double precision, b boolean, s text, x bytea, u uuid, j jsonb, small integer)
            """)
        let rows: [[PostgresValue]] = [
            [.int64(.max), .double(0.1), .bool(true), .text("héllo ✓"), .bytes([0, 1, 255, 0]),
             .text("0195C8A4-1F00-7000-8000-000000000001"), .text(#"{"a": [1, 2]}"#), .int64(7)],
            [.int64(.min), .double(-.greatestFiniteMagnitude), .bool(false), .text(""), .bytes([]),
             .null, .null, .int64(-2_147_483_648)],
            [.null, .double(.leastNonzeroMagnitude), .null, .null, .null, .null, .null, .null],
        ]
        for row in rows {
            try db.execute("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8)", row)
        }
        let read = try db.map("SELECT i, d, b, s, x, u, j, small FROM t ORDER BY d DESC") { row in
            [PostgresValue(try row.int64IfPresent(at: 0)), PostgresValue(try row.doubleIfPresent(at: 1)),
             PostgresValue(try row.boolIfPresent(at: 2)), PostgresValue(try row.stringIfPresent(at: 3)),
             PostgresValue(try row.bytesIfPresent(at: 4)), PostgresValue(try row.stringIfPresent(at: 5)),
             PostgresValue(try row.stringIfPresent(at: 6)), PostgresValue(try row.int64IfPresent(at: 7))]
        }
        #expect(read[0] == [.int64(.max), .double(0.1), .bool(true), .text("héllo ✓"), .bytes([0, 1, 255, 0]),
                            .text("0195c8a4-1f00-7000-8000-000000000001"), .text(#"{"a": [1, 2]}"#), .int64(7)])
        #expect(read[1] == rows[2])
        #expect(read[2] == [.int64(.min), .double(-.greatestFiniteMagnitude), .bool(false), .text(""), .bytes([]),
                            .null, .null, .int64(-2_147_483_648)])
        #expect(try db.first("SELECT u FROM t WHERE u IS NOT NULL") { try $0.bytes(at: 0) }?.count == 16)
    }

    @Test func aggregatesDecode() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        // sum(bigint) is numeric, count is bigint, avg(double) is double: each reads as asked.
        let row = try #require(try db.first("SELECT sum(x), count(*), avg(x::float8), sum(x) / 4, now() FROM generate_series(1::bigint, 10) x") { row in
            (try row.int64(at: 0), try row.int(at: 1), try row.double(at: 2), try row.double(at: 3), try row.microsecondsSince1970(at: 4))
        })
        #expect(row.0 == 55 && row.1 == 10 && row.2 == 5.5 && row.3 == 13.75)
        #expect(abs(Double(row.4) / 1e6 - Date().timeIntervalSince1970) < 60)
    }

    @Test func nullAndTypeMismatchNameTheColumn() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        let result = try db.query("SELECT NULL::bigint AS missing, 'x'::text AS word, 2.5::numeric AS half")
        let row = result[0]
        #expect(throws: RowDecodingError(table: nil, column: "missing", problem: "is NULL", sql: result.sql)) { try row.int64(at: 0) }
        #expect(throws: RowDecodingError(table: nil, column: "word", problem: "is text, not an integer", sql: result.sql)) {
            try row.int64(at: 1)
        }
        #expect(throws: RowDecodingError.self) { try row.int64(at: 2) }
        #expect(throws: RowDecodingError.self) { try row.string(at: 7) }
        #expect(try row.double(at: 2) == 2.5)

        enum Columns: Int, TableColumns {
            case id, label
            static let table = "things"
            var name: String { self == .id ? "id" : "label" }
        }
        try db.execute("CREATE TABLE things (id bigint PRIMARY KEY, label text)")
        try db.execute("INSERT INTO things VALUES (1, NULL)", [])
        let thing = try db.query("SELECT \(Columns.selectList) FROM things")[0]
        #expect(try thing.int64(Columns.id) == 1)
        #expect(throws: RowDecodingError(table: "things", column: "label", problem: "is NULL")) { try thing.string(Columns.label) }
        #expect(try thing.stringIfPresent(Columns.label) == nil)
    }

    /// One-column readers: nil without a row; NULL, or a query of more than one column, is an error.
    @Test func oneColumnReadersRefuseNullAndWiderQueries() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        #expect(try db.firstInt64("SELECT 1 WHERE false") == nil)
        #expect(try db.firstInt64("SELECT 7::bigint") == 7)
        #expect(try db.firstString("SELECT 'seven'") == "seven")
        #expect(try db.firstBytes("SELECT '\\x07'::bytea") == [7])
        #expect(try db.firstBool("SELECT true") == true)
        #expect(throws: RowDecodingError.self) { try db.firstInt64("SELECT NULL::bigint") }
        #expect(throws: RowDecodingError(table: nil, column: "n", problem: "is one of 2 columns where one was read",
                                         sql: "SELECT 1 AS n, 2 AS m")) { try db.firstInt64("SELECT 1 AS n, 2 AS m") }
    }

    @Test func preparesEachStatementOncePerParameterShape() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try db.execute("CREATE TABLE t (n integer, s text)")
        for n in 0..<50 { try db.execute("INSERT INTO t VALUES ($1, $2)", [.int64(Int64(n)), .text("row \(n)")]) }
        #expect(db.preparedStatementCount == 1)
        // A NULL where an integer was bound before gets a statement of its own, so the server
        // never reads a binary int8 with a type it inferred for NULL.
        try db.execute("INSERT INTO t VALUES ($1, $2)", [.null, .text("none")])
        try db.execute("INSERT INTO t VALUES ($1, $2)", [.int64(99), .null])
        #expect(db.preparedStatementCount == 2)
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 52)
        #expect(try db.scalarInt64("SELECT count(*) FROM t WHERE n IS NULL") == 1)
    }

    @Test func serverErrorsAreClassifiedAndTheSessionGoesOn() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try db.execute("CREATE TABLE t (id bigint PRIMARY KEY, parent bigint REFERENCES t (id), n integer CHECK (n >= 0))")
        try db.execute("INSERT INTO t (id, n) VALUES ($1, 1)", [.int64(1)])
        func kind(_ body: () throws -> Void) -> PostgresError? {
            do { try body(); return nil } catch { return error as? PostgresError }
        }
        let duplicate = kind { try db.execute("INSERT INTO t (id, n) VALUES ($1, 1)", [.int64(1)]) }
        #expect(duplicate?.kind == .uniqueViolation)
        #expect(duplicate?.sqlState == "23505")
        #expect(duplicate?.constraint == "t_pkey")
        #expect(duplicate?.table == "t")
        #expect(kind { try db.execute("INSERT INTO t (id, parent, n) VALUES (2, $1, 1)", [.int64(42)]) }?.kind == .foreignKeyViolation)
        #expect(kind { try db.execute("INSERT INTO t (id, n) VALUES (3, $1)", [.int64(-1)]) }?.kind == .otherConstraintViolation)
        #expect(kind { try db.execute("SELEC 1") }?.kind == .invalidStatement)
        #expect(kind { try db.execute("SELECT * FROM nowhere", []) }?.kind == .invalidStatement)
        #expect(kind { try db.execute("SELECT $1::uuid", [.text("not-a-uuid")]) }?.kind == .invalidStatement)
        let canceled = kind { try db.execute("SET statement_timeout = 50; SELECT pg_sleep(5)") }
        #expect(canceled?.kind == .queryCanceled)
        try db.execute("SET statement_timeout = 0")
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 1)
    }

    @Test func lostSessionIsUnavailable() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try schema.terminate(backendPID: db.backendPID)
        do {
            _ = try db.scalarInt64("SELECT 1")
            Issue.record("expected the terminated session to fail")
        } catch let error as PostgresError {
            #expect(error.kind == .unavailable)
        }
        #expect(!db.isHealthy)
    }

    @Test func copiesBinaryRowsOfEveryType() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try db.execute("""
            CREATE TABLE c (i bigint, n integer, s smallint, d double precision, b boolean, t text, x bytea,
                            u uuid, at timestamptz)
            """)
        let uuid: [UInt8] = Array(0..<16)
        let copied = try db.copyIn("COPY c FROM STDIN (FORMAT binary)") { writer in
            for k in 0..<20_000 {
                try writer.beginRow(fieldCount: 9)
                try writer.append(int64: Int64(k) * 1_000_000_007)
                try writer.append(int32: Int32(k))
                try writer.append(int16: Int16(k % 100))
                try writer.append(double: Double(k) / 3)
                try writer.append(bool: k % 2 == 0)
                if k % 7 == 0 { try writer.appendNull() } else { try writer.append(text: "row \(k) ✓") }
                try writer.append(bytes: [UInt8(k % 256), 0])
                try writer.append(uuid: uuid)
                try writer.append(microsecondsSince1970: 1_772_960_400_000_000 + Int64(k))
            }
        }
        #expect(copied == 20_000)
        let row = try #require(try db.first("SELECT i, n, s, d, b, t, x, u, at FROM c WHERE n = 12345") { row in
            (try row.int64(at: 0), try row.int(at: 1), try row.int(at: 2), try row.double(at: 3), try row.bool(at: 4),
             try row.string(at: 5), try row.bytes(at: 6), try row.string(at: 7), try row.microsecondsSince1970(at: 8))
        })
        #expect(row.0 == 12_345 * 1_000_000_007 && row.1 == 12_345 && row.2 == 45 && row.3 == 12_345.0 / 3)
        #expect(!row.4 && row.5 == "row 12345 ✓" && row.6 == [57, 0])
        #expect(row.7 == "00010203-0405-0607-0809-0a0b0c0d0e0f" && row.8 == 1_772_960_400_012_345)
        #expect(try db.scalarInt64("SELECT count(*) FROM c WHERE t IS NULL") == 2_858)
    }

    @Test func copiesRowsEncodedAheadWithValuesWrittenInLater() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try db.execute("CREATE TABLE c (n bigint, u uuid, b bytea, d double precision)")
        var rows = PostgresCopyRows()
        var offsets: [Int] = []
        for k in 0..<1_000 {
            try rows.beginRow(fieldCount: 4)
            offsets.append(try rows.append(int64: -1))
            try rows.append(uuidHigh: 0x0001_0203_0405_0607, low: UInt64(k))
            if k % 3 == 0 { try rows.appendNull() } else { try rows.append(bytes: [UInt8(k % 256)]) }
            try rows.append(double: Double(k) / 4)
        }
        #expect(rows.rowCount == 1_000)
        for (k, offset) in offsets.enumerated() { try rows.overwrite(int64: 7_000 + Int64(k), at: offset) }
        #expect(throws: PostgresError.self) { try rows.overwrite(int64: 1, at: rows.byteCount - 4) }
        #expect(try db.copyIn("COPY c FROM STDIN (FORMAT binary)", rows: rows) == 1_000)
        // The same rows again: sending does not consume them.
        #expect(try db.copyIn("COPY c FROM STDIN (FORMAT binary)", rows: rows) == 1_000)
        #expect(try db.scalarInt64("SELECT count(DISTINCT n) FROM c") == 1_000)
        #expect(try db.scalarInt64("SELECT min(n) FROM c") == 7_000)
        let row = try #require(try db.first("SELECT u::text, b, d FROM c WHERE n = 7010") { row in
            (try row.string(at: 0), try row.bytes(at: 1), try row.double(at: 2))
        })
        #expect(row.0 == "00010203-0405-0607-0000-00000000000a" && row.1 == [10] && row.2 == 2.5)
        // An unfinished row is refused before anything is sent.
        var unfinished = PostgresCopyRows()
        try unfinished.beginRow(fieldCount: 4)
        try unfinished.append(int64: 1)
        #expect(throws: PostgresError.self) { try db.copyIn("COPY c FROM STDIN (FORMAT binary)", rows: unfinished) }
        #expect(try db.scalarInt64("SELECT count(*) FROM c") == 2_000)
    }

    @Test func failedCopyStoresNothing() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try db.execute("CREATE TABLE c (n integer)")
        #expect(throws: ExpectedFailure.self) {
            try db.copyIn("COPY c FROM STDIN (FORMAT binary)") { writer in
                try writer.beginRow(fieldCount: 1)
                try writer.append(int32: 1)
                throw ExpectedFailure()
            }
        }
        // An int8 where the column is integer: the server refuses the whole COPY.
        #expect(throws: PostgresError.self) {
            try db.copyIn("COPY c FROM STDIN (FORMAT binary)") { writer in
                try writer.beginRow(fieldCount: 1)
                try writer.append(int32: 1)
                try writer.beginRow(fieldCount: 1)
                try writer.append(int64: 2)
            }
        }
        #expect(throws: PostgresError.self) {
            try db.copyIn("COPY c FROM STDIN (FORMAT binary)") { writer in
                try writer.beginRow(fieldCount: 2)
                try writer.append(int32: 1)
            }
        }
        #expect(try db.scalarInt64("SELECT count(*) FROM c") == 0)
        #expect(throws: PostgresError.self) { try db.copyIn("SELECT 1") { _ in } }
        #expect(try db.copyIn("COPY c FROM STDIN (FORMAT binary)") { writer in
            try writer.beginRow(fieldCount: 1)
            try writer.append(int32: 7)
        } == 1)
    }
}
