import Foundation
import PostgreSQL

/// The PostgreSQL server the tests use: `HEALTHD_TEST_POSTGRES_URL` (CI starts a private cluster
/// with Tests/postgres/cluster.sh and sets it). Without it the PostgreSQL tests are skipped, and
/// Swift Testing lists them as skipped with the reason. Shared by every test target that talks
/// to PostgreSQL.
public enum TestPostgres {
    public static let url: String? = ProcessInfo.processInfo.environment["HEALTHD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    public static var isAvailable: Bool { url != nil }
}

/// A schema of its own for one test, so tests run in parallel on one database without seeing each
/// other's tables; dropped (with everything in it) when the value goes away. Holds no connection
/// of its own between calls, so many can be alive at once.
public final class TestSchema: Sendable {
    public let name: String
    /// Connections made with it work in the schema (`search_path`); the application name is the
    /// schema's name, so the test's server sessions can be found.
    public let configuration: PostgresConfiguration
    private let url: String

    public init(prefix: String = "test_", settings: [String: String] = [:]) throws {
        guard let url = TestPostgres.url else { throw PostgresError(kind: .misuse, message: "HEALTHD_TEST_POSTGRES_URL is not set") }
        self.url = url
        name = prefix + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var configuration = try PostgresConfiguration(url: url)
        configuration.settings = settings.merging(["search_path": name]) { first, _ in first }
        configuration.applicationName = name
        self.configuration = configuration
        let name = name
        try Self.asAdmin(url) { try $0.execute("CREATE SCHEMA \(name)") }
    }

    private static func asAdmin<T>(_ url: String, _ body: (PostgresConnection) throws -> T) throws -> T {
        let admin = try PostgresConnection(url: url)
        defer { admin.close() }
        return try body(admin)
    }

    public func connect() throws -> PostgresConnection { try PostgresConnection(configuration: configuration) }

    /// A pool: what one healthd node holds.
    public func pool(maxConnections: Int = 4, acquireTimeoutMilliseconds: Int = 2_000) throws -> PostgresPool {
        var pool = PostgresPool.Configuration(connection: configuration)
        pool.maxConnections = maxConnections
        pool.acquireTimeoutMilliseconds = acquireTimeoutMilliseconds
        return try PostgresPool(configuration: pool)
    }

    /// Ends a server session as a crash or failover would.
    public func terminate(backendPID: Int32) throws {
        try Self.asAdmin(url) { _ = try $0.execute("SELECT pg_terminate_backend($1::int)", [.int64(Int64(backendPID))]) }
    }

    /// How many of `pids` are still server sessions.
    public func liveBackends(_ pids: [Int32]) throws -> Int {
        try Self.asAdmin(url) { admin in
            let list = pids.map(String.init).joined(separator: ",")
            return Int(try admin.scalarInt64("SELECT count(*) FROM pg_stat_activity WHERE pid IN (\(list))") ?? 0)
        }
    }

    /// Server sessions of this test's connections (by application name) that run `LISTEN`.
    public func listenerPIDs() throws -> [Int32] {
        try Self.asAdmin(url) { admin in
            try admin.map("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'", [.text(name)]) {
                Int32(try $0.int64(at: 0))
            }
        }
    }

    deinit {
        let name = name
        _ = try? Self.asAdmin(url) { try $0.execute("DROP SCHEMA \(name) CASCADE") }
    }
}

/// Waits up to `seconds` for `condition`, checking every 10 ms. The default is generous: a loaded
/// CI machine can take seconds for what takes milliseconds here, and a wait that holds ends at once.
public func eventually(within seconds: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(10_000)
    }
    return try condition()
}
