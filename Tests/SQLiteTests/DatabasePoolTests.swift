import Dispatch
import Foundation
import Testing
import Synchronization
@testable import SQLite
import ClientThreads

@Suite struct DatabasePoolTests {
    private static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.register("create_pairs") { db in
            // Two tables written together: a reader that sees different counts saw a torn write.
            try db.execute("""
                CREATE TABLE left_side (n INTEGER PRIMARY KEY);
                CREATE TABLE right_side (n INTEGER PRIMARY KEY);
                CREATE TABLE parents (id INTEGER PRIMARY KEY);
                CREATE TABLE children (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parents(id));
                """)
        }
        return migrator
    }

    private func makePool(_ directory: TemporaryDirectory, readers: Int = 3) throws -> DatabasePool {
        var configuration = DatabasePool.Configuration()
        configuration.readerCount = readers
        configuration.mmapSizeBytes = 16 * 1024 * 1024
        return try DatabasePool(path: directory.path("health.sqlite"), configuration: configuration,
                                migrator: DatabasePoolTests.migrator())
    }

    @Test func pragmasAreInEffectOnWriterAndReaders() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        try pool.writeWithoutTransaction { (db: Database) throws in
            #expect(try db.pragma("journal_mode") == "wal")
            #expect(try db.pragma("synchronous") == "2") // FULL
            #expect(try db.pragma("foreign_keys") == "1")
            #expect(try db.pragma("busy_timeout") == "5000")
            #expect(try db.pragma("temp_store") == "2") // MEMORY
            #expect(try db.pragma("cache_size") == "-32768")
            #expect(try db.pragma("mmap_size") == String(16 * 1024 * 1024))
            #expect(try db.pragma("wal_autocheckpoint") == "4000")
            #expect(try db.userVersion() == 1)
        }
        try pool.read { (db: Database) throws in
            #expect(try db.pragma("journal_mode") == "wal")
            #expect(try db.pragma("busy_timeout") == "5000")
            #expect(throws: SQLiteError.self) { try db.execute("INSERT INTO parents VALUES (1)") }
        }
        try pool.close()
    }

    @Test func committedWriteIsVisibleToABrandNewConnection() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        let committed = try pool.write { db in
            try db.execute("INSERT INTO parents VALUES (7)")
            return db.lastInsertRowID
        }
        #expect(committed == 7)
        // Without closing the pool: a new connection reads the committed data from the WAL.
        let fresh = try Database(path: directory.path("health.sqlite"), mode: .readOnly)
        #expect(try fresh.scalarInt64("SELECT id FROM parents") == 7)
        fresh.close()

        #expect(pool.statistics().walBytes > 0)
        try pool.close()
        // close() checkpointed with TRUNCATE: the data now lives in the main file.
        let stats = pool.statistics()
        #expect(stats.walBytes == 0)
        #expect(stats.databaseBytes > 0)
        let reopened = try Database(path: directory.path("health.sqlite"), mode: .readOnly)
        #expect(try reopened.scalarInt64("SELECT count(*) FROM parents") == 1)
    }

    @Test func constraintViolationThrowsAndPoolStaysUsable() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        do {
            try pool.write { db in
                try db.execute("INSERT INTO parents VALUES (1)")
                try db.execute("INSERT INTO children VALUES (1, 999)")
            }
            Issue.record("expected a foreign key violation")
        } catch let error as SQLiteError {
            #expect(error.code == .constraint)
            #expect(error.extendedCode == 787) // SQLITE_CONSTRAINT_FOREIGNKEY
            #expect(error.sql?.contains("children") == true)
        }
        do {
            try pool.write { db in
                try db.execute("INSERT INTO parents VALUES (1)")
                try db.execute("INSERT INTO parents VALUES (1)")
            }
            Issue.record("expected a unique violation")
        } catch let error as SQLiteError {
            #expect(error.extendedCode == 1555) // SQLITE_CONSTRAINT_PRIMARYKEY
            #expect(error.description.contains("UNIQUE constraint failed"))
        }
        // Neither failed request left rows behind, and both connections still work.
        try pool.write { db in try db.execute("INSERT INTO parents VALUES (2)") }
        #expect(try pool.read { db in try db.map("SELECT id FROM parents") { try $0.int64(at: 0) } } == [2])
        try pool.close()
    }

    @Test func readersSeeConsistentSnapshotsWhileOneWriterWrites() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory, readers: 3)
        let batches = 60
        let readerThreads = 4
        // Iteration 0 writes; the others read until the writer is done.
        let writerDone = Flag()
        let tornReads = Counter()
        let reads = Counter()
        onThreads(readerThreads + 1) { iteration in
            if iteration == 0 {
                defer { writerDone.set() }
                for batch in 0..<batches {
                    do {
                        try pool.write { db in
                            for offset in 0..<50 {
                                let n = Int64(batch * 50 + offset)
                                try db.execute("INSERT INTO left_side VALUES (?)", [.integer(n)])
                                try db.execute("INSERT INTO right_side VALUES (?)", [.integer(n)])
                            }
                        }
                    } catch {
                        Issue.record("write failed: \(error)")
                    }
                }
            } else {
                repeat {
                    do {
                        let (left, right) = try pool.read { db in
                            (try db.scalarInt64("SELECT count(*) FROM left_side") ?? -1,
                             try db.scalarInt64("SELECT count(*) FROM right_side") ?? -2)
                        }
                        if left != right || left % 50 != 0 { tornReads.increment() }
                        reads.increment()
                    } catch {
                        Issue.record("read failed: \(error)")
                        return
                    }
                } while !writerDone.isSet
            }
        }
        #expect(tornReads.value == 0)
        #expect(reads.value >= readerThreads)
        #expect(try pool.read { try $0.scalarInt64("SELECT count(*) FROM right_side") } == Int64(batches * 50))
        try pool.close()
    }

    @Test func aReadKeepsItsSnapshotAcrossAConcurrentCommit() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        try pool.write { db in try db.execute("INSERT INTO parents VALUES (1)") }
        let (before, after) = try pool.read { db -> (Int64?, Int64?) in
            let before = try db.scalarInt64("SELECT count(*) FROM parents")
            // Commit from another thread while this read's snapshot is open.
            let committed = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                do {
                    try pool.write { db in try db.execute("INSERT INTO parents VALUES (2)") }
                } catch {
                    Issue.record("write failed: \(error)")
                }
                committed.signal()
            }
            committed.wait()
            return (before, try db.scalarInt64("SELECT count(*) FROM parents"))
        }
        #expect(before == 1)
        #expect(after == 1)
        #expect(try pool.read { try $0.scalarInt64("SELECT count(*) FROM parents") } == 2)
        try pool.close()
    }

    @Test func readsWaitForAFreeReaderInsteadOfFailing() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory, readers: 1)
        let total = Counter()
        onThreads(6) { _ in
            for _ in 0..<20 {
                do {
                    _ = try pool.read { db in try db.scalarInt64("SELECT 1") }
                    total.increment()
                } catch {
                    Issue.record("read failed: \(error)")
                }
            }
        }
        #expect(total.value == 120)
        try pool.close()
    }

    @Test func closedPoolRefusesWork() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        try pool.close()
        try pool.close()
        #expect(throws: DatabasePoolError.self) { try pool.read { _ in } }
        #expect(throws: DatabasePoolError.self) { try pool.write { _ in } }
        #expect(throws: DatabasePoolError.self) { try pool.barrier { _ in } }
    }

    @Test func barrierRunsWithNoReadsInFlight() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        try pool.write { db in try db.execute("INSERT INTO parents VALUES (1)") }
        let result = try pool.barrier { db in try db.checkpoint(.truncate) }
        #expect(result.walFrames == 0)
        #expect(pool.statistics().walBytes == 0)
        try pool.close()
    }

    @Test func batchInsertWithTypedBindingsInOneTransaction() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        let batchSize = 10_000
        let inserted = try pool.write { db -> Int in
            // The server's hot path: one cached statement, typed binds, execute() per row.
            let changesBefore = db.totalChanges
            let insert = try db.cachedStatement("INSERT INTO left_side (n) VALUES (?)")
            for n in 0..<batchSize {
                try insert.bind(n, at: 1)
                try insert.execute()
            }
            return db.totalChanges - changesBefore
        }
        #expect(inserted == batchSize)
        let (count, sum) = try pool.read { db in
            try db.first("SELECT count(*), sum(n) FROM left_side") { (try $0.int(at: 0), try $0.int(at: 1)) }
        } ?? (0, 0)
        #expect(count == batchSize)
        #expect(sum == batchSize * (batchSize - 1) / 2)
        try pool.close()
    }

    @Test func reopeningAppliesNoMigrationTwice() throws {
        let directory = try TemporaryDirectory()
        try makePool(directory).close()
        let pool = try makePool(directory)
        #expect(try pool.read { try $0.userVersion() } == 1)
        try pool.close()
    }
}

/// Thread-safe counters for the concurrency tests (a lock is enough at this scale).
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    func set() { lock.withLock { flag = true } }
    var isSet: Bool { lock.withLock { flag } }
}

@Suite struct GroupCommitTests {
    private func makePool(_ directory: TemporaryDirectory) throws -> DatabasePool {
        var migrator = DatabaseMigrator()
        migrator.register("create_rows") { db in
            try db.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, owner INTEGER NOT NULL, payload BLOB)")
        }
        return try DatabasePool(path: directory.path("group.sqlite"), migrator: migrator)
    }

    /// Holds the writer inside `write` until `members` grouped writes have queued behind it, so
    /// they are certain to run as one group when it lets go.
    private func runQueuedBehindWriter(_ pool: DatabasePool, members: Int,
                                       _ body: @escaping @Sendable (Int, Database) throws -> Void) throws -> [Result<Void, any Error>] {
        let results = Mutex<[Int: Result<Void, any Error>]>([:])
        let writerHeld = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        // Plain threads, not Dispatch workers: every member must be blocked at once, and a
        // 2-core machine's Dispatch pool adds blocked workers only slowly.
        Thread.detachNewThread {
            try? pool.write { _ in
                writerHeld.signal()
                release.wait()
            }
            finished.signal()
        }
        writerHeld.wait()
        for owner in 0..<members {
            Thread.detachNewThread {
                let result = Result { try pool.groupedWrite { db in try body(owner, db) } }
                results.withLock { $0[owner] = result }
                finished.signal()
            }
            // One at a time, so the members queue (and run) in owner order.
            while pool.queuedGroupMemberCount < owner + 1 { usleep(1_000) }
        }
        release.signal()
        for _ in 0...members { finished.wait() }
        return results.withLock { all in (0..<members).map { all[$0] ?? .failure(ExpectedFailure()) } }
    }

    private func owners(_ pool: DatabasePool) throws -> [Int64] {
        try pool.read { db in try db.map("SELECT DISTINCT owner FROM rows ORDER BY owner") { try $0.int64(at: 0) } }
    }

    @Test func queuedWritesShareOneCommit() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        let before = pool.committedTransactionCount
        let results = try runQueuedBehindWriter(pool, members: 4) { owner, db in
            for _ in 0..<10 { try db.execute("INSERT INTO rows (owner) VALUES (?)", [.integer(Int64(owner))]) }
        }
        for result in results { try result.get() }
        #expect(try owners(pool) == [0, 1, 2, 3])
        // The holding write, then one transaction for all four members.
        #expect(pool.committedTransactionCount - before == 2)
        try pool.close()
    }

    @Test func aFailingMemberUndoesOnlyItsOwnWork() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        let results = try runQueuedBehindWriter(pool, members: 3) { owner, db in
            try db.execute("INSERT INTO rows (owner) VALUES (?)", [.integer(Int64(owner))])
            if owner == 1 { throw ExpectedFailure() }
            try db.execute("INSERT INTO rows (owner) VALUES (?)", [.integer(Int64(owner))])
        }
        #expect(throws: ExpectedFailure.self) { try results[1].get() }
        try results[0].get()
        try results[2].get()
        #expect(try owners(pool) == [0, 2])
        let count = try pool.read { db in try db.scalarInt64("SELECT count(*) FROM rows") }
        #expect(count == 4)
        try pool.close()
    }

    /// SQLITE_FULL may roll back the statement or the whole transaction; either way a member is
    /// acknowledged exactly when all of its rows are stored.
    @Test func aTransactionAbortFailsExactlyTheMembersWhoseWorkWasLost() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        let pageCount = try pool.writeWithoutTransaction { db in try db.scalarInt64("PRAGMA page_count") ?? 0 }
        _ = try pool.writeWithoutTransaction { db in try db.setPragma("max_page_count", String(pageCount + 8)) }
        let results = try runQueuedBehindWriter(pool, members: 4) { owner, db in
            // Member 2 writes far more than the file may grow: SQLITE_FULL.
            let size = owner == 2 ? 200_000 : 100
            try db.execute("INSERT INTO rows (owner, payload) VALUES (?, zeroblob(?))",
                           [.integer(Int64(owner)), .integer(Int64(size))])
        }
        #expect(throws: (any Error).self) { try results[2].get() }
        let stored = Set(try owners(pool))
        for owner in 0..<4 {
            let acknowledged = (try? results[owner].get()) != nil
            #expect(acknowledged == stored.contains(Int64(owner)), "member \(owner)")
        }
        #expect(stored.contains(3), "members after an abort run in a new transaction")
        try pool.close()
    }

    @Test func manyConcurrentGroupedWritesAllLand() throws {
        let directory = try TemporaryDirectory()
        let pool = try makePool(directory)
        let finished = DispatchSemaphore(value: 0)
        for owner in 0..<64 {
            Thread.detachNewThread {
                _ = try? pool.groupedWrite { db in
                    try db.execute("INSERT INTO rows (owner) VALUES (?)", [.integer(Int64(owner))])
                }
                finished.signal()
            }
        }
        for _ in 0..<64 { finished.wait() }
        #expect(try owners(pool).count == 64)
        #expect(pool.committedTransactionCount <= 64 + 1)
        try pool.close()
    }
}

@Suite struct AsyncGroupCommitTests {
    @Test func asynchronousWritesCompleteOnceAfterTheirCommit() throws {
        let directory = try TemporaryDirectory()
        var migrator = DatabaseMigrator()
        migrator.register("create_rows") { db in
            try db.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, owner INTEGER NOT NULL UNIQUE)")
        }
        let pool = try DatabasePool(path: directory.path("async.sqlite"), migrator: migrator)
        let completions = Mutex<[Int: Result<Int64, any Error>]>([:])
        let calls = Atomic(0)
        let done = DispatchGroup()
        for owner in 0..<200 {
            done.enter()
            // Owner 150 collides with owner 50's unique value: only it fails.
            let value = Int64(owner == 150 ? 50 : owner)
            pool.groupedWrite({ db -> Int64 in
                try db.execute("INSERT INTO rows (owner) VALUES (?)", [.integer(value)])
                return db.lastInsertRowID
            }, completion: { result in
                calls.add(1, ordering: .relaxed)
                completions.withLock { $0[owner] = result }
                done.leave()
            })
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(calls.load(ordering: .relaxed) == 200, "each completion exactly once")
        let stored = try pool.read { db in try db.map("SELECT owner FROM rows ORDER BY owner") { try $0.int64(at: 0) } }
        #expect(stored == (0..<200).filter { $0 != 150 }.map(Int64.init))
        completions.withLock { all in
            for owner in 0..<200 {
                let succeeded = (try? all[owner]?.get()) != nil
                #expect(succeeded == (owner != 150), "owner \(owner)")
            }
        }
        #expect(pool.committedTransactionCount < 200, "queued writes shared commits")
        try pool.close()
    }

    /// BEGIN IMMEDIATE fails while another connection (another process, in real life) holds the
    /// write lock past the busy timeout: the group's members fail, the writer is released, and
    /// the next write succeeds once the lock is free.
    @Test func aFailingBeginFailsTheGroupInsteadOfRetryingForever() throws {
        let directory = try TemporaryDirectory()
        var configuration = DatabasePool.Configuration()
        configuration.busyTimeoutMilliseconds = 20
        var migrator = DatabaseMigrator()
        migrator.register("create_rows") { db in try db.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, owner INTEGER)") }
        let path = directory.path("begin.sqlite")
        let pool = try DatabasePool(path: path, configuration: configuration, migrator: migrator)
        let holder = try Database(path: path, mode: .readWrite)
        try holder.execute("BEGIN IMMEDIATE")
        let failures = Mutex<[String]>([])
        let done = DispatchGroup()
        for owner in 0..<3 {
            done.enter()
            pool.groupedWrite({ db in try db.execute("INSERT INTO rows (owner) VALUES (?)", [.integer(Int64(owner))]) },
                              completion: { result in
                                  if case .failure(let error as SQLiteError) = result, error.isBusy {
                                      failures.withLock { $0.append("\(error)") }
                                  }
                                  done.leave()
                              })
        }
        #expect(done.wait(timeout: .now() + 10) == .success, "the members are answered, not retried forever")
        #expect(failures.withLock { $0.count } == 3)
        try holder.execute("ROLLBACK")
        holder.close()
        try pool.groupedWrite { db in try db.execute("INSERT INTO rows (owner) VALUES (10)") }
        #expect(try pool.read { db in try db.scalarInt64("SELECT count(*) FROM rows") } == 1)
        try pool.close()
    }

    @Test func writesQueuedAfterCloseFailInsteadOfHanging() throws {
        let directory = try TemporaryDirectory()
        let pool = try DatabasePool(path: directory.path("closed.sqlite"))
        try pool.close()
        let failed = DispatchSemaphore(value: 0)
        pool.groupedWrite({ db in try db.execute("CREATE TABLE t (x)") }, completion: { result in
            if case .failure = result { failed.signal() }
        })
        #expect(failed.wait(timeout: .now() + 10) == .success)
    }
}
