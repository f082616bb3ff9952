/// What a driver's connection gives the shared migration runner: the few steps that differ
/// between databases.
public protocol MigrationDatabase {
    /// Runs the whole migration run around `body`, after checking no transaction is open (the run
    /// opens its own): SQLite switches foreign keys off, PostgreSQL holds an advisory lock so nodes
    /// starting at once migrate one after the other.
    func duringMigrations<T>(_ body: () throws -> T) throws -> T
    /// Creates `schema_migrations (id, name, applied_at)` when missing.
    func createMigrationsTable() throws
    /// True when `schema_migrations` exists.
    func migrationsTableExists() throws -> Bool
    /// The run's transaction; reads inside it see what another process applied before.
    func migrationTransaction<T>(_ body: () throws -> T) throws -> T
    /// The recorded `(id, name)` rows by id.
    func recordedMigrations() throws -> [(id: Int64, name: String)]
    /// A count the database keeps besides the rows (SQLite's `user_version`), or nil.
    func recordedVersion() throws -> Int?
    /// Runs inside a migration's transaction after it (SQLite's `foreign_key_check`); throwing
    /// rolls the migration back.
    func checkAfterMigration(named name: String) throws
    /// Records migration `id` (1-based) as applied, in its transaction.
    func recordMigration(id: Int, name: String) throws
}

/// Ordered, named schema migrations over either driver (`DatabaseMigrator` for SQLite,
/// `PostgresMigrator` for PostgreSQL).
///
/// Migration N (1-based registration order) is recorded as row `id = N` in `schema_migrations`
/// in the same transaction as its changes. A run applies every pending migration in one
/// transaction, so a failed one leaves nothing of the run behind (the database keeps the version
/// it had). The run reads the records inside its transaction, so two processes migrating at once
/// apply each migration once. Never reorder, rename or edit a shipped migration; append new ones.
public struct Migrations<Database: MigrationDatabase>: Sendable {
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
    public func registered(before name: String) -> Migrations {
        var older = Migrations()
        older.migrations = Array(migrations.prefix { $0.name != name })
        return older
    }

    /// Applies pending migrations in order, all in one transaction. Throws `MigrationError`
    /// if the database was migrated by a build that knows more migrations than this one, or if
    /// recorded names differ from registered ones.
    public func migrate(_ db: Database) throws {
        var seen = Set<String>()
        for migration in migrations where !seen.insert(migration.name).inserted {
            throw MigrationError.duplicateName(migration.name)
        }
        try db.duringMigrations {
            try db.createMigrationsTable()
            // Every pending migration in one transaction. Why: a run is all or nothing, so a failed
            // upgrade leaves the version the previous build still opens (one applied step more and
            // it would refuse to downgrade); and a fresh database commits once, not once per
            // migration (about 28 fsyncs, seconds on a slow disk, at every new data directory).
            try db.migrationTransaction {
                var applied = try validatedAppliedCount(db)
                while applied < migrations.count {
                    let migration = migrations[applied]
                    do {
                        try migration.migrate(db)
                        try db.checkAfterMigration(named: migration.name)
                    } catch let error as MigrationError {
                        throw error
                    } catch {
                        throw MigrationError.migrationFailed(name: migration.name, underlying: String(describing: error))
                    }
                    try db.recordMigration(id: applied + 1, name: migration.name)
                    applied += 1
                }
            }
        }
    }

    /// Names of the migrations recorded in `db`, in order (empty if none or no table yet).
    public func appliedMigrations(_ db: Database) throws -> [String] {
        guard try db.migrationsTableExists() else { return [] }
        return try db.recordedMigrations().map(\.name)
    }

    /// True if `db` lacks some registered migration.
    public func hasPendingMigrations(_ db: Database) throws -> Bool {
        try appliedMigrations(db).count < migrations.count
    }

    private func validatedAppliedCount(_ db: Database) throws -> Int {
        let rows = try db.recordedMigrations()
        let version = try db.recordedVersion()
        if rows.count > migrations.count || (version ?? 0) > migrations.count {
            throw MigrationError.unknownMigrations(applied: rows.map(\.name), userVersion: version, known: migrations.count)
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
        if let version, version != rows.count {
            throw MigrationError.versionMismatch(userVersion: version, appliedCount: rows.count)
        }
        return rows.count
    }
}

public enum MigrationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The database was migrated by a newer build: refusing to run an old binary on it.
    case unknownMigrations(applied: [String], userVersion: Int?, known: Int)
    /// The migration recorded at `id` is not the one this build registered at that position.
    case nameMismatch(id: Int, applied: String, registered: String)
    /// `schema_migrations` ids are not 1, 2, 3, ...
    case gap(expectedID: Int, foundID: Int)
    /// SQLite's `PRAGMA user_version` does not match the recorded migrations (edited by hand?).
    case versionMismatch(userVersion: Int, appliedCount: Int)
    case duplicateName(String)
    case foreignKeyViolations(name: String, count: Int)
    case migrationFailed(name: String, underlying: String)

    public var description: String {
        switch self {
        case let .unknownMigrations(applied, userVersion, known):
            "database has \(applied.count) applied migrations\(userVersion.map { " (user_version \($0))" } ?? "") but this build knows only \(known); refusing to downgrade (last applied: \(applied.last ?? "none"))"
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

/// The columns of `schema_migrations` as both drivers read the recorded migrations.
public enum MigrationColumn: Int, TableColumns {
    case id, name

    public static let table = "schema_migrations"
}
