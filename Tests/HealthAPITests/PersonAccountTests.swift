import Foundation
import Testing
@testable import HTTP
@testable import HealthAPI
@testable import HealthStore
import HealthModel
import Identity
import PostgresTestSupport

/// Invitations, activation and password changes (docs/api.md, People), on both stores.
@Suite struct PersonAccountTests {
    static let backends = PersonSessionTests.backends
    static let password = "a sturdy walk in the rain"

    static func activate(_ server: TestServer, code: String, password: String = password) -> TestServer.Reply {
        server.request(.post, "/v1/people/activate",
                       json: #"{"code":\#(PersonSessionTests.jsonString(code)),"password":\#(PersonSessionTests.jsonString(password))}"#)
    }

    static func invitationCode(_ reply: TestServer.Reply) -> String? {
        (reply["invitation"]?.objectValue ?? reply.object)?["code"]?.stringValue
    }

    @Test("POST /v1/users answers a 7-day invitation; activation sets the password once, and a replay is refused",
          arguments: backends)
    func inviteActivateSignIn(backend: TestServer.Backend) throws {
        let server = try TestServer(backend: backend)
        let created = server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"jane"}"#)
        #expect(created.status == 201)
        let invitation = try #require(created["invitation"]?.objectValue)
        let code = try #require(invitation["code"]?.stringValue)
        #expect(InvitationCode(presented: code) != nil)
        let expires = try #require(invitation["expires"]?.stringValue.flatMap { RFC3339.parse($0) })
        let week = Int64(InvitationCode.lifetime * 1000)
        #expect(abs(expires - StoreClock.nowMilliseconds() - week) < 60_000)
        // Not active yet: signing in fails like a wrong password.
        #expect(PersonSessionTests.signIn(server, password: Self.password).status == 401)
        // The policy speaks first, and a refused password does not use the invitation up.
        let weak = Self.activate(server, code: code, password: "password123")
        #expect(weak.status == 400)
        #expect(weak.text.contains("commonly used"))
        let named = Self.activate(server, code: code, password: "jane-is-my-name")
        #expect(named.status == 400)
        let activated = Self.activate(server, code: code)
        #expect(activated.status == 200)
        #expect(activated["name"]?.stringValue == "jane")
        #expect(activated["id"]?.stringValue == created["id"]?.stringValue)
        let replay = Self.activate(server, code: code, password: "another good password")
        #expect(replay.status == 401)
        let unknown = Self.activate(server, code: InvitationCode.random().value)
        let malformed = Self.activate(server, code: "not-a-code")
        #expect(unknown.body == replay.body && malformed.body == replay.body)
        #expect(PersonSessionTests.signIn(server, password: Self.password).status == 204)
        #expect(PersonSessionTests.signIn(server, password: "another good password").status == 401)
        // Only the code's SHA-256 was stored, and it is gone now.
        #expect(try HealthData(server.backend).people.invitation(codeHash: InvitationCode(presented: code)!.hash,
                                                                 nowMs: StoreClock.nowMilliseconds()) == nil)
    }

    @Test("a name with control or invisible formatting characters, or spaces at its ends, is a 400 and makes no account")
    func accountNamesAreOneLineOfVisibleText() throws {
        let server = try TestServer(backend: .sqlite)
        for name in [#"ma\u0007ya"#, #"\u001b[2Jmaya"#, #"\u202eayam"#, #"ma\u200bya"#, " maya", "maya ", ""] {
            let refused = server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"\#(name)"}"#)
            #expect(refused.status == 400 && refused.code == "errorInvalidArgument", "\(name): \(refused.status)")
        }
        #expect(server.request(.get, "/v1/users", token: TestServer.adminToken)["users"]?.arrayValue?.isEmpty == true)
        #expect(server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"José Núñez"}"#).status == 201)
    }

    @Test("a new invitation voids the old; activating it resets the password and ends every session", arguments: backends)
    func reinviteResetsThePassword(backend: TestServer.Backend) throws {
        let server = try TestServer(backend: backend)
        let created = server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"jane"}"#)
        let id = try #require(created["id"]?.stringValue)
        let first = try #require(Self.invitationCode(created))
        #expect(Self.activate(server, code: first).status == 200)
        let cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server, password: Self.password)))
        let again = server.request(.post, "/v1/users/\(id)/invitation", token: TestServer.adminToken)
        #expect(again.status == 201)
        let second = try #require(Self.invitationCode(again))
        let third = try #require(Self.invitationCode(server.request(.post, "/v1/users/jane/invitation", token: TestServer.adminToken)))
        #expect(Self.activate(server, code: second, password: "a brand new password").status == 401)
        #expect(PersonSessionTests.me(server, cookie: cookie).status == 200)
        #expect(Self.activate(server, code: third, password: "a brand new password").status == 200)
        #expect(PersonSessionTests.me(server, cookie: cookie).status == 401)
        #expect(PersonSessionTests.signIn(server, password: "a brand new password").status == 204)
        #expect(server.request(.post, "/v1/users/nobody/invitation", token: TestServer.adminToken).status == 404)
        let app = server.token(user: id, app: "app", read: [], share: [])
        #expect(server.request(.post, "/v1/users/\(id)/invitation", token: app).status == 403)
    }

    @Test("an expired invitation gets the same answer as an unknown one", arguments: backends)
    func expiredInvitation(backend: TestServer.Backend) throws {
        let server = try TestServer(backend: backend)
        let created = server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"jane"}"#)
        let code = try #require(Self.invitationCode(created))
        try server.executeBehindTheServersBack(sqlite: "UPDATE invitations SET expires_ms = CAST(? AS INTEGER)",
                                               postgres: "UPDATE invitations SET expires_ms = $1::bigint",
                                               String(StoreClock.nowMilliseconds() - 1))
        let expired = Self.activate(server, code: code)
        #expect(expired.status == 401)
        #expect(expired.body == Self.activate(server, code: InvitationCode.random().value).body)
    }

    @Test("a password change needs the current password, follows the policy, and ends the other sessions only",
          arguments: backends)
    func passwordChangeEndsOtherSessions(backend: TestServer.Backend) throws {
        let (server, _) = try PersonSessionTests.server(backend)
        let this = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
        let other = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
        func change(_ current: String, _ new: String) -> TestServer.Reply {
            server.request(.put, "/v1/me/password", json: #"{"current":"\#(current)","new":"\#(new)"}"#, headers: [("Cookie", this)])
        }
        let wrong = change("not my password", "a fresh long password")
        #expect(wrong.status == 403)
        #expect(PersonSessionTests.me(server, cookie: this).status == 200, "a wrong current password does not sign out")
        #expect(change(PersonSessionTests.password, "qwertyuiop").status == 400)
        #expect(PersonSessionTests.me(server, cookie: other).status == 200)
        #expect(change(PersonSessionTests.password, "a fresh long password").status == 204)
        #expect(PersonSessionTests.me(server, cookie: this).status == 200)
        #expect(PersonSessionTests.me(server, cookie: other).status == 401)
        #expect(PersonSessionTests.signIn(server).status == 401)
        #expect(PersonSessionTests.signIn(server, password: "a fresh long password").status == 204)
        // As a form: refused before anything is checked.
        let form = server.request(.put, "/v1/me/password", headers: [("Cookie", this), ("Content-Type", "text/plain")])
        #expect(form.status == 415)
    }

    @Test("wrong current passwords count against the sign-in limit", arguments: backends)
    func passwordChangeIsLimited(backend: TestServer.Backend) throws {
        let (server, _) = try PersonSessionTests.server(backend)
        let cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
        for attempt in 0 ..< SignInLimiter.accountLimit {
            let reply = server.request(.put, "/v1/me/password", json: #"{"current":"guess \#(attempt)","new":"a fresh long password"}"#,
                                       headers: [("Cookie", cookie)])
            #expect(reply.status == 403)
        }
        let locked = server.request(.put, "/v1/me/password",
                                    json: #"{"current":"\#(PersonSessionTests.password)","new":"a fresh long password"}"#,
                                    headers: [("Cookie", cookie)])
        #expect(locked.status == 429)
        #expect(locked.headers["Retry-After"] != nil)
        #expect(PersonSessionTests.signIn(server).status == 429)
    }
}
