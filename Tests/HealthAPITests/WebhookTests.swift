import Dispatch
import Foundation
@testable import HTTPClient
import JSON
import NetworkPolicy
import HealthModel
import PostgreSQL
import PostgresStore
import PostgresTestSupport
import Synchronization
import Testing
import Webhooks
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore

/// A receiver without sockets: records every request and answers from a script (the last answer repeats).
final class RecordingTransport: WebhookTransport, @unchecked Sendable {
    private let state = Mutex<(requests: [HTTPClientRequest], answers: [Int?])>(([], []))
    private let arrived = DispatchSemaphore(value: 0)

    init(answers: [Int?] = [200]) {
        state.withLock { $0.answers = answers }
    }

    func send(_ request: HTTPClientRequest, completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void) {
        let answer = state.withLock { state -> Int? in
            state.requests.append(request)
            return state.answers.count > 1 ? state.answers.removeFirst() : state.answers.first ?? 200
        }
        arrived.signal()
        // 0: the receiver never answers (the process dies mid-delivery).
        guard answer != 0 else { return }
        DispatchQueue.global().async {
            if let status = answer {
                completion(.success(HTTPClientResponse(status: status, reason: "", headers: [], body: [], bodyLength: 0, reusable: true)))
            } else {
                completion(.failure(.connectionFailed(detail: "refused")))
            }
        }
    }

    var requests: [HTTPClientRequest] { state.withLock { $0.requests } }

    /// Waits for the `count`-th request in all.
    func waitFor(_ count: Int, seconds: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while requests.count < count {
            guard Date() < deadline else { return false }
            _ = arrived.wait(timeout: .now() + .milliseconds(50))
        }
        return true
    }
}

extension HTTPClientRequest {
    func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
    var json: JSONObject? { (try? JSONParser.parse(body))?.objectValue }
}

private struct WebhookFixture {
    let server: TestServer
    let transport: RecordingTransport
    let user: String
    let phone: String
    let watcher: String

    init(answers: [Int?] = [200], directory: String? = nil) throws {
        transport = RecordingTransport(answers: answers)
        server = try TestServer(directory: directory, webhookTransport: transport) { configuration in
            configuration.webhookAllowedHosts = ["receiver.test", "127.0.0.1"]
        }
        user = server.createUser("ada")
        phone = server.token(user: user, app: "phone", read: ["stepCount"], share: ["stepCount", "heartRate"])
        watcher = server.token(user: user, app: "watcher", read: ["stepCount"], share: [])
    }

    func subscribe(_ token: String, url: String = "http://127.0.0.1:8080/hook", types: [String] = ["stepCount"]) -> TestServer.Reply {
        let list = types.map { "\"\($0)\"" }.joined(separator: ",")
        return server.request(.post, "/v1/webhooks", token: token, json: #"{"url":"\#(url)","types":[\#(list)]}"#)
    }

    func save(_ token: String, _ type: String = "stepCount", value: Double = 10, unit: String = "count",
              start: String = "2026-03-01T09:00:00Z") -> TestServer.Reply {
        server.request(.post, "/v1/samples", token: token,
                       json: #"{"samples":[{"type":"\#(type)","value":\#(value),"unit":"\#(unit)","start":"\#(start)","end":"\#(start)"}]}"#)
    }
}

@Suite struct WebhookRouteTests {
    @Test func createShowsTheSecretOnceAndListsWithoutIt() throws {
        let f = try WebhookFixture()
        let created = f.subscribe(f.watcher, url: "http://127.0.0.1:8080/hook")
        #expect(created.status == 201)
        let secret = try #require(created["secret"]?.stringValue)
        #expect(WebhookSecret(text: secret)?.key.count == 32)
        #expect(created["types"]?.arrayValue?.compactMap(\.stringValue) == ["stepCount"])
        let listed = f.server.request(.get, "/v1/webhooks", token: f.watcher)
        #expect(listed.status == 200)
        let first = try #require(listed["webhooks"]?.arrayValue?.first?.objectValue)
        #expect(first["id"]?.stringValue == created["id"]?.stringValue)
        #expect(first["secret"] == nil)
        #expect(first["disabled"] == .null)
        #expect(!listed.text.contains(secret))
    }

    @Test func anotherTokensWebhookDoesNotExistForIt() throws {
        let f = try WebhookFixture()
        let id = try #require(f.subscribe(f.watcher)["id"]?.stringValue)
        #expect(f.server.request(.get, "/v1/webhooks", token: f.phone)["webhooks"]?.arrayValue?.isEmpty == true)
        #expect(f.server.request(.get, "/v1/webhooks/\(id)/deliveries", token: f.phone).status == 404)
        #expect(f.server.request(.delete, "/v1/webhooks/\(id)", token: f.phone).status == 404)
        #expect(f.server.request(.delete, "/v1/webhooks/\(id)", token: f.watcher).status == 204)
        #expect(f.server.request(.get, "/v1/webhooks/\(id)/deliveries", token: f.watcher).status == 404)
    }

    @Test(arguments: [
        ("ftp://example.com/", "scheme"), ("http://user:pw@example.com/", "user name"), ("http://localhost:8080/", "loopback"),
        ("http://10.0.0.1/", "private"), ("http://169.254.169.254/latest", "metadata"), ("http://2130706433/", "loopback"),
        ("http://0x7f.1/", "loopback"), ("http://[::1]:8080/", "loopback"), ("https://example.com/", "forward proxy"),
        ("http://example.com:25/", "Port 25"),
    ])
    func refusedURLsAre400sNamingTheReason(url: String, reason: String) throws {
        let f = try WebhookFixture()
        let reply = f.subscribe(f.watcher, url: url)
        #expect(reply.status == 400)
        #expect(reply.code == "errorInvalidArgument")
        #expect(reply["detail"]?.stringValue?.contains(reason) == true, "\(reply.text)")
    }

    /// The resolver blocks its thread (seconds, for a name made slow on purpose): past the limit of
    /// resolutions at once a creation is a 503 with Retry-After, and a freed slot serves again.
    @Test func slowNameResolutionsAreBoundedNotQueued() throws {
        let f = try WebhookFixture()
        let application = f.server.application
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let routes = WebhookRoutes(data: application.data, delivery: application.webhooks, policy: SSRFPolicy(), resolve: { _, _ in
            started.signal()
            release.wait()
            return .success([.v4(0x0808_0808)])
        })
        let finished = DispatchGroup()
        for index in 0 ..< WebhookRoutes.maximumResolutions {
            DispatchQueue.global().async(group: finished) { _ = try? routes.checkedURL("http://slow\(index).example/") }
        }
        for _ in 0 ..< WebhookRoutes.maximumResolutions { started.wait() }
        do {
            _ = try routes.checkedURL("http://one-more.example/")
            Issue.record("a resolution past the limit was started")
        } catch {
            #expect(error.status == .serviceUnavailable && error.headers["Retry-After"] == "1", "\(error.detail)")
        }
        for _ in 0 ..< WebhookRoutes.maximumResolutions { release.signal() }
        finished.wait()
        release.signal()
        #expect(try routes.checkedURL("http://after.example/").host == "after.example")
    }

    @Test func aNameResolvingToAPrivateAddressIsRefused() throws {
        let f = try WebhookFixture()
        let application = f.server.application
        func routes(_ addresses: [NetworkPolicy.IPAddress]) -> WebhookRoutes {
            WebhookRoutes(data: application.data, delivery: application.webhooks, policy: SSRFPolicy(), resolve: { _, _ in .success(addresses) })
        }
        // One private address among public ones refuses the name, whichever the resolver lists first.
        #expect(throws: APIError.self) { try routes([.v4(0x0808_0808), .v4(0x0a00_0001)]).checkedURL("http://rebind.example.com/") }
        #expect(try routes([.v4(0x0808_0808)]).checkedURL("http://hooks.example.com/x").host == "hooks.example.com")
        // The answer names the class, never the address a name resolved to (no map of the server's network).
        do {
            _ = try routes([.v4(0x0a01_0203)]).checkedURL("http://db.internal.example/")
            Issue.record("a name resolving to 10.1.2.3 was accepted")
        } catch {
            #expect(error.detail.contains("db.internal.example resolves to a private address"), "\(error.detail)")
            #expect(!error.detail.contains("10.1.2.3"), "\(error.detail)")
        }
        // A literal is its own address: saying it (and its class, with its article) helps.
        do {
            _ = try routes([]).checkedURL("http://0.0.0.0/")
            Issue.record("0.0.0.0 was accepted")
        } catch {
            #expect(error.detail.contains("0.0.0.0 is 0.0.0.0, an unspecified address"), "\(error.detail)")
        }
    }

    @Test func typesAreValidated() throws {
        let f = try WebhookFixture()
        #expect(f.subscribe(f.watcher, types: []).status == 400)
        #expect(f.subscribe(f.watcher, types: ["stepcount"]).status == 400)
        #expect(f.subscribe(f.watcher, types: ["biologicalSex"]).status == 400)
        #expect(f.subscribe(f.watcher, types: ["HKQuantityTypeIdentifierStepCount"])["types"]?.arrayValue?.first?.stringValue == "stepCount")
    }

    /// The limit is judged where the row is inserted: requests racing each other cannot pass it.
    @Test func concurrentCreationsNeverPassTheLimit() throws {
        let f = try WebhookFixture()
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 3 * WebhookLimits.perToken) { index in
            let status = f.subscribe(f.watcher, url: "http://127.0.0.1:8080/hook\(index)").status
            statuses.withLock { $0.append(status) }
        }
        let answered = statuses.withLock { $0 }
        #expect(answered.filter { $0 == 201 }.count == WebhookLimits.perToken)
        #expect(answered.filter { $0 == 409 }.count == 2 * WebhookLimits.perToken)
        #expect(f.server.request(.get, "/v1/webhooks", token: f.watcher)["webhooks"]?.arrayValue?.count == WebhookLimits.perToken)
    }

    /// A token revoked between its request's authentication and the insert leaves no webhook behind.
    @Test func aTokenRevokedBeforeTheInsertMakesNoWebhook() throws {
        let f = try WebhookFixture()
        let authorization = try #require(try f.server.backend.authorization(tokenHash: TokenHashing.hash(f.watcher)))
        #expect(f.server.request(.delete, "/v1/authorizations/\(authorization.id)", token: TestServer.adminToken).status == 204)
        let made = try f.server.application.data.app(authorization).createWebhook(
            id: "wh_late", url: "http://127.0.0.1:8080/hook", types: ["stepCount"], secretKey: Array(repeating: 1, count: 32),
            lease: f.server.application.webhooks.lease)
        #expect(made == .failure(.tokenRevoked))
        #expect(try f.server.backend.webhook(id: "wh_late") == nil)
    }
}

@Suite struct WebhookDeliveryTests {
    @Test func aCommitIsDeliveredSignedWithTheFeedsPage() throws {
        let f = try WebhookFixture()
        let created = f.subscribe(f.watcher)
        let secret = try #require(created["secret"]?.stringValue.flatMap(WebhookSecret.init(text:)))
        #expect(f.save(f.phone).status == 201)
        #expect(f.transport.waitFor(1))
        let request = try #require(f.transport.requests.first)
        let id = try #require(request.header("webhook-id"))
        let timestamp = try #require(request.header("webhook-timestamp"))
        let signature = try #require(request.header("webhook-signature"))
        try WebhookVerifier(secret: secret).verify(id: id, timestamp: timestamp, signatureHeader: signature, body: request.body,
                                                   now: Int64(Date().timeIntervalSince1970))
        let page = try #require(request.json)
        #expect(page["added"]?.arrayValue?.count == 1)
        #expect(page["more"]?.boolValue == false)
        // The page's anchor resumes /v1/changes for the same types.
        let anchor = try #require(page["anchor"]?.stringValue)
        #expect(f.server.request(.get, "/v1/changes?types=stepCount&anchor=\(anchor)", token: f.watcher).status == 200)
        var first: JSONObject?
        let deadline = Date().addingTimeInterval(30)
        while first == nil && Date() < deadline {
            let deliveries = f.server.request(.get, "/v1/webhooks/\(created["id"]?.stringValue ?? "")/deliveries", token: f.watcher)
            first = deliveries["deliveries"]?.arrayValue?.first?.objectValue
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(first?["webhookId"]?.stringValue == id)
        #expect(first?["status"]?.numberValue == 200)
        #expect(first?["error"] == .null)
    }

    @Test func onlyChangesAfterCreationAndInCommitOrder() throws {
        let f = try WebhookFixture()
        #expect(f.save(f.phone, start: "2026-03-01T08:00:00Z").status == 201)
        _ = f.subscribe(f.watcher)
        for minute in 10..<15 { #expect(f.save(f.phone, value: Double(minute), start: "2026-03-01T09:\(minute):00Z").status == 201) }
        let deadline = Date().addingTimeInterval(30)
        var values: [Double] = []
        while values.count < 5 && Date() < deadline {
            values = f.transport.requests.flatMap { $0.json?["added"]?.arrayValue ?? [] }.compactMap { $0.objectValue?["value"]?.numberValue }
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(values == [10, 11, 12, 13, 14])
    }

    @Test func aTypeTheTokenMayNotReadNeverAppears() throws {
        let f = try WebhookFixture()
        _ = f.subscribe(f.watcher, types: ["stepCount", "heartRate"])
        #expect(f.save(f.phone, "heartRate", value: 70, unit: "count/min").status == 201)
        #expect(f.save(f.phone).status == 201)
        #expect(f.transport.waitFor(1))
        Thread.sleep(forTimeInterval: 0.2)
        for request in f.transport.requests {
            #expect(!String(decoding: request.body, as: UTF8.self).contains("heartRate"))
        }
    }

    @Test func aFailureIsListedWithItsStatus() throws {
        let f = try WebhookFixture(answers: [500])
        let id = try #require(f.subscribe(f.watcher)["id"]?.stringValue)
        #expect(f.save(f.phone).status == 201)
        #expect(f.transport.waitFor(1))
        let deadline = Date().addingTimeInterval(30)
        var listed: JSONObject?
        while listed == nil && Date() < deadline {
            listed = f.server.request(.get, "/v1/webhooks/\(id)/deliveries", token: f.watcher)["deliveries"]?.arrayValue?.first?.objectValue
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(listed?["status"]?.numberValue == 500)
        #expect(listed?["error"]?.stringValue?.contains("500") == true)
        // The retry waits about 5 s: nothing more is sent at once.
        #expect(f.transport.requests.count == 1)
    }

    @Test func aPageInFlightWhenTheProcessStopsIsSentAgainAsStored() throws {
        let directory = NSTemporaryDirectory() + "healthd-webhook-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var first: HTTPClientRequest?
        do {
            // The receiver never answers: the page is stored, its attempt never finishes.
            let f = try WebhookFixture(answers: [0], directory: directory)
            _ = f.subscribe(f.watcher)
            #expect(f.save(f.phone).status == 201)
            #expect(f.transport.waitFor(1))
            first = f.transport.requests.first
        }
        let transport = RecordingTransport()
        let server = try TestServer(directory: directory, webhookTransport: transport)
        #expect(transport.waitFor(1))
        #expect(transport.requests.first?.header("webhook-id") == first?.header("webhook-id"))
        #expect(transport.requests.first?.body == first?.body)
        _ = server
    }

    @Test func deletingStopsAPendingRetry() throws {
        let f = try WebhookFixture(answers: [nil])
        let id = try #require(f.subscribe(f.watcher)["id"]?.stringValue)
        #expect(f.save(f.phone).status == 201)
        #expect(f.transport.waitFor(1))
        #expect(f.server.request(.delete, "/v1/webhooks/\(id)", token: f.watcher).status == 204)
        #expect(eventually { f.server.application.webhooks.runningCount == 0 })
        #expect(try f.server.backend.webhook(id: id) == nil)
    }

    @Test func revokingTheTokenDeletesItsWebhooksAndStopsThem() throws {
        let f = try WebhookFixture(answers: [nil])
        let id = try #require(f.subscribe(f.watcher)["id"]?.stringValue)
        #expect(f.save(f.phone).status == 201)
        #expect(f.transport.waitFor(1))
        let authorizationID = try #require(try f.server.backend.webhook(id: id)?.authorizationID)
        #expect(f.server.request(.delete, "/v1/authorizations/\(authorizationID)", token: TestServer.adminToken).status == 204)
        #expect(try f.server.backend.webhook(id: id) == nil)
        let deadline = Date().addingTimeInterval(30)
        while f.server.application.webhooks.runningCount > 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(f.server.application.webhooks.runningCount == 0)
    }
}

/// A server whose webhooks this test's own delivery runs (its transport, schedule and retry
/// delay), with a phone that saves steps and a hub subscribed to them.
struct OwnDeliveryFixture {
    let transport: RecordingTransport
    let server: TestServer
    let phone: String
    let hub: String
    let delivery: WebhookDelivery

    init(id: String, answers: [Int?], schedule: WebhookRetrySchedule = WebhookRetrySchedule()) throws {
        transport = RecordingTransport(answers: answers)
        server = try TestServer()
        let user = server.createUser("ada")
        phone = server.token(user: user, app: "phone", read: [], share: ["stepCount"])
        hub = server.token(user: user, app: "hub", read: ["stepCount"], share: [])
        delivery = server.replaceWebhookDelivery(transport: transport, schedule: schedule, storeRetryDelay: .milliseconds(100))
        let hubAuthorization = try #require(try server.backend.authorization(tokenHash: TokenHashing.hash(hub)))
        let subscription = try server.application.data.app(hubAuthorization).createWebhook(
            id: id, url: "http://127.0.0.1:8080/x", types: ["stepCount"], secretKey: Array(repeating: 7, count: 32),
            lease: delivery.lease).get()
        delivery.add(subscription)
    }

    func saveSteps() -> Int {
        server.request(.post, "/v1/samples", token: phone,
                       json: #"{"samples":[{"type":"stepCount","value":5,"unit":"count","start":"2026-03-01T09:00:00Z","end":"2026-03-01T09:00:00Z"}]}"#).status
    }

    /// The webhook listing's `disabled`, as the hub reads it.
    func disabled() -> String? {
        server.request(.get, "/v1/webhooks", token: hub)["webhooks"]?.arrayValue?.first?.objectValue?["disabled"]?.stringValue
    }

    /// A SQLite trigger that fails every update setting `column` (the disk or the database failing).
    func refuseUpdates(of column: String, as trigger: String) throws {
        try server.store.pool.write { db in
            try db.execute("""
                CREATE TRIGGER \(trigger) BEFORE UPDATE OF \(column) ON webhook_subscriptions
                WHEN NEW.\(column) IS NOT NULL BEGIN SELECT RAISE(ABORT, 'injected fault'); END
                """)
        }
    }

    func drop(_ trigger: String) throws {
        try server.store.pool.write { db in try db.execute("DROP TRIGGER \(trigger)") }
    }
}

@Suite struct WebhookRetryTests {
    /// With the schedule shortened (the real one is 5 s doubling to 1 h for 24 hours), a receiver
    /// that never answers 2xx gets the same page again and again, then the webhook is disabled and
    /// its listing says why.
    @Test func retriesRunOutAndTheListingSaysWhy() throws {
        let f = try OwnDeliveryFixture(id: "wh_retry", answers: [503],
                                       schedule: WebhookRetrySchedule(firstDelay: 0.05, maximumDelay: 0.1, retryWindow: 1))
        defer { f.delivery.stop() }
        let transport = f.transport
        #expect(f.saveSteps() == 201)
        #expect(eventually { f.disabled() != nil })
        let disabled = f.disabled()
        #expect(disabled?.contains("503") == true, "\(disabled ?? "not disabled")")
        let requests = transport.requests
        #expect(requests.count >= 2)
        #expect(Set(requests.compactMap { $0.header("webhook-id") }).count == 1)
        #expect(Set(requests.map(\.body)).count == 1)
        let count = requests.count
        Thread.sleep(forTimeInterval: 0.3)
        #expect(transport.requests.count == count, "a disabled webhook sends nothing more")
    }
}

@Suite struct WebhookRestartTests {
    /// One process runs every webhook after a restart, however many there are (it claims them once:
    /// a claim of the first 64 left the rest undelivered for good).
    @Test func everyWebhookRunsAfterARestart() throws {
        let directory = NSTemporaryDirectory() + "healthd-webhook-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let count = 3 * WebhookLimits.perToken + 10
        var phone = ""
        do {
            let server = try TestServer(directory: directory, webhookTransport: RecordingTransport()) {
                $0.webhookAllowedHosts = ["127.0.0.1"]
            }
            let user = server.createUser("ada")
            phone = server.token(user: user, app: "phone", read: [], share: ["stepCount"])
            var token = ""
            for index in 0..<count {
                if index.isMultiple(of: WebhookLimits.perToken) {
                    token = server.token(user: user, app: "hub\(index)", read: ["stepCount"], share: [])
                }
                let made = server.request(.post, "/v1/webhooks", token: token,
                                          json: #"{"url":"http://127.0.0.1:8080/\#(index)","types":["stepCount"]}"#)
                #expect(made.status == 201)
            }
        }
        let transport = RecordingTransport()
        let server = try TestServer(directory: directory, webhookTransport: transport) { $0.webhookAllowedHosts = ["127.0.0.1"] }
        #expect(eventually { server.application.webhooks.runningCount == count })
        #expect(server.request(.post, "/v1/samples", token: phone,
                               json: #"{"samples":[{"type":"stepCount","value":5,"unit":"count","start":"2026-03-01T09:00:00Z","end":"2026-03-01T09:00:00Z"}]}"#).status == 201)
        #expect(transport.waitFor(count))
        #expect(Set(transport.requests.map(\.url.target)).count == count)
    }
}

@Suite struct WebhookStoreFaultTests {
    /// Storing a page fails (the disk, the database): nothing is sent unstored, and once the store
    /// answers again the page is read, stored and sent, with no further commit to wake it.
    @Test func aPageTheStoreCouldNotKeepIsReadAgainLater() throws {
        let f = try OwnDeliveryFixture(id: "wh_fault", answers: [200])
        defer { f.delivery.stop() }
        let transport = f.transport
        try f.refuseUpdates(of: "message_id", as: "refuse_pages")
        #expect(f.saveSteps() == 201)
        Thread.sleep(forTimeInterval: 0.4)
        #expect(transport.requests.isEmpty, "a page is sent only once stored")
        try f.drop("refuse_pages")
        #expect(transport.waitFor(1))
        #expect(transport.requests.first.map { String(decoding: $0.body, as: UTF8.self).contains("\"value\":5") } == true)
    }

    /// The retries run out while the store refuses to keep it: nothing more is sent, and once
    /// the store answers the listing says why (a disabling the store lost was never stored).
    @Test func aDisablingTheStoreCouldNotKeepIsStoredLater() throws {
        let f = try OwnDeliveryFixture(id: "wh_disable", answers: [503],
                                       schedule: WebhookRetrySchedule(firstDelay: 0.05, maximumDelay: 0.1, retryWindow: 0.3))
        defer { f.delivery.stop() }
        let transport = f.transport
        try f.refuseUpdates(of: "disabled_reason", as: "refuse_disabling")
        #expect(f.saveSteps() == 201)
        #expect(transport.waitFor(2))
        Thread.sleep(forTimeInterval: 1)
        #expect(f.disabled() == nil)
        let sent = transport.requests.count
        try f.drop("refuse_disabling")
        #expect(eventually { f.disabled()?.contains("503") == true })
        #expect(transport.requests.count == sent, "a disabled webhook sends nothing more")
    }
}

@Suite struct WebhookAccessTests {
    /// A lease round's read of the token can be older than the runner's own (taken before a
    /// narrowing the runner has applied already): applied as found, it would put the lost read
    /// access back until the next round, and a page read meanwhile would carry what the person
    /// just took away.
    @Test func aStaleReadOfTheTokenNeverWidensAccess() throws {
        let transport = RecordingTransport()
        let server = try TestServer(webhookTransport: transport) { $0.webhookAllowedHosts = ["127.0.0.1"] }
        let user = server.createUser("ada")
        let phone = server.token(user: user, app: "phone", read: [], share: ["stepCount", "heartRate"])
        let hub = server.token(user: user, app: "hub", read: ["stepCount", "heartRate"], share: [])
        let data = server.application.data
        let delivery = server.replaceWebhookDelivery(transport: transport)
        let hubAuthorization = try #require(try server.backend.authorization(tokenHash: TokenHashing.hash(hub)))
        let subscription = try data.app(hubAuthorization).createWebhook(
            id: "wh_stale", url: "http://127.0.0.1:8080/x", types: ["stepCount", "heartRate"], secretKey: Array(repeating: 7, count: 32),
            lease: delivery.lease).get()
        let runner = WebhookRunner(subscription: subscription, delivery: delivery)
        runner.begin()
        runner.queue.sync {}
        let wide = try #require(try data.liveAuthorizations(ids: [hubAuthorization.id])[hubAuthorization.id])
        try server.executeBehindTheServersBack(sqlite: "UPDATE app_grants SET read_types = 'stepCount' WHERE app = ?",
                                               postgres: "UPDATE app_grants SET read_types = 'stepCount' WHERE app = $1", "hub")
        runner.refreshAuthorization()
        runner.compareAuthorization(wide)
        runner.queue.sync {}
        #expect(server.request(.post, "/v1/samples", token: phone,
                               json: #"{"samples":[{"type":"heartRate","value":71,"unit":"count/min","start":"2026-03-01T09:00:00Z","end":"2026-03-01T09:00:00Z"}]}"#).status == 201)
        runner.post(.changesCommitted)
        runner.queue.sync {}
        Thread.sleep(forTimeInterval: 0.2)
        for request in transport.requests {
            #expect(!String(decoding: request.body, as: UTF8.self).contains("heartRate"))
        }
        runner.post(.removed)
        runner.queue.sync {}
    }

    /// Read access narrowed and given back while a page keeps failing: the page read again at the
    /// same start then holds more (the commits since), so it must not carry an id the receiver may
    /// already have applied. One id, one content.
    @Test func aWebhookIDNeverNamesTwoContents() throws {
        let transport = RecordingTransport(answers: [500])
        let server = try TestServer(webhookTransport: transport) { $0.webhookAllowedHosts = ["127.0.0.1"] }
        let user = server.createUser("ada")
        let phone = server.token(user: user, app: "phone", read: [], share: ["stepCount", "heartRate"])
        let hub = server.token(user: user, app: "hub", read: ["stepCount", "heartRate"], share: [])
        #expect(server.request(.post, "/v1/webhooks", token: hub,
                               json: #"{"url":"http://127.0.0.1:8080/x","types":["stepCount","heartRate"]}"#).status == 201)
        func save(_ samples: String) {
            #expect(server.request(.post, "/v1/samples", token: phone, json: #"{"samples":[\#(samples)]}"#).status == 201)
        }
        func readTypes(_ types: String) throws {
            try server.executeBehindTheServersBack(sqlite: "UPDATE app_grants SET read_types = ? WHERE app = 'hub'",
                                                   postgres: "UPDATE app_grants SET read_types = $1 WHERE app = 'hub'", types)
        }
        save(#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-01T09:00:00Z","end":"2026-03-01T09:00:00Z"},"#
             + #"{"type":"heartRate","value":71,"unit":"count/min","start":"2026-03-01T09:00:00Z","end":"2026-03-01T09:00:00Z"}"#)
        #expect(transport.waitFor(1))
        try readTypes("stepCount")
        #expect(transport.waitFor(2))
        save(#"{"type":"stepCount","value":2,"unit":"count","start":"2026-03-01T10:00:00Z","end":"2026-03-01T10:00:00Z"}"#)
        try readTypes("heartRate,stepCount")
        #expect(transport.waitFor(3))
        var contents: [String: [UInt8]] = [:]
        for request in transport.requests {
            let id = try #require(request.header("webhook-id"))
            if let seen = contents[id] {
                #expect(seen == request.body, "\(id) named two bodies: \(String(decoding: seen, as: UTF8.self)) and \(String(decoding: request.body, as: UTF8.self))")
            }
            contents[id] = request.body
        }
    }

    /// A page stored under read access the token has since lost, still pending when the process
    /// stops (or another node takes the webhook over), is not resent as stored: the runner that
    /// resumes it reads it again under the access in force.
    @Test func aStoredPageReadUnderLostAccessIsNotResentAfterARestart() throws {
        let directory = NSTemporaryDirectory() + "healthd-webhook-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hook = #"{"url":"http://127.0.0.1:8080/x","types":["stepCount","heartRate"]}"#
        let heartRate = #"{"samples":[{"type":"heartRate","value":71,"unit":"count/min","start":"2026-03-01T09:00:00Z","end":"2026-03-01T09:00:00Z"}]}"#
        var first: HTTPClientRequest?
        var phone = ""
        do {
            // The receiver never answers: the page stays stored, its attempt unfinished.
            let transport = RecordingTransport(answers: [0])
            let server = try TestServer(directory: directory, webhookTransport: transport) { $0.webhookAllowedHosts = ["127.0.0.1"] }
            let user = server.createUser("ada")
            phone = server.token(user: user, app: "phone", read: [], share: ["stepCount", "heartRate"])
            let hub = server.token(user: user, app: "hub", read: ["stepCount", "heartRate"], share: [])
            #expect(server.request(.post, "/v1/webhooks", token: hub, json: hook).status == 201)
            #expect(server.request(.post, "/v1/samples", token: phone, json: heartRate).status == 201)
            #expect(transport.waitFor(1))
            first = transport.requests.first
            #expect(first.map { String(decoding: $0.body, as: UTF8.self).contains("heartRate") } == true)
            // The person takes heart rate away from the hub while the page is on its way.
            try server.executeBehindTheServersBack(sqlite: "UPDATE app_grants SET read_types = 'stepCount' WHERE app = ?",
                                                   postgres: "UPDATE app_grants SET read_types = 'stepCount' WHERE app = $1", "hub")
        }
        let transport = RecordingTransport()
        let server = try TestServer(directory: directory, webhookTransport: transport) { $0.webhookAllowedHosts = ["127.0.0.1"] }
        defer { server.application.webhooks.stop() }
        #expect(eventually { server.application.webhooks.runningCount == 1 })
        let steps = #"{"samples":[{"type":"stepCount","value":12,"unit":"count","start":"2026-03-01T09:00:00Z","end":"2026-03-01T09:00:00Z"}]}"#
        #expect(server.request(.post, "/v1/samples", token: phone, json: steps).status == 201)
        #expect(transport.waitFor(1))
        #expect(transport.requests.contains { String(decoding: $0.body, as: UTF8.self).contains("stepCount") })
        for request in transport.requests {
            let body = String(decoding: request.body, as: UTF8.self)
            #expect(!body.contains("heartRate"), "\(body)")
            #expect(request.header("webhook-id") != first?.header("webhook-id"))
        }
    }

    /// The token's read access narrowed behind the server's back (as another node would, its
    /// notification lost): a page waiting for its retry, read under the old access, is dropped
    /// unsent and read again; what goes out afterwards follows the new access.
    @Test func narrowedReadAccessIsFollowedWithinASecond() throws {
        let transport = RecordingTransport(answers: [500])
        let server = try TestServer(webhookTransport: transport) { $0.webhookAllowedHosts = ["127.0.0.1"] }
        let user = server.createUser("ada")
        let phone = server.token(user: user, app: "phone", read: [], share: ["stepCount", "heartRate"])
        let hub = server.token(user: user, app: "hub", read: ["stepCount", "heartRate"], share: [])
        let created = server.request(.post, "/v1/webhooks", token: hub,
                                     json: #"{"url":"http://127.0.0.1:8080/x","types":["stepCount","heartRate"]}"#)
        #expect(created.status == 201)
        func save(_ type: String, _ value: Double, _ unit: String) -> Int {
            server.request(.post, "/v1/samples", token: phone,
                           json: #"{"samples":[{"type":"\#(type)","value":\#(value),"unit":"\#(unit)","start":"2026-03-01T09:00:00Z","end":"2026-03-01T09:00:00Z"}]}"#).status
        }
        #expect(save("heartRate", 71, "count/min") == 201)
        #expect(transport.waitFor(1))
        #expect(String(decoding: transport.requests[0].body, as: UTF8.self).contains("heartRate"))
        // The person's switches for the hub (every token of the app follows them), changed without
        // the server's notice: the runner's lease round finds it in the database.
        try server.executeBehindTheServersBack(sqlite: "UPDATE app_grants SET read_types = 'stepCount' WHERE app = ?",
                                               postgres: "UPDATE app_grants SET read_types = 'stepCount' WHERE app = $1",
                                               "hub")
        let id = try #require(created["id"]?.stringValue)
        #expect(eventually { (try? server.backend.webhook(id: id))??.pending == nil })
        // The retry (due 5 s after the failure) is not sent: the page was dropped and read again.
        #expect(save("stepCount", 12, "count") == 201)
        #expect(transport.waitFor(2))
        let later = transport.requests.dropFirst()
        #expect(!later.isEmpty)
        for request in later {
            let body = String(decoding: request.body, as: UTF8.self)
            #expect(!body.contains("heartRate"), "\(body)")
            #expect(request.header("webhook-id") != transport.requests[0].header("webhook-id"))
        }
    }
}

/// U+0000 in a request's text would reach PostgreSQL, whose text cannot hold it: never a 500 on
/// that store. A query value reaches the driver, whose refusal is a 400; a path segment holding it
/// names nothing (the router's 404); a name holding it is a control character (400).
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct NULInTextOnPostgresTests {
    @Test func aNULInAPathOrBodyTextIsA4xx() throws {
        let server = try TestServer(backend: .postgres)
        let user = server.createUser("ada")
        let hub = server.token(user: user, app: "hub", read: ["stepCount"], share: [])
        // A query value goes to the database as it is: the driver's refusal is the 400.
        let query = server.request(.get, "/v1/samples?type=stepCount&source=a%00b", token: hub)
        #expect(query.status == 400, "\(query.text)")
        #expect(query.code == "errorInvalidArgument")
        #expect(query["detail"]?.stringValue?.contains("U+0000") == true, "\(query.text)")
        // Elsewhere the router or a field's own check answers first.
        for reply in [server.request(.get, "/v1/webhooks/wh_%00/deliveries", token: hub),
                      server.request(.delete, "/v1/webhooks/%00", token: hub),
                      server.request(.delete, "/v1/authorizations/%00", token: TestServer.adminToken)] {
            #expect(reply.status == 404 && reply.code == "errorNotFound", "\(reply.text)")
        }
        let name = server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"a\u0000b"}"#)
        #expect(name.status == 400 && name.code == "errorInvalidArgument", "\(name.text)")
        #expect(name["detail"]?.stringValue?.contains("control characters") == true, "\(name.text)")
        let error = APIError(storeError: PostgresError(kind: .nulInText, message: "parameter $1 contains a NUL character"))
        #expect(error.status == .badRequest && error.detail.contains("U+0000"), "\(error.detail)")
    }
}

/// Several nodes on PostgreSQL: a commit another node reported while this node's notification
/// connection was down still reaches this node's webhooks once it is back (an idle webhook would
/// otherwise wait for the user's next commit).
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct WebhookNotificationGapTests {
    @Test func aCommitReportedWhileTheListenerWasAwayIsDelivered() throws {
        let transport = RecordingTransport()
        let server = try TestServer(backend: .postgres, webhookTransport: transport) { $0.webhookAllowedHosts = ["127.0.0.1"] }
        let schema = try #require(server.postgresSchema)
        let user = server.createUser("ada")
        let phone = server.token(user: user, app: "phone", read: [], share: ["stepCount"])
        let hub = server.token(user: user, app: "hub", read: ["stepCount"], share: [])
        #expect(server.request(.post, "/v1/webhooks", token: hub,
                               json: #"{"url":"http://127.0.0.1:8080/x","types":["stepCount"]}"#).status == 201)
        let nodeB = try PostgresHealthStore(configuration: schema.configuration, maxConnections: 2)
        defer { nodeB.close() }
        let phoneOnB = try #require(try nodeB.authorization(tokenHash: TokenHashing.hash(phone)))
        // Both nodes' notification connections go; node B commits before they are back.
        let listeners = try schema.listenerPIDs()
        for pid in listeners { try schema.terminate(backendPID: pid) }
        let deadline = Date().addingTimeInterval(30)
        while try schema.liveBackends(listeners) > 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        let sample = HealthSample(uuid: .random(), type: "stepCount", start: 1_772_355_600_000, end: 1_772_355_660_000, content: .quantity(42))
        _ = try HealthData(nodeB).app(phoneOnB).save([sample])
        #expect(transport.waitFor(1))
        #expect(transport.requests.first.map { String(decoding: $0.body, as: UTF8.self).contains("\"value\":42") } == true)
    }
}
