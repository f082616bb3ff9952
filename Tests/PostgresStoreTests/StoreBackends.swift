import Foundation
import HealthModel
import HealthStore
import PostgreSQL
import PostgresStore
import Testing

/// The PostgreSQL server the backend tests use: `HEALTHD_TEST_POSTGRES_URL` (CI starts a private
/// cluster and sets it). Without it the PostgreSQL suites are skipped, and say so.
enum TestPostgres {
    static let url = ProcessInfo.processInfo.environment["HEALTHD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static var isAvailable: Bool { url != nil }
}

/// A store of either backend for one test, removed afterwards: a SQLite directory, or a PostgreSQL
/// schema of its own (so tests run in parallel on one database without seeing each other).
final class TestStore: @unchecked Sendable {
    enum Backend: String, Sendable { case sqlite, postgres }

    let backend: Backend
    let store: any HealthDataStore
    private let directory: String?
    private let schema: String?
    /// Further stores on the same data (another node), closed with this one.
    private var others: [PostgresHealthStore] = []

    init(_ backend: Backend) throws {
        self.backend = backend
        switch backend {
        case .sqlite:
            let directory = NSTemporaryDirectory() + "healthd-backend-" + UUID().uuidString
            self.directory = directory
            schema = nil
            store = try HealthStore(directory: directory, readers: 2)
        case .postgres:
            let url = try #require(TestPostgres.url)
            let schema = "hd_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            let admin = try PostgresConnection(url: url)
            try admin.execute("CREATE SCHEMA \(schema)")
            admin.close()
            self.schema = schema
            directory = nil
            store = try PostgresHealthStore(configuration: Self.configuration(url: url, schema: schema), maxConnections: 4)
        }
    }

    private static func configuration(url: String, schema: String) throws -> PostgresConfiguration {
        var configuration = try PostgresConfiguration(url: url)
        configuration.settings["search_path"] = schema
        return configuration
    }

    /// A second PostgreSQL store on the same schema: another healthd node.
    func secondNode() throws -> PostgresHealthStore {
        let url = try #require(TestPostgres.url)
        let schema = try #require(schema)
        let node = try PostgresHealthStore(configuration: Self.configuration(url: url, schema: schema), maxConnections: 4)
        others.append(node)
        return node
    }

    /// Runs SQL on the test's own schema (to inspect or damage rows).
    func postgres<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try PostgresConnection(configuration: Self.configuration(url: try #require(TestPostgres.url),
                                                                                   schema: try #require(schema)))
        defer { connection.close() }
        return try body(connection)
    }

    deinit {
        for node in others { node.close() }
        store.close()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
        if let schema, let url = TestPostgres.url, let admin = try? PostgresConnection(url: url) {
            try? admin.execute("DROP SCHEMA \(schema) CASCADE")
            admin.close()
        }
    }
}

func steps(_ value: Double, start: Int64, seconds: Int64 = 60, uuid: HealthUUID = .random(),
           device: SampleDevice? = nil) -> HealthSample {
    HealthSample(uuid: uuid, type: "stepCount", start: start, end: start + seconds * 1000, content: .quantity(value), device: device)
}

func heartRate(_ value: Double, at start: Int64, uuid: HealthUUID = .random()) -> HealthSample {
    HealthSample(uuid: uuid, type: "heartRate", start: start, end: start, content: .quantity(value))
}

/// Waits up to `seconds` for `condition`, checking every 10 ms.
func eventually(within seconds: Double = 3, _ condition: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
