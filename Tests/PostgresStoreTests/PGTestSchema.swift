import Foundation
import PostgreSQL
@testable import PostgresStore
import Testing

/// A schema of its own for one test, migrated to the store's schema, so tests run in parallel on
/// one database without seeing each other's rows; dropped with everything in it at the end.
final class PGTestSchema: @unchecked Sendable {
    let name: String
    let configuration: PostgresConfiguration
    private let admin: PostgresConnection

    init() throws {
        guard let url = TestPostgres.url else { throw PostgresError(kind: .other, message: "no test server") }
        admin = try PostgresConnection(url: url)
        name = "store_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try admin.execute("CREATE SCHEMA \(name)")
        var configuration = try PostgresConfiguration(url: url)
        configuration.settings = ["search_path": name]
        configuration.applicationName = name
        self.configuration = configuration
        let connection = try PostgresConnection(configuration: configuration)
        defer { connection.close() }
        try PostgresHealthStore.migrator().migrate(connection)
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
