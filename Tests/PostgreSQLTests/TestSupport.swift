import Foundation
import Testing
@testable import PostgreSQL

/// The server the PostgreSQL tests run against: `HEALTHD_TEST_POSTGRES_URL` (CI starts a private
/// cluster with Tests/postgres/cluster.sh and sets it). Without it those tests are skipped, and
/// Swift Testing lists them as skipped with the reason.
enum TestServer {
    static let url: String? = {
        guard let url = ProcessInfo.processInfo.environment["HEALTHD_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }()

    static var isAvailable: Bool { url != nil }

    static let skipReason: Comment =
        "HEALTHD_TEST_POSTGRES_URL is not set: start a server with `Tests/postgres/cluster.sh start` and export its URL to run the PostgreSQL tests"
}

/// A schema of its own for one test, so tests can run in parallel on one database without
/// seeing each other's tables; dropped (with everything in it) when the value goes away.
final class TestSchema: @unchecked Sendable {
    let name: String
    let configuration: PostgresConfiguration
    private let admin: PostgresConnection

    init(settings: [String: String] = [:]) throws {
        guard let url = TestServer.url else { throw PostgresError.misuse("no test server") }
        admin = try PostgresConnection(url: url)
        name = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try admin.execute("CREATE SCHEMA \(name)")
        var configuration = try PostgresConfiguration(url: url)
        configuration.settings = settings.merging(["search_path": name]) { first, _ in first }
        configuration.applicationName = name
        self.configuration = configuration
    }

    func connect() throws -> PostgresConnection { try PostgresConnection(configuration: configuration) }

    func pool(maxConnections: Int = 4, acquireTimeoutMilliseconds: Int = 2_000) throws -> PostgresPool {
        var pool = PostgresPool.Configuration(connection: configuration)
        pool.maxConnections = maxConnections
        pool.acquireTimeoutMilliseconds = acquireTimeoutMilliseconds
        return try PostgresPool(configuration: pool)
    }

    /// Ends a server session as a crash or failover would.
    func terminate(backendPID: Int32) throws {
        try admin.execute("SELECT pg_terminate_backend($1::int)", [.int64(Int64(backendPID))])
    }

    /// Server sessions of this test's connections (by application name) that run `LISTEN`.
    func listenerPIDs() throws -> [Int32] {
        try admin.map("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'", [.text(name)]) {
            Int32(try $0.int64(at: 0))
        }
    }

    deinit { try? admin.execute("DROP SCHEMA \(name) CASCADE") }
}

struct ExpectedFailure: Error {}

/// Waits up to `seconds` for `condition`, checking every 10 ms.
func eventually(within seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(10_000)
    }
    return try condition()
}
