import Foundation
import HTTP
import HealthModel
import JSON
import Testing
@testable import HealthAPI
@testable import HealthStore

/// The admin's lists and erasure over HTTP (API.md, "People": admin lists, `DELETE /v1/users/{id}`).
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
