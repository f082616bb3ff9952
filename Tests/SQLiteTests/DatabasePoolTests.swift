import Dispatch
import Foundation
import Testing
@testable import SQLite

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
        #expect(try pool.read { db in try db.map("SELECT id FROM parents") { $0.int64(at: 0) } } == [2])
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
        DispatchQueue.concurrentPerform(iterations: readerThreads + 1) { iteration in
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
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
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
            try db.first("SELECT count(*), sum(n) FROM left_side") { ($0.int(at: 0), $0.int(at: 1)) }
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
