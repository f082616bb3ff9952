/// Ordered, named schema migrations for PostgreSQL, like the SQLite layer's `DatabaseMigrator`.
///
/// Migration N (1-based registration order) is recorded as row `id = N` in `schema_migrations`
/// of the connection's current schema, in the same transaction as its changes (PostgreSQL DDL is
/// transactional), so a failed migration leaves nothing behind. Never reorder, rename or edit a
/// shipped migration; append new ones.
///
/// Several nodes starting at once are safe: the runner holds an advisory lock (per schema) while
/// it reads and applies, so the second node waits, then finds everything applied.
public struct PostgresMigrator: Sendable {
    public typealias Migration = @Sendable (PostgresConnection) throws -> Void

    private var migrations: [(name: String, migrate: Migration)] = []

    public init() {}

    /// Appends a migration. Registration order is the order of application.
    public mutating func register(_ name: String, _ migrate: @escaping Migration) {
        migrations.append((name, migrate))
    }

    /// Appends a migration that runs `sql` (one or more statements).
    public mutating func register(_ name: String, sql: String) {
        register(name) { try $0.execute(sql) }
    }

    public var registeredNames: [String] { migrations.map(\.name) }

    /// The migrations registered before `name` (all when there is none): an older build's schema.
    public func registered(before name: String) -> PostgresMigrator {
        var older = PostgresMigrator()
        older.migrations = Array(migrations.prefix { $0.name != name })
        return older
    }

    /// The advisory lock's first key ("hd"); the second is a hash of the schema name.
    static let lockClass: Int64 = 0x6864

    /// Applies pending migrations in order, each in its own transaction. Throws
    /// `PostgresMigrationError` if the database knows migrations this build does not, or if
    /// recorded names differ from registered ones. Must be called outside a transaction.
    public func migrate(_ connection: PostgresConnection) throws {
        try validateRegistrations()
        guard !connection.isInTransaction else {
            throw PostgresError.misuse("migrations must start outside a transaction (each runs in its own)")
        }
        try connection.execute("SELECT pg_advisory_lock($1::int, hashtext(current_schema()))", [.int64(Self.lockClass)])
        defer {
            // Released with the session too; unlocking here lets a waiting node go on at once.
            _ = try? connection.execute("SELECT pg_advisory_unlock($1::int, hashtext(current_schema()))", [.int64(Self.lockClass)])
        }
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                id integer PRIMARY KEY,
                name text NOT NULL UNIQUE,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let applied = try validatedAppliedMigrations(connection)
        for (offset, migration) in migrations.enumerated().dropFirst(applied.count) {
            try connection.transaction { connection in
                do {
                    try migration.migrate(connection)
                } catch {
                    throw PostgresMigrationError.migrationFailed(name: migration.name, underlying: "\(error)")
                }
                try connection.execute("INSERT INTO schema_migrations (id, name) VALUES ($1, $2)",
                                       [.int64(Int64(offset + 1)), .text(migration.name)])
            }
        }
    }

    /// Names of the migrations recorded, in order (empty if none or no table yet).
    public func appliedMigrations(_ connection: PostgresConnection) throws -> [String] {
        let exists = try connection.first("SELECT to_regclass('schema_migrations') IS NOT NULL") { try $0.bool(at: 0) } ?? false
        guard exists else { return [] }
        return try connection.map("SELECT name FROM schema_migrations ORDER BY id") { try $0.string(at: 0) }
    }

    public func hasPendingMigrations(_ connection: PostgresConnection) throws -> Bool {
        try appliedMigrations(connection).count < migrations.count
    }

    private func validateRegistrations() throws {
        var seen = Set<String>()
        for migration in migrations where !seen.insert(migration.name).inserted {
            throw PostgresMigrationError.duplicateName(migration.name)
        }
    }

    private func validatedAppliedMigrations(_ connection: PostgresConnection) throws -> [String] {
        let rows = try connection.map("SELECT id, name FROM schema_migrations ORDER BY id") { row in
            (id: try row.int64(at: 0), name: try row.string(at: 1))
        }
        if rows.count > migrations.count {
            throw PostgresMigrationError.unknownMigrations(applied: rows.map(\.name), known: migrations.count)
        }
        for (offset, row) in rows.enumerated() {
            guard row.id == Int64(offset + 1) else {
                throw PostgresMigrationError.gap(expectedID: offset + 1, foundID: Int(row.id))
            }
            guard row.name == migrations[offset].name else {
                throw PostgresMigrationError.nameMismatch(id: offset + 1, applied: row.name, registered: migrations[offset].name)
            }
        }
        return rows.map(\.name)
    }
}

public enum PostgresMigrationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The database was migrated by a newer build: refusing to run an old binary on it.
    case unknownMigrations(applied: [String], known: Int)
    case nameMismatch(id: Int, applied: String, registered: String)
    case gap(expectedID: Int, foundID: Int)
    case duplicateName(String)
    case migrationFailed(name: String, underlying: String)

    public var description: String {
        switch self {
        case let .unknownMigrations(applied, known):
            "database has \(applied.count) applied migrations but this build knows only \(known); refusing to downgrade (last applied: \(applied.last ?? "none"))"
        case let .nameMismatch(id, applied, registered):
            "migration \(id) was applied as '\(applied)' but this build registers '\(registered)' there"
        case let .gap(expectedID, foundID):
            "schema_migrations is not contiguous: expected id \(expectedID), found \(foundID)"
        case let .duplicateName(name):
            "migration name '\(name)' is registered twice"
        case let .migrationFailed(name, underlying):
            "migration '\(name)' failed: \(underlying)"
        }
    }
}
