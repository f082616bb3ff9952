import Foundation
import HealthModel
import HealthStore
import SQLiteStore
import PostgreSQL
import PostgresStore
import PostgresTestSupport
import Testing

/// A store of either backend for one test, removed afterwards: a SQLite directory, or a PostgreSQL
/// schema of its own (so tests run in parallel on one database without seeing each other).
final class TestStore: @unchecked Sendable {
    enum Backend: String, Sendable { case sqlite, postgres }

    let backend: Backend
    let store: any HealthDataStore
    private let directory: String?
    private let schema: TestSchema?
    /// Further stores on the same data (another node), closed with this one.
    private var others: [PostgresHealthStore] = []

    init(_ backend: Backend) throws {
        self.backend = backend
        switch backend {
        case .sqlite:
            let directory = NSTemporaryDirectory() + "healthd-backend-" + UUID().uuidString
            self.directory = directory
            schema = nil
            store = try SQLiteHealthStore(directory: directory, readers: 2)
        case .postgres:
            let schema = try TestSchema(prefix: "hd_test_")
            self.schema = schema
            directory = nil
            store = try PostgresHealthStore(configuration: schema.configuration, maxConnections: 4)
        }
    }

    /// A second PostgreSQL store on the same schema: another healthd node.
    func secondNode() throws -> PostgresHealthStore {
        let node = try PostgresHealthStore(configuration: try #require(schema).configuration, maxConnections: 4)
        others.append(node)
        return node
    }

    /// Runs SQL on the test's own schema (to inspect or damage rows).
    func postgres<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try #require(schema).connect()
        defer { connection.close() }
        return try body(connection)
    }

    deinit {
        for node in others { node.close() }
        store.close()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }
}

func steps(_ value: Double, start: Int64, seconds: Int64 = 60, uuid: HealthUUID = .random(),
           device: SampleDevice? = nil) -> HealthSample {
    HealthSample(uuid: uuid, type: "stepCount", start: start, end: start + seconds * 1000, content: .quantity(value), device: device)
}

func heartRate(_ value: Double, at start: Int64, uuid: HealthUUID = .random()) -> HealthSample {
    HealthSample(uuid: uuid, type: "heartRate", start: start, end: start, content: .quantity(value))
}
