import HealthdSettings
import Dispatch
import Foundation
import HTTP
import JSON
import Synchronization
import Webhooks
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore
import PostgreSQL
import PostgresStore
import PostgresTestSupport

/// A HealthApplication on a fresh temporary store, driven without sockets: SQLite by default, or
/// PostgreSQL (a schema of its own on `HEALTHD_TEST_POSTGRES_URL`) for the suites that walk the
/// API on both backends.
final class TestServer: Sendable {
    static let adminToken = "test-admin-token-0123456789"
    enum Backend: Sendable { case sqlite, postgres }

    let application: HealthApplication
    let backend: any HealthDataStore
    let directory: String
    private let ownsDirectory: Bool
    let postgresSchema: TestSchema?

    /// The SQLite store, for the tests that look inside it (they run on SQLite only).
    var store: SQLiteHealthStore {
        guard let store = backend as? SQLiteHealthStore else { fatalError("this test reaches into the SQLite store") }
        return store
    }

    /// A server on a fresh directory, or on `directory` (a restart: the caller owns that directory).
    init(directory existing: String? = nil, log: AccessLog? = nil, backend kind: Backend = .sqlite,
         webhookTransport: (any WebhookTransport)? = nil, configure: (inout HealthdConfiguration) -> Void = { _ in }) throws {
        directory = existing ?? NSTemporaryDirectory() + "healthd-test-" + UUID().uuidString
        ownsDirectory = existing == nil
        var configuration = HealthdConfiguration()
        configuration.dataDirectory = directory
        configuration.accessLog = false
        configuration.publicDirectory = directory + "/Public"
        configure(&configuration)
        switch kind {
        case .sqlite:
            postgresSchema = nil
            backend = try SQLiteHealthStore(directory: directory, readers: 2)
        case .postgres:
            let schema = try TestSchema(prefix: "hd_api_")
            postgresSchema = schema
            backend = try PostgresHealthStore(configuration: schema.configuration, maxConnections: 4)
        }
        application = HealthApplication(configuration: configuration, store: backend, adminToken: Self.adminToken, accessLog: log,
                                        webhookTransport: webhookTransport)
    }

    /// Runs one statement with one text parameter straight on the database (`?` for SQLite, `$1`
    /// for PostgreSQL), behind the server's back: as another node would, with its notification lost.
    func executeBehindTheServersBack(sqlite: String, postgres: String, _ parameter: String) throws {
        if let postgresSchema {
            let connection = try postgresSchema.connect()
            defer { connection.close() }
            _ = try connection.execute(postgres, [.text(parameter)])
        } else {
            try store.pool.write { db in try db.execute(sqlite, [.text(parameter)]) }
        }
    }

    /// A webhook delivery of the test's own (its transport, schedule, retry delay) in place of the
    /// server's. The server's is stopped first: one process claims every subscription row, so left
    /// running, a claim that a loaded machine delays past the test's `createWebhook` would run a
    /// second runner on the same row (its own reads of the token, its own attempts).
    func replaceWebhookDelivery(transport: any WebhookTransport, schedule: WebhookRetrySchedule = WebhookRetrySchedule(),
                                storeRetryDelay: DispatchTimeInterval = .seconds(5)) -> WebhookDelivery {
        application.webhooks.stop()
        return WebhookDelivery(data: application.data, transport: transport, schedule: schedule,
                               storeRetryDelay: storeRetryDelay, log: nil)
    }

    deinit {
        application.webhooks.stop()
        backend.close()
        if ownsDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    struct Reply {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
        var json: JSONValue? { try? JSONParser.parse(body) }
        var object: JSONObject? { json?.objectValue }
        var text: String { String(decoding: body, as: UTF8.self) }
        subscript(key: String) -> JSONValue? { object?[key] }
        var code: String? { self["code"]?.stringValue }
    }

    func request(_ method: HTTPMethod, _ target: String, token: String? = nil, json: String? = nil,
                 headers extra: [(String, String)] = [], remote: String = "127.0.0.1") -> Reply {
        var headers = HTTPHeaders()
        headers.add("Host", "test")
        if let token { headers.add("Authorization", "Bearer \(token)") }
        if json != nil { headers.add("Content-Type", "application/json") }
        for (name, value) in extra { headers.set(name, value) }
        let request = HTTPRequest(method: method, target: target, headers: headers, body: Array((json ?? "").utf8))
        let result = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        application.respond(to: request, connection: ConnectionInfo(id: 1, remoteAddress: remote)) { response in
            result.withLock { $0 = response }
            done.signal()
        }
        done.wait()
        guard let response = result.withLock({ $0 }) else { return Reply(status: 0, headers: HTTPHeaders(), body: []) }
        switch response.body {
        case .bytes(let bytes): return Reply(status: response.status.code, headers: response.headers, body: bytes)
        case .stream: return Reply(status: response.status.code, headers: response.headers, body: [])
        case .sizedStream(_, let producer):
            let collector = CollectingBodyStream()
            producer(collector)
            return Reply(status: response.status.code, headers: response.headers, body: collector.waitForBody())
        }
    }

    /// Creates a user (admin) and returns its id.
    func createUser(_ name: String) -> String {
        request(.post, "/v1/users", token: Self.adminToken, json: #"{"name":"\#(name)"}"#)["id"]?.stringValue ?? ""
    }

    /// Creates an authorization and returns its token.
    func token(user: String, app: String, read: [String], share: [String]) -> String {
        let list = { (types: [String]) in "[" + types.map { "\"\($0)\"" }.joined(separator: ",") + "]" }
        let body = #"{"user":"\#(user)","app":"\#(app)","read":\#(list(read)),"share":\#(list(share))}"#
        return request(.post, "/v1/authorizations", token: Self.adminToken, json: body)["token"]?.stringValue ?? ""
    }
}
