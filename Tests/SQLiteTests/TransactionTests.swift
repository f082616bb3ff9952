import Testing
@testable import SQLite

@Suite struct TransactionTests {
    private func makeDatabase() throws -> Database {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
        return db
    }

    @Test func commitsWhenBodyReturns() throws {
        let db = try makeDatabase()
        let inserted = try db.transaction(.immediate) { () throws -> Int in
            for n in 1...10 { try db.execute("INSERT INTO t VALUES (?)", [.integer(Int64(n))]) }
            return 10
        }
        #expect(inserted == 10)
        #expect(!db.isInTransaction)
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 10)
    }

    @Test func rollsBackEverythingWhenBodyThrows() throws {
        let db = try makeDatabase()
        #expect(throws: ExpectedFailure.self) {
            try db.transaction(.immediate) {
                for n in 1...10 { try db.execute("INSERT INTO t VALUES (?)", [.integer(Int64(n))]) }
                throw ExpectedFailure()
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 0)
    }

    @Test func constraintFailureMidBatchLeavesNothingHalfWritten() throws {
        let db = try makeDatabase()
        do {
            try db.transaction(.immediate) {
                try db.execute("INSERT INTO t VALUES (1)")
                try db.execute("INSERT INTO t VALUES (2)")
                try db.execute("INSERT INTO t VALUES (1)")
            }
            Issue.record("expected a constraint violation")
        } catch let error as SQLiteError {
            #expect(error.isConstraintViolation)
        }
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 0)
    }

    @Test func savepointUndoesOnlyItsOwnWork() throws {
        let db = try makeDatabase()
        try db.transaction {
            try db.execute("INSERT INTO t VALUES (1)")
            #expect(throws: ExpectedFailure.self) {
                try db.savepoint {
                    try db.execute("INSERT INTO t VALUES (2)")
                    try db.savepoint { try db.execute("INSERT INTO t VALUES (20)") }
                    throw ExpectedFailure()
                }
            }
            #expect(db.isInTransaction)
            try db.savepoint { try db.execute("INSERT INTO t VALUES (3)") }
        }
        #expect(try db.map("SELECT n FROM t ORDER BY n") { try $0.int64(at: 0) } == [1, 3])
    }

    /// A nested `transaction` would have to ignore its kind (an IMMEDIATE inside a DEFERRED one
    /// cannot take the write lock up front), so it is refused; the outer transaction goes on.
    @Test func nestedTransactionIsRefused() throws {
        let db = try makeDatabase()
        try db.transaction(.deferred) {
            try db.execute("INSERT INTO t VALUES (1)")
            do {
                try db.transaction(.immediate) { try db.execute("INSERT INTO t VALUES (2)") }
                Issue.record("a nested transaction must throw")
            } catch let error as SQLiteError {
                #expect(error.code == .misuse)
                #expect(error.message.contains("savepoint"))
            }
            #expect(db.isInTransaction)
        }
        #expect(try db.map("SELECT n FROM t ORDER BY n") { try $0.int64(at: 0) } == [1])
    }

    @Test func savepointOutsideATransactionIsRefused() throws {
        let db = try makeDatabase()
        #expect(throws: SQLiteError.self) { try db.savepoint { try db.execute("INSERT INTO t VALUES (1)") } }
        #expect(!db.isInTransaction)
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 0)
    }

    @Test func commitSucceedsWithCachedSelectLeftMidIteration() throws {
        let db = try makeDatabase()
        try db.execute("INSERT INTO t VALUES (1), (2), (3)")
        try db.transaction(.immediate) {
            let select = try db.cachedStatement("SELECT n FROM t")
            #expect(try select.step())
            try db.execute("INSERT INTO t VALUES (4)")
        }
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 4)
    }

    @Test func lastInsertRowIDAndChanges() throws {
        let db = try makeDatabase()
        try db.execute("INSERT INTO t VALUES (41)")
        #expect(db.lastInsertRowID == 41)
        try db.execute("INSERT INTO t VALUES (50), (51), (52)")
        try db.execute("UPDATE t SET n = n + 100 WHERE n >= 50")
        #expect(db.changes == 3)
    }
}
