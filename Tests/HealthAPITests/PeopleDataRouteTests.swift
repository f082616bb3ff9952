import Dispatch
import Foundation
import HTTP
import HealthModel
import Identity
import JSON
import Synchronization
import Testing
@testable import HealthAPI
@testable import HealthStore

/// The admin's lists and erasure over HTTP (docs/api.md, "People: recent access, own data, erasure": admin lists, `DELETE /v1/users/{id}`).
@Suite struct PeopleDataRouteTests {
    @Test func theAdminListsUsersAndTheirAppsButNeverATokenHash() throws {
        let f = try Fixture()
        let users = f.server.request(.get, "/v1/users", token: TestServer.adminToken)
        #expect(users.status == 200)
        let listed = users["users"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(listed.map { $0["name"]?.stringValue } == ["alice", "bob"])
        #expect(listed.map { $0["id"]?.stringValue } == [f.alice, f.bob])
        #expect(listed.allSatisfy { $0["activated"] == .bool(false) && RFC3339.parse($0["created"]?.stringValue ?? "") != nil })

        let apps = f.server.request(.get, "/v1/users/\(f.alice)/authorizations", token: TestServer.adminToken)
        #expect(apps.status == 200)
        let entries = apps["authorizations"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(entries.map { $0["app"]?.stringValue } == ["phone", "watch"])
        #expect(entries.last?["share"] == .array([.string("stepCount")]))
        #expect(entries.last?["read"] == .array([]))
        #expect(entries.allSatisfy { $0["id"]?.stringValue?.isEmpty == false && $0["lastUsed"] == .null })
        // Never a token, nor anything of one.
        #expect(!apps.text.contains(f.phone) && !apps.text.contains(f.watch) && !apps.text.contains("hdt_"))
        #expect(!apps.text.contains("token"))
        // By name too; an unknown user is a 404; an app token is refused.
        #expect(f.server.request(.get, "/v1/users/alice/authorizations", token: TestServer.adminToken)["authorizations"]
                    == apps["authorizations"])
        #expect(f.server.request(.get, "/v1/users/nobody/authorizations", token: TestServer.adminToken).status == 404)
        #expect(f.server.request(.get, "/v1/users", token: f.phone).status == 403)
        #expect(f.server.request(.get, "/v1/users?limit=3", token: TestServer.adminToken).status == 400)
        // Once the phone's token has called, its lastUsed says when (the watch's stays null).
        #expect(f.server.request(.get, "/v1/samples?type=stepCount", token: f.phone).status == 200)
        PermissionRequestTests.waitForUsage(f.server)
        let used = f.server.request(.get, "/v1/users/\(f.alice)/authorizations", token: TestServer.adminToken)["authorizations"]?
            .arrayValue?.compactMap(\.objectValue) ?? []
        #expect(RFC3339.parse(used.first?["lastUsed"]?.stringValue ?? "") != nil && used.last?["lastUsed"] == .null)
    }

    @Test func erasingAUserEndsTheirStreamsAndLeavesOthersAlone() throws {
        let f = try Fixture()
        #expect(f.save(f.phone, Fixture.steps(10, "2026-03-01T10:00:00Z", "2026-03-01T10:01:00Z")).status == 201)
        #expect(f.save(f.bobApp, Fixture.steps(20, "2026-03-01T10:00:00Z", "2026-03-01T10:01:00Z")).status == 201)
        let pending = PendingReply(f.server, "/v1/changes/stream?types=stepCount", token: f.phone)
        let response = try #require(pending.wait())
        guard case .stream(let producer) = response.body else {
            Issue.record("not a stream")
            return
        }
        let stream = RecordingBodyStream()
        producer(stream)
        #expect(stream.waitUntil { $0.events.count == 1 })

        let erased = f.server.request(.delete, "/v1/users/\(f.alice)", token: TestServer.adminToken)
        #expect(erased.status == 200)
        #expect(erased["user"]?.stringValue == f.alice)
        let counts = erased["erased"]?.objectValue
        #expect(counts?["samples"]?.numberValue ?? 0 >= 1)
        #expect(counts?["authorizations"] == .number(2))
        #expect(counts?["user"] == .number(1))
        // Her stream ends, her tokens are gone, and so is she; Bob keeps everything.
        #expect(stream.waitUntil { $0.isFinished })
        #expect(f.server.request(.get, "/v1/samples?type=stepCount", token: f.phone).status == 401)
        #expect(f.server.request(.delete, "/v1/users/\(f.alice)", token: TestServer.adminToken).status == 404)
        #expect(f.server.request(.get, "/v1/users", token: TestServer.adminToken)["users"]?.arrayValue?.count == 1)
        let bobs = f.server.request(.get, "/v1/samples?type=stepCount", token: f.bobApp)
        #expect(bobs["samples"]?.arrayValue?.count == 1)
        #expect(f.server.request(.delete, "/v1/users/\(f.bob)", token: f.bobApp).status == 403)
    }
}

/// The signed-in person's routes: recent access, their export, deleting an app's data, erasure.
@Suite struct PersonDataRouteTests {
    static let backends = PersonSessionTests.backends
    static let day = "2026-03-01"

    /// Jane signed in (her cookie), with a phone that reads and writes steps and a watch that may
    /// read nothing: each saved one sample.
    struct World {
        let server: TestServer
        let jane: User
        let cookie: String
        let phone: String
        let watch: String

        init(_ backend: TestServer.Backend) throws {
            (server, jane) = try PersonSessionTests.server(backend)
            phone = server.token(user: jane.id, app: "phone", read: ["stepCount", "heartRate"], share: ["stepCount", "heartRate"])
            watch = server.token(user: jane.id, app: "watch", read: [], share: ["stepCount"])
            cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
            #expect(save(phone, 100) == 201 && save(watch, 7) == 201)
        }

        func save(_ token: String, _ value: Double) -> Int {
            let sample = Fixture.steps(value, PersonDataRouteTests.day + "T10:00:00Z", PersonDataRouteTests.day + "T10:01:00Z")
            return server.request(.post, "/v1/samples", token: token, json: #"{"samples":[\#(sample)]}"#).status
        }

        func asPerson(_ method: HTTPMethod, _ target: String, json: String? = nil) -> TestServer.Reply {
            server.request(method, target, json: json, headers: [("Cookie", cookie)] + (json == nil && method != .get ? [("Content-Type", "application/json")] : []))
        }
    }

    @Test("with the access log kept longer than 400 days, the default range (all of it) and any range within it answer")
    func recentAccessOverALongRetention() throws {
        let (server, _) = try PersonSessionTests.server(.sqlite) { $0.accessLogRetentionDays = 730 }
        let cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
        func access(_ query: String) -> TestServer.Reply { server.request(.get, "/v1/me/access" + query, headers: [("Cookie", cookie)]) }
        #expect(access("").status == 200, "\(access("").text)")
        #expect(access("?start=2024-01-02&end=2025-12-31").status == 200)  // 730 days
        #expect(access("?start=2024-01-01&end=2025-12-31").status == 400)  // 731
    }

    @Test("recent access counts the apps' reads and writes per app, type and day", arguments: backends)
    func recentAccess(backend: TestServer.Backend) throws {
        let w = try World(backend)
        #expect(w.server.request(.get, "/v1/samples?type=stepCount", token: w.phone)["samples"]?.arrayValue?.count == 2)
        #expect(w.server.request(.get, "/v1/samples?type=heartRate", token: w.phone).status == 200)
        let reply = w.asPerson(.get, "/v1/me/access")
        #expect(reply.status == 200, "\(reply.text)")
        let entries = reply["access"]?.arrayValue?.compactMap(\.objectValue) ?? []
        func entry(_ app: String, _ type: String) -> JSONObject? { entries.first { $0["app"]?.stringValue == app && $0["type"]?.stringValue == type } }
        let phoneSteps = try #require(entry("phone", "stepCount"))
        #expect(phoneSteps["reads"] == .number(1) && phoneSteps["samplesRead"] == .number(2))
        #expect(phoneSteps["writes"] == .number(1) && phoneSteps["samplesWritten"] == .number(1))
        #expect(entry("phone", "heartRate")?["reads"] == .number(1) && entry("phone", "heartRate")?["samplesRead"] == .number(0))
        #expect(entry("watch", "stepCount")?["writes"] == .number(1) && entry("watch", "stepCount")?["reads"] == .number(0))
        #expect(entries.count == 3)
        // Today, in the asked zone: the day of the latest access there.
        for zone in ["UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Kathmandu"] {
            let zoned = w.asPerson(.get, "/v1/me/access?timeZone=\(zone)")["access"]?.arrayValue?.compactMap(\.objectValue) ?? []
            let stamp = try #require(zoned.first?["lastAccess"]?.stringValue.flatMap { RFC3339.parse($0) })
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = try #require(TimeZone(identifier: zone))
            let local = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(stamp) / 1000))
            let expected = String(format: "%04d-%02d-%02d", local.year ?? 0, local.month ?? 0, local.day ?? 0)
            #expect(zoned.allSatisfy { $0["day"]?.stringValue == expected }, "\(zone)")
        }
        // A range that ends before today holds nothing; bad ranges and zones are 400s.
        #expect(w.asPerson(.get, "/v1/me/access?start=2020-01-01&end=2020-01-31")["access"] == .array([]))
        #expect(w.asPerson(.get, "/v1/me/access?start=2020-02-01&end=2020-01-31").status == 400)
        #expect(w.asPerson(.get, "/v1/me/access?start=2020-01-01&end=2022-01-31").status == 400)
        #expect(w.asPerson(.get, "/v1/me/access?timeZone=Mars/Olympus").status == 400)
        #expect(w.asPerson(.get, "/v1/me/access?start=yesterday").status == 400)
        #expect(w.asPerson(.get, "/v1/me/access?limit=1").status == 400)
        // The person's own reads (the dashboard signed in) are not app accesses; an app's token
        // never reaches these routes.
        #expect(w.asPerson(.get, "/v1/me/samples?type=stepCount")["samples"]?.arrayValue?.count == 2)
        #expect(w.asPerson(.get, "/v1/me/access")["access"] == reply["access"])
        #expect(w.server.request(.get, "/v1/me/access", token: w.phone).status == 401)
        #expect(!reply.text.contains("100") && !reply.text.contains("\"7\""))
    }

    @Test("the person exports all of their data, every app's, with their settings first", arguments: backends)
    func export(backend: TestServer.Backend) throws {
        let w = try World(backend)
        let lines = Self.stream(w.server, "/v1/me/export", cookie: w.cookie).split(separator: "\n").map { String($0) }
        #expect(lines.first?.hasPrefix("{\"healthdBackup\":") == true)
        #expect(lines.first?.contains("\"user\":\"jane\"") == true)
        #expect(lines.count == 3)
        #expect(lines.dropFirst().allSatisfy { $0.contains("stepCount") })
        #expect(lines.contains { $0.contains("\"phone\"") } && lines.contains { $0.contains("\"watch\"") })
        #expect(!lines.joined().contains("hdt_"))
    }

    @Test("deleting what one app saved leaves the others' data, with tombstones", arguments: backends)
    func deleteAppData(backend: TestServer.Backend) throws {
        let w = try World(backend)
        let anchor = w.server.request(.get, "/v1/changes?types=stepCount", token: w.phone)["anchor"]?.stringValue ?? ""
        #expect(w.server.request(.delete, "/v1/me/apps/watch/data", headers: [("Cookie", w.cookie)]).status == 415)
        let reply = w.asPerson(.delete, "/v1/me/apps/watch/data")
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply["deleted"] == .number(1) && reply["app"]?.stringValue == "watch")
        let left = w.server.request(.get, "/v1/samples?type=stepCount", token: w.phone)["samples"]?.arrayValue ?? []
        #expect(left.count == 1 && left.first?.objectValue?["value"] == .number(100))
        #expect(w.server.request(.get, "/v1/changes?types=stepCount&anchor=\(anchor)", token: w.phone)["deleted"]?.arrayValue?.count == 1)
        let sum = w.server.request(.get, "/v1/statistics?type=stepCount&options=cumulativeSum&start=\(Self.day)T00:00:00Z&end=\(Self.day)T23:59:59Z",
                                   token: w.phone)
        #expect(sum.text.contains("100") && !sum.text.contains("107"), "\(sum.text)")
        #expect(w.asPerson(.delete, "/v1/me/apps/nothing/data")["deleted"] == .number(0))
        #expect(w.server.request(.delete, "/v1/me/apps/watch/data", token: w.phone).status == 401)
    }

    @Test("erasing the account takes the password, and then nothing of the person is left", arguments: backends)
    func eraseSelf(backend: TestServer.Backend) throws {
        let w = try World(backend)
        #expect(w.asPerson(.delete, "/v1/me", json: #"{"password":"not the password at all"}"#).status == 401)
        #expect(w.asPerson(.delete, "/v1/me", json: #"{}"#).status == 400)
        #expect(w.server.request(.delete, "/v1/me", token: w.phone, json: #"{"password":"\#(PersonSessionTests.password)"}"#).status == 401)
        #expect(PersonSessionTests.me(w.server, cookie: w.cookie).status == 200)
        let reply = w.asPerson(.delete, "/v1/me", json: #"{"password":"\#(PersonSessionTests.password)"}"#)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply["user"]?.stringValue == w.jane.id)
        let erased = reply["erased"]?.objectValue
        #expect(erased?["samples"] == .number(2) && erased?["sessions"] == .number(1) && erased?["authorizations"] == .number(2))
        #expect(reply.headers.values("Set-Cookie").contains { $0.contains("Max-Age=0") })
        #expect(PersonSessionTests.me(w.server, cookie: w.cookie).status == 401)
        #expect(w.server.request(.get, "/v1/samples?type=stepCount", token: w.phone).status == 401)
        #expect(w.server.request(.get, "/v1/users", token: TestServer.adminToken)["users"] == .array([]))
        #expect(PersonSessionTests.signIn(w.server).status == 401)
    }

    /// The body of a streamed answer, as the person's cookie gets it.
    static func stream(_ server: TestServer, _ target: String, cookie: String) -> String {
        var headers = HTTPHeaders()
        headers.add("Host", "test")
        headers.add("Cookie", cookie)
        let result = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        server.application.respond(to: HTTPRequest(method: .get, target: target, headers: headers, body: []),
                                   connection: ConnectionInfo(id: 1, remoteAddress: "127.0.0.1")) { response in
            result.withLock { $0 = response }
            done.signal()
        }
        done.wait()
        guard let response = result.withLock({ $0 }), case .stream(let producer) = response.body else { return "" }
        let collector = CollectingBodyStream()
        producer(collector)
        return String(decoding: collector.waitForBody(), as: UTF8.self)
    }
}
