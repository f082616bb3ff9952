/// Ordered, named schema migrations.
///
/// Migration N (1-based registration order) is recorded as row `id = N` in `schema_migrations`
/// and `PRAGMA user_version` is set to N in the same transaction, so the version and the schema
/// can never disagree. Never reorder, rename or edit a shipped migration; append new ones.
///
/// Migrations run with foreign key enforcement off, as SQLite's ALTER TABLE guide asks, so one can
/// rebuild a table (create the new shape, copy, drop the old, rename) without the drop cascading
/// or failing on the rows that point at it. `PRAGMA foreign_key_check` then runs inside the
/// migration's transaction: a migration that leaves a dangling reference rolls back.
public struct DatabaseMigrator: Sendable {
    public typealias Migration = @Sendable (Database) throws -> Void

    private var migrations: [(name: String, migrate: Migration)] = []

    public init() {}

    /// Appends a migration. Registration order is the order of application.
    public mutating func register(_ name: String, _ migrate: @escaping Migration) {
        migrations.append((name, migrate))
    }

    public var registeredNames: [String] { migrations.map(\.name) }

    /// The migrations registered before `name` (all of them when there is no such one): the schema
    /// an older build had, so a test can write a database as that build would and carry it forward.
    public func registered(before name: String) -> DatabaseMigrator {
        var older = DatabaseMigrator()
        older.migrations = Array(migrations.prefix { $0.name != name })
        return older
    }

    /// Applies pending migrations in order, each in its own IMMEDIATE transaction, with foreign
    /// keys off (restored afterwards). Throws `MigrationError` if the database was migrated by a
    /// build that knows more migrations than this one, or if recorded names differ from
    /// registered ones. Must not be called inside a transaction (the pragma would not apply).
    public func migrate(_ db: Database) throws {
        try validateRegistrations()
        guard !db.isInTransaction else {
            throw SQLiteError(extendedCode: ResultCode.misuse.rawValue,
                              message: "migrations must start outside a transaction (foreign keys cannot be switched off inside one)")
        }
        let foreignKeysWereOn = try db.pragma("foreign_keys") == "1"
        try db.execute("PRAGMA foreign_keys = OFF")
        defer { if foreignKeysWereOn { try? db.execute("PRAGMA foreign_keys = ON") } }
        try db.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TEXT NOT NULL
            )
            """)
        while true {
            // Re-reading inside the write transaction makes two processes migrating at once safe:
            // the second one sees what the first applied and skips it.
            let finished = try db.transaction(.immediate) { () throws -> Bool in
                let applied = try validatedAppliedMigrations(db)
                guard applied.count < migrations.count else { return true }
                let id = applied.count + 1
                let migration = migrations[applied.count]
                do {
                    try migration.migrate(db)
                    let violations = try db.scalarInt64("SELECT count(*) FROM pragma_foreign_key_check") ?? 0
                    if violations > 0 {
                        throw MigrationError.foreignKeyViolations(name: migration.name, count: Int(violations))
                    }
                } catch let error as MigrationError {
                    throw error
                } catch {
                    throw MigrationError.migrationFailed(name: migration.name, underlying: error)
                }
                try db.execute(
                    "INSERT INTO schema_migrations (id, name, applied_at) VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    [.integer(Int64(id)), .text(migration.name)])
                try db.setUserVersion(id)
                return false
            }
            if finished { return }
        }
    }

    /// Names of the migrations recorded in `db`, in order (empty if none or no table yet).
    public func appliedMigrations(_ db: Database) throws -> [String] {
        let tableExists = try db.scalarInt64(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'") ?? 0
        guard tableExists > 0 else { return [] }
        return try db.map("SELECT name FROM schema_migrations ORDER BY id") { try $0.string(at: 0) }
    }

    /// True if `db` lacks some registered migration.
    public func hasPendingMigrations(_ db: Database) throws -> Bool {
        try appliedMigrations(db).count < migrations.count
    }

    private func validateRegistrations() throws {
        var seen = Set<String>()
        for migration in migrations where !seen.insert(migration.name).inserted {
            throw MigrationError.duplicateName(migration.name)
        }
    }

    private func validatedAppliedMigrations(_ db: Database) throws -> [String] {
        let rows = try db.map("SELECT id, name FROM schema_migrations ORDER BY id") { row in
            (id: try row.int64(at: 0), name: try row.string(at: 1))
        }
        let version = try db.userVersion()
        if rows.count > migrations.count || version > migrations.count {
            throw MigrationError.unknownMigrations(
                applied: rows.map(\.name), userVersion: version, known: migrations.count)
        }
        for (offset, row) in rows.enumerated() {
            guard row.id == Int64(offset + 1) else {
                throw MigrationError.gap(expectedID: offset + 1, foundID: Int(row.id))
            }
            let registered = migrations[offset].name
            guard row.name == registered else {
                throw MigrationError.nameMismatch(id: offset + 1, applied: row.name, registered: registered)
            }
        }
        if version != rows.count {
            throw MigrationError.versionMismatch(userVersion: version, appliedCount: rows.count)
        }
        return rows.map(\.name)
    }
}

public enum MigrationError: Error, Sendable, CustomStringConvertible {
    /// The database was migrated by a newer build: refusing to run an old binary on it.
    case unknownMigrations(applied: [String], userVersion: Int, known: Int)
    /// The migration recorded at `id` is not the one this build registered at that position.
    case nameMismatch(id: Int, applied: String, registered: String)
    /// `schema_migrations` ids are not 1, 2, 3, ...
    case gap(expectedID: Int, foundID: Int)
    /// `PRAGMA user_version` does not match the recorded migrations (edited by hand?).
    case versionMismatch(userVersion: Int, appliedCount: Int)
    case duplicateName(String)
    case foreignKeyViolations(name: String, count: Int)
    case migrationFailed(name: String, underlying: any Error)

    public var description: String {
        switch self {
        case let .unknownMigrations(applied, userVersion, known):
            "database has \(applied.count) applied migrations (user_version \(userVersion)) but this build knows only \(known); refusing to downgrade (last applied: \(applied.last ?? "none"))"
        case let .nameMismatch(id, applied, registered):
            "migration \(id) was applied as '\(applied)' but this build registers '\(registered)' there"
        case let .gap(expectedID, foundID):
            "schema_migrations is not contiguous: expected id \(expectedID), found \(foundID)"
        case let .versionMismatch(userVersion, appliedCount):
            "PRAGMA user_version is \(userVersion) but \(appliedCount) migrations are recorded"
        case let .duplicateName(name):
            "migration name '\(name)' is registered twice"
        case let .foreignKeyViolations(name, count):
            "migration '\(name)' left \(count) foreign key violations"
        case let .migrationFailed(name, underlying):
            "migration '\(name)' failed: \(underlying)"
        }
    }
}
