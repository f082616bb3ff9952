import Foundation
import Synchronization
import PostgresTestSupport
import Testing
@testable import PostgreSQL
import ClientThreads

/// Transactions, retries and the pool against a real server.
@Suite(.enabled(if: TestPostgres.isAvailable, TestPostgres.skipReason))
struct TransactionTests {
    @Test func commitsOrRollsBackAsAWhole() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try db.execute("CREATE TABLE t (n bigint PRIMARY KEY)")
        let inserted = try db.transaction { db in
            for n in 1...10 { try db.execute("INSERT INTO t VALUES ($1)", [.int64(Int64(n))]) }
            return 10
        }
        #expect(inserted == 10)
        #expect(throws: ExpectedFailure.self) {
            try db.transaction { db in
                try db.execute("INSERT INTO t VALUES ($1)", [.int64(11)])
                throw ExpectedFailure()
            }
        }
        // A unique violation mid-batch leaves nothing of the batch.
        #expect(throws: PostgresError.self) {
            try db.transaction { db in
                try db.execute("INSERT INTO t VALUES ($1)", [.int64(12)])
                try db.execute("INSERT INTO t VALUES ($1)", [.int64(1)])
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 10)
        #expect(throws: PostgresError.self) { try db.transaction { db in try db.transaction { _ in } } }
    }

    @Test func savepointUndoesOnlyItsOwnWork() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try db.execute("CREATE TABLE t (n bigint PRIMARY KEY)")
        #expect(throws: PostgresError.self) { try db.savepoint {} }
        try db.transaction { db in
            try db.execute("INSERT INTO t VALUES ($1)", [.int64(1)])
            // In PostgreSQL an error aborts the whole transaction; a savepoint contains it.
            #expect(throws: PostgresError.self) {
                try db.savepoint { try db.execute("INSERT INTO t VALUES ($1)", [.int64(1)]) }
            }
            try db.execute("INSERT INTO t VALUES ($1)", [.int64(2)])
        }
        #expect(try db.scalarInt64("SELECT count(*) FROM t") == 2)
    }

    @Test func serializationFailureRunsTheBodyAgain() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        let other = try schema.connect()
        try db.execute("CREATE TABLE counter (id integer PRIMARY KEY, n bigint NOT NULL); INSERT INTO counter VALUES (1, 0)")
        var runs = 0
        try db.transaction(.repeatableRead) { db in
            runs += 1
            let n = try db.scalarInt64("SELECT n FROM counter WHERE id = 1") ?? 0
            // Another session commits in between on the first run only: the UPDATE below then
            // fails with 40001 and the whole body runs again on a fresh snapshot.
            if runs == 1 { try other.execute("UPDATE counter SET n = n + 100 WHERE id = 1", []) }
            try db.execute("UPDATE counter SET n = $1 WHERE id = 1", [.int64(n + 1)])
        }
        #expect(runs == 2)
        #expect(try db.scalarInt64("SELECT n FROM counter") == 101)
    }

    @Test func deadlockIsRetried() throws {
        let schema = try TestSchema(settings: ["deadlock_timeout": "50ms"])
        let setup = try schema.connect()
        try setup.execute("CREATE TABLE r (id integer PRIMARY KEY, n bigint NOT NULL); INSERT INTO r VALUES (1, 0), (2, 0)")
        let pool = try schema.pool()
        let bothLocked = DispatchGroup()
        bothLocked.enter()
        bothLocked.enter()
        let runs = Mutex(0)
        let failures = Mutex<[String]>([])
        // Two transactions lock the rows in opposite orders; the first runs wait for each other,
        // so the server breaks the deadlock and the loser runs again.
        onThreads(2) { index in
            let (first, second): (Int64, Int64) = index == 0 ? (1, 2) : (2, 1)
            var firstRun = true
            do {
                try pool.transaction { db in
                    runs.withLock { $0 += 1 }
                    try db.execute("UPDATE r SET n = n + 1 WHERE id = $1", [.int64(first)])
                    if firstRun {
                        firstRun = false
                        bothLocked.leave()
                        bothLocked.wait()
                    }
                    try db.execute("UPDATE r SET n = n + 1 WHERE id = $1", [.int64(second)])
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        // At least the loser's second run. Under a full parallel test run a further run was seen
        // (4 runs, once in a few suites); what must hold is that each transaction committed exactly
        // once, which the sum shows.
        #expect(runs.withLock { $0 } >= 3)
        #expect(try setup.scalarInt64("SELECT sum(n) FROM r") == 4)
    }

    @Test func poolReplacesALostConnection() throws {
        let schema = try TestSchema()
        let pool = try schema.pool(maxConnections: 2)
        let pid = try pool.withConnection { $0.backendPID }
        try schema.terminate(backendPID: pid)
        // The idle connection is dead; the pool notices on use and runs the body on a new one.
        let (newPID, answer) = try pool.withConnection { db in (db.backendPID, try db.scalarInt64("SELECT 42")) }
        #expect(answer == 42)
        #expect(newPID != pid)
        #expect(pool.openConnectionCount == 1)
    }

    /// Every backend terminated at once (the database restarted, or an operator's
    /// pg_terminate_backend): more dead idle connections than the retries allow must not fail the
    /// next caller.
    @Test func poolRecoversWhenEveryIdleConnectionIsDead() throws {
        let schema = try TestSchema()
        let pool = try schema.pool(maxConnections: 6)
        // Six connections checked out at once (nested), then all idle.
        func holding(_ depth: Int) throws -> [Int32] {
            try pool.withConnection { db in [db.backendPID] + (depth > 1 ? try holding(depth - 1) : []) }
        }
        let pids = try holding(6)
        #expect(Set(pids).count == 6 && pool.idleConnectionCount == 6)
        for pid in pids { try schema.terminate(backendPID: pid) }
        // pg_terminate_backend only signals: wait until the backends are gone.
        for _ in 0..<200 where try schema.liveBackends(pids) > 0 { usleep(10_000) }
        #expect(try pool.withConnection { try $0.scalarInt64("SELECT 7") } == 7)
        #expect(pool.openConnectionCount == 1)
    }

    @Test func poolWaitIsBounded() throws {
        let schema = try TestSchema()
        let pool = try schema.pool(maxConnections: 1, acquireTimeoutMilliseconds: 150)
        let started = Date()
        let outcome: Result<Void, PostgresError> = try pool.withConnection { _ in
            // The only connection is taken: a second caller gives up after the timeout.
            do {
                try pool.withConnection { _ in }
                return .success(())
            } catch let error as PostgresError {
                return .failure(error)
            }
        }
        let waited = Date().timeIntervalSince(started)
        guard case .failure(let error) = outcome else { Issue.record("expected a timeout"); return }
        #expect(error.kind == .unavailable)
        #expect(waited >= 0.14 && waited < 30)
        // Once returned, the connection is free again.
        #expect(try pool.withConnection { try $0.scalarInt64("SELECT 1") } == 1)
    }

    @Test func readSeesOneSnapshot() throws {
        let schema = try TestSchema()
        let pool = try schema.pool()
        let writer = try schema.connect()
        try writer.execute("CREATE TABLE t (n bigint)")
        let counts = try pool.read { db in
            let before = try db.scalarInt64("SELECT count(*) FROM t")
            try writer.execute("INSERT INTO t VALUES ($1)", [.int64(1)])
            return (before, try db.scalarInt64("SELECT count(*) FROM t"))
        }
        #expect(counts.0 == 0 && counts.1 == 0)
        #expect(throws: PostgresError.self) { try pool.read { try $0.execute("INSERT INTO t VALUES ($1)", [.int64(2)]) } }
    }
}
