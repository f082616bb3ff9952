import SQLSupport

/// Ordered, named schema migrations for SQLite: the shared runner (`Migrations`) over a `Database`.
///
/// Besides the `schema_migrations` rows, `PRAGMA user_version` is set to N in migration N's
/// transaction, so the version and the schema can never disagree. A run's migrations share one
/// IMMEDIATE transaction, so a second process migrating at once waits and then skips them.
///
/// Migrations run with foreign key enforcement off, as SQLite's ALTER TABLE guide asks, so one can
/// rebuild a table (create the new shape, copy, drop the old, rename) without the drop cascading
/// or failing on the rows that point at it. `PRAGMA foreign_key_check` then runs after each
/// migration, inside the run's transaction: one that leaves a dangling reference rolls the run back.
public typealias DatabaseMigrator = Migrations<Database>

extension Database: MigrationDatabase {
    /// Foreign keys off for the run (restored afterwards); the pragma has no effect inside a
    /// transaction, so one must not be open.
    public func duringMigrations<T>(_ body: () throws -> T) throws -> T {
        guard !isInTransaction else {
            throw SQLiteError(extendedCode: ResultCode.misuse.rawValue,
                              message: "migrations must start outside a transaction (foreign keys cannot be switched off inside one)")
        }
        let foreignKeysWereOn = try pragma("foreign_keys") == "1"
        try execute("PRAGMA foreign_keys = OFF")
        defer { if foreignKeysWereOn { try? execute("PRAGMA foreign_keys = ON") } }
        return try body()
    }

    public func createMigrationsTable() throws {
        try execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TEXT NOT NULL
            )
            """)
    }

    public func migrationsTableExists() throws -> Bool {
        try (scalarInt64("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'") ?? 0) > 0
    }

    public func migrationTransaction<T>(_ body: () throws -> T) throws -> T {
        try transaction(.immediate, body)
    }

    public func recordedMigrations() throws -> [(id: Int64, name: String)] {
        try map("SELECT \(MigrationColumn.selectList) FROM schema_migrations ORDER BY id") { row in
            (id: try row.int64(MigrationColumn.id), name: try row.string(MigrationColumn.name))
        }
    }

    public func recordedVersion() throws -> Int? { try userVersion() }

    public func checkAfterMigration(named name: String) throws {
        let violations = try scalarInt64("SELECT count(*) FROM pragma_foreign_key_check") ?? 0
        if violations > 0 { throw MigrationError.foreignKeyViolations(name: name, count: Int(violations)) }
    }

    public func recordMigration(id: Int, name: String) throws {
        try execute("INSERT INTO schema_migrations (id, name, applied_at) VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    [.integer(Int64(id)), .text(name)])
        try setUserVersion(id)
    }
}
