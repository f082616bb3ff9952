import Testing
@testable import SQLite

@Suite struct MigratorTests {
    /// The app's migrations as successive builds would ship them.
    private static let steps: [(name: String, sql: String)] = [
        ("create_sources", "CREATE TABLE sources (id INTEGER PRIMARY KEY, name TEXT NOT NULL)"),
        ("create_samples", "CREATE TABLE samples (id INTEGER PRIMARY KEY, source_id INTEGER REFERENCES sources(id))"),
        ("index_samples_source", "CREATE INDEX samples_source ON samples(source_id)"),
    ]

    /// A migrator registering the first `count` steps (a build that knows `count` migrations).
    private func makeMigrator(steps count: Int = MigratorTests.steps.count) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for step in MigratorTests.steps.prefix(count) {
            let sql = step.sql
            migrator.register(step.name) { db in try db.execute(sql) }
        }
        return migrator
    }

    @Test func appliesInOrderAndRecordsVersion() throws {
        let db = try Database(path: ":memory:")
        let migrator = makeMigrator()
        #expect(try migrator.hasPendingMigrations(db))
        try migrator.migrate(db)
        #expect(try migrator.appliedMigrations(db) == ["create_sources", "create_samples", "index_samples_source"])
        #expect(try db.userVersion() == 3)
        #expect(try db.map("SELECT id FROM schema_migrations ORDER BY id") { try $0.int64(at: 0) } == [1, 2, 3])
        let appliedAt = try db.first("SELECT applied_at FROM schema_migrations WHERE id = 1") { try $0.string(at: 0) }
        #expect(appliedAt?.hasSuffix("Z") == true)
        #expect(try !migrator.hasPendingMigrations(db))
    }

    @Test func isIdempotentAndAppliesOnlyNewSteps() throws {
        let db = try Database(path: ":memory:")
        try makeMigrator(steps: 2).migrate(db)
        #expect(try db.userVersion() == 2)
        let migrator = makeMigrator()
        try migrator.migrate(db)
        // Re-running would fail with "table already exists" if any step ran twice.
        try migrator.migrate(db)
        #expect(try db.userVersion() == 3)
        #expect(try db.scalarInt64("SELECT count(*) FROM schema_migrations") == 3)
    }

    @Test func refusesDowngrade() throws {
        let db = try Database(path: ":memory:")
        try makeMigrator().migrate(db)
        do {
            try makeMigrator(steps: 2).migrate(db)
            Issue.record("expected downgrade refusal")
        } catch let error as MigrationError {
            guard case .unknownMigrations(let applied, let version, let known) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(applied.count == 3 && version == 3 && known == 2)
            #expect(error.description.contains("refusing to downgrade"))
        }
    }

    @Test func refusesRenamedMigration() throws {
        let db = try Database(path: ":memory:")
        try makeMigrator(steps: 1).migrate(db)
        var renamed = DatabaseMigrator()
        renamed.register("create_source_table") { db in
            try db.execute("CREATE TABLE sources (id INTEGER PRIMARY KEY)")
        }
        do {
            try renamed.migrate(db)
            Issue.record("expected name mismatch")
        } catch let error as MigrationError {
            guard case .nameMismatch(let id, let applied, let registered) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(id == 1 && applied == "create_sources" && registered == "create_source_table")
        }
    }

    @Test func failedMigrationIsRolledBackAndNotRecorded() throws {
        let db = try Database(path: ":memory:")
        try makeMigrator(steps: 1).migrate(db)
        var migrator = makeMigrator(steps: 2)
        migrator.register("broken") { db in
            try db.execute("CREATE TABLE half_done (x)")
            try db.execute("THIS IS NOT SQL")
        }
        #expect(throws: MigrationError.self) { try migrator.migrate(db) }
        // The run is all or nothing: the step before the broken one goes too, and the database
        // keeps the version it had (the build that made it still opens it).
        #expect(try migrator.appliedMigrations(db) == ["create_sources"])
        #expect(try db.userVersion() == 1)
        #expect(try db.scalarInt64("SELECT count(*) FROM sqlite_schema WHERE name IN ('half_done', 'samples')") == 0)
    }

    @Test func rejectsDuplicateNames() throws {
        let db = try Database(path: ":memory:")
        var migrator = DatabaseMigrator()
        migrator.register("same") { _ in }
        migrator.register("same") { _ in }
        #expect(throws: MigrationError.self) { try migrator.migrate(db) }
    }

    /// A database with foreign keys on, every step migrated, and a sample pointing at a source.
    private func migratedWithAReference() throws -> (Database, DatabaseMigrator) {
        let db = try Database(path: ":memory:")
        try db.execute("PRAGMA foreign_keys = ON")
        let migrator = makeMigrator()
        try migrator.migrate(db)
        try db.execute("INSERT INTO sources VALUES (1, 'phone'); INSERT INTO samples VALUES (10, 1)")
        return (db, migrator)
    }

    /// SQLite's recipe for changing a column: build the new table, copy, drop the old one, rename.
    /// With foreign keys on, dropping `sources` would fail (or cascade) because samples point at
    /// it; the migrator runs with them off and checks the references afterwards.
    @Test func migrationCanRebuildAReferencedTable() throws {
        var (db, migrator) = try migratedWithAReference()
        migrator.register("sources_name_not_empty") { db in
            try db.execute("""
                CREATE TABLE sources_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL CHECK (name <> ''));
                INSERT INTO sources_new SELECT id, name FROM sources;
                DROP TABLE sources;
                ALTER TABLE sources_new RENAME TO sources;
                """)
        }
        try migrator.migrate(db)
        #expect(try db.userVersion() == 4)
        #expect(try db.map("SELECT id, source_id FROM samples") { (try $0.int64(at: 0), try $0.int64(at: 1)) }.map { [$0.0, $0.1] } == [[10, 1]])
        #expect(try db.pragma("foreign_keys") == "1", "enforcement comes back on after migrating")
        #expect(throws: SQLiteError.self) { try db.execute("INSERT INTO samples VALUES (11, 99)") }
    }

    @Test func migrationLeavingDanglingReferencesRollsBack() throws {
        var (db, migrator) = try migratedWithAReference()
        migrator.register("drop_sources") { db in try db.execute("DELETE FROM sources") }
        do {
            try migrator.migrate(db)
            Issue.record("a migration that leaves dangling references must fail")
        } catch MigrationError.foreignKeyViolations(let name, let count) {
            #expect(name == "drop_sources" && count == 1)
        }
        #expect(try db.userVersion() == 3)
        #expect(try db.scalarInt64("SELECT count(*) FROM sources") == 1)
        #expect(try db.pragma("foreign_keys") == "1")
    }

    @Test func migratingInsideATransactionIsRefused() throws {
        let db = try Database(path: ":memory:")
        try db.transaction { () throws -> Void in
            #expect(throws: SQLiteError.self) { try makeMigrator().migrate(db) }
        }
        #expect(try db.userVersion() == 0)
    }
}
