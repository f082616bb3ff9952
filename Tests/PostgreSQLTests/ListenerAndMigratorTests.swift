import Foundation
import Synchronization
import PostgresTestSupport
import Testing
@testable import PostgreSQL
import ClientThreads

@Suite(.enabled(if: TestPostgres.isAvailable, TestPostgres.skipReason))
struct ListenerTests {
    final class Inbox: Sendable {
        let received = Mutex<[PostgresNotification]>([])
        let reconnects = Atomic<Int>(0)
        var payloads: [String] { received.withLock { $0.map(\.payload) } }
    }

    @Test func deliversNotificationsWhenTheTransactionCommits() throws {
        let schema = try TestSchema()
        let inbox = Inbox()
        let channel = "ch_\(schema.name.suffix(12))"
        let listener = try PostgresListener(configuration: schema.configuration, channels: [channel],
                                            onNotification: { notification in inbox.received.withLock { $0.append(notification) } })
        try listener.start()
        defer { listener.stop() }
        let db = try schema.connect()
        try db.transaction { db in
            try PostgresListener.notify(db, channel: channel, payload: "user-1")
            usleep(100_000)
            // Not before COMMIT: a woken reader must find the write.
            #expect(inbox.payloads.isEmpty)
        }
        #expect(eventually { inbox.payloads == ["user-1"] })
        #expect(inbox.received.withLock { $0.first?.senderPID } == db.backendPID)
        #expect(inbox.received.withLock { $0.first?.channel } == channel)
        // A rolled-back transaction notifies nobody.
        #expect(throws: ExpectedFailure.self) {
            try db.transaction { db in
                try PostgresListener.notify(db, channel: channel, payload: "never")
                throw ExpectedFailure()
            }
        }
        try PostgresListener.notify(db, channel: channel, payload: "user-2")
        #expect(eventually { inbox.payloads == ["user-1", "user-2"] })
    }

    @Test func reconnectsAndListensAgainAfterALoss() throws {
        let schema = try TestSchema()
        let inbox = Inbox()
        let listener = try PostgresListener(configuration: schema.configuration, channels: ["healthd_test_a", "healthd_test_b"],
                                            onNotification: { notification in inbox.received.withLock { $0.append(notification) } },
                                            onReconnect: { inbox.reconnects.add(1, ordering: .relaxed) })
        try listener.start()
        defer { listener.stop() }
        let pids = try schema.listenerPIDs()
        #expect(pids.count == 1)
        for pid in pids { try schema.terminate(backendPID: pid) }
        #expect(eventually { inbox.reconnects.load(ordering: .relaxed) == 1 && listener.isConnected })
        let db = try schema.connect()
        try PostgresListener.notify(db, channel: "healthd_test_a", payload: "a")
        try PostgresListener.notify(db, channel: "healthd_test_b", payload: "b")
        #expect(eventually { inbox.payloads == ["a", "b"] })
    }

    @Test func startFailsWhenTheServerIsUnreachable() throws {
        let listener = try PostgresListener(configuration: PostgresConfiguration(url: "postgres://x@127.0.0.1:1/none"),
                                            channels: ["c"], onNotification: { _ in })
        #expect(throws: PostgresError.self) { try listener.start() }
        #expect(throws: PostgresError.self) {
            try PostgresListener(configuration: PostgresConfiguration(url: "postgres://x@127.0.0.1:1/none"),
                                 channels: ["bad channel"], onNotification: { _ in })
        }
    }
}

@Suite(.enabled(if: TestPostgres.isAvailable, TestPostgres.skipReason))
struct PostgresMigratorTests {
    static func migrator(_ count: Int = 3) -> PostgresMigrator {
        var migrator = PostgresMigrator()
        migrator.register("create items", sql: "CREATE TABLE items (id bigint PRIMARY KEY)")
        if count > 1 { migrator.register("add label", sql: "ALTER TABLE items ADD COLUMN label text") }
        if count > 2 { migrator.register("seed") { try $0.execute("INSERT INTO items VALUES ($1, $2)", [.int64(1), .text("first")]) } }
        return migrator
    }

    @Test func appliesInOrderOnceAndRecordsNames() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try Self.migrator(2).migrate(db)
        #expect(try Self.migrator().appliedMigrations(db) == ["create items", "add label"])
        #expect(try Self.migrator().hasPendingMigrations(db))
        try Self.migrator().migrate(db)
        try Self.migrator().migrate(db)
        #expect(try Self.migrator().appliedMigrations(db) == ["create items", "add label", "seed"])
        #expect(try db.scalarInt64("SELECT count(*) FROM items") == 1)
        #expect(Self.migrator().registered(before: "seed").registeredNames == ["create items", "add label"])
    }

    @Test func nodesStartingTogetherApplyEachMigrationOnce() throws {
        let schema = try TestSchema()
        var migrator = Self.migrator()
        // Slow enough that the runs overlap without the advisory lock.
        migrator.register("slow") { try $0.execute("SELECT pg_sleep(0.2)") }
        let all = migrator
        let failures = Mutex<[String]>([])
        onThreads(3) { _ in
            do {
                try all.migrate(try schema.connect())
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let db = try schema.connect()
        #expect(try db.scalarInt64("SELECT count(*) FROM schema_migrations") == 4)
        #expect(try db.scalarInt64("SELECT count(*) FROM items") == 1)
    }

    @Test func failedMigrationLeavesNothingBehind() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try Self.migrator(1).migrate(db)
        var migrator = Self.migrator(2)
        migrator.register("half") { db in
            try db.execute("CREATE TABLE half (id bigint)")
            try db.execute("SELECT * FROM no_such_table")
        }
        #expect(throws: MigrationError.self) { try migrator.migrate(db) }
        // The run is all or nothing: "add label", applied before the broken step, goes too.
        #expect(try migrator.appliedMigrations(db) == ["create items"])
        #expect(try db.first("SELECT to_regclass('half') IS NULL") { try $0.bool(at: 0) } == true)
        #expect(try db.scalarInt64("""
            SELECT count(*) FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name = 'items' AND column_name = 'label'
            """) == 0)
    }

    @Test func refusesAForeignOrNewerHistory() throws {
        let schema = try TestSchema()
        let db = try schema.connect()
        try Self.migrator().migrate(db)
        #expect(throws: MigrationError.unknownMigrations(applied: ["create items", "add label", "seed"], userVersion: nil, known: 2)) {
            try Self.migrator(2).migrate(db)
        }
        var renamed = PostgresMigrator()
        renamed.register("create things", sql: "SELECT 1")
        renamed.register("add label", sql: "SELECT 1")
        renamed.register("seed", sql: "SELECT 1")
        #expect(throws: MigrationError.nameMismatch(id: 1, applied: "create items", registered: "create things")) {
            try renamed.migrate(db)
        }
        var twice = PostgresMigrator()
        twice.register("a", sql: "SELECT 1")
        twice.register("a", sql: "SELECT 1")
        #expect(throws: MigrationError.duplicateName("a")) { try twice.migrate(db) }
    }
}
