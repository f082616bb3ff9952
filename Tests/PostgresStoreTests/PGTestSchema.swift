import Foundation
import PostgreSQL
@testable import PostgresStore
import Testing

/// The server the PostgreSQL store tests run against: `HEALTHD_TEST_POSTGRES_URL` (CI starts a
/// private cluster with Tests/postgres/cluster.sh and sets it). Without it the tests are skipped,
/// and Swift Testing lists them as skipped with the reason.
enum PGTestServer {
    static let url: String? = {
        guard let url = ProcessInfo.processInfo.environment["HEALTHD_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }()

    static var isAvailable: Bool { url != nil }

    static let skipReason: Comment =
        "HEALTHD_TEST_POSTGRES_URL is not set: start a server with `Tests/postgres/cluster.sh start` and export its URL to run the PostgreSQL store tests"
}

/// A schema of its own for one test, migrated to the store's schema, so tests run in parallel on
/// one database without seeing each other's rows; dropped with everything in it at the end.
final class PGTestSchema: @unchecked Sendable {
    let name: String
    let configuration: PostgresConfiguration
    private let admin: PostgresConnection

    init() throws {
        guard let url = PGTestServer.url else { throw PostgresError(kind: .other, message: "no test server") }
        admin = try PostgresConnection(url: url)
        name = "store_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try admin.execute("CREATE SCHEMA \(name)")
        var configuration = try PostgresConfiguration(url: url)
        configuration.settings = ["search_path": name]
        configuration.applicationName = name
        self.configuration = configuration
        var migrator = PostgresMigrator()
        for migration in PostgresSchema.migrations { migrator.register(migration.name, sql: migration.sql) }
        let connection = try PostgresConnection(configuration: configuration)
        try migrator.migrate(connection)
    }

    func connect() throws -> PostgresConnection { try PostgresConnection(configuration: configuration) }

    /// A pool: what one healthd node holds.
    func pool(maxConnections: Int = 4) throws -> PostgresPool {
        var pool = PostgresPool.Configuration(connection: configuration)
        pool.maxConnections = maxConnections
        return try PostgresPool(configuration: pool)
    }

    deinit { try? admin.execute("DROP SCHEMA \(name) CASCADE") }
}
