import PostgreSQL
import PostgresTestSupport
@testable import PostgresStore

extension TestSchema {
    /// A test schema migrated to the store's schema.
    static func migratedToStore() throws -> TestSchema {
        let schema = try TestSchema(prefix: "store_")
        let connection = try schema.connect()
        defer { connection.close() }
        try PostgresHealthStore.migrator().migrate(connection)
        return schema
    }
}
