import SQLSupport

/// Ordered, named schema migrations for PostgreSQL: the shared runner (`Migrations`) over a
/// `PostgresConnection`. Migrations run in the connection's current schema, a run's all in one
/// transaction with their records (PostgreSQL DDL is transactional).
///
/// Several nodes starting at once are safe: the runner holds an advisory lock (per schema) while
/// it reads and applies, so the second node waits, then finds everything applied.
public typealias PostgresMigrator = Migrations<PostgresConnection>

extension Migrations where Database == PostgresConnection {
    /// Appends a migration that runs `sql` (one or more statements).
    public mutating func register(_ name: String, sql: String) {
        register(name) { try $0.execute(sql) }
    }
}

extension PostgresConnection: MigrationDatabase {
    /// The advisory lock's first key ("hd"); the second is a hash of the schema name.
    static let migrationLockClass: Int64 = 0x6864

    public func duringMigrations<T>(_ body: () throws -> T) throws -> T {
        guard !isInTransaction else {
            throw PostgresError.misuse("migrations must start outside a transaction (the run opens its own)")
        }
        try execute("SELECT pg_advisory_lock($1::int, hashtext(current_schema()))", [.int64(Self.migrationLockClass)])
        defer {
            // Released with the session too; unlocking here lets a waiting node go on at once.
            _ = try? execute("SELECT pg_advisory_unlock($1::int, hashtext(current_schema()))", [.int64(Self.migrationLockClass)])
        }
        return try body()
    }

    public func createMigrationsTable() throws {
        try execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                id integer PRIMARY KEY,
                name text NOT NULL UNIQUE,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
    }

    public func migrationsTableExists() throws -> Bool {
        try firstBool("SELECT to_regclass('schema_migrations') IS NOT NULL") ?? false
    }

    public func migrationTransaction<T>(_ body: () throws -> T) throws -> T {
        try transaction { _ in try body() }
    }

    public func recordedMigrations() throws -> [(id: Int64, name: String)] {
        try map("SELECT \(MigrationColumn.selectList) FROM schema_migrations ORDER BY id") { row in
            (id: try row.int64(MigrationColumn.id), name: try row.string(MigrationColumn.name))
        }
    }

    public func recordedVersion() throws -> Int? { nil }

    public func checkAfterMigration(named name: String) throws {}

    public func recordMigration(id: Int, name: String) throws {
        try execute("INSERT INTO schema_migrations (id, name) VALUES ($1, $2)", [.int64(Int64(id)), .text(name)])
    }
}
