import Testing
import HTTP
import HealthStore
import JSON
@testable import HealthAPI

/// Names and path parameters with control characters (a NUL above all, which PostgreSQL text cannot
/// hold) are refused or find no one, with the same answer on both stores: never a 500 (docs/api.md,
/// Authorization and HTTP).
@Suite struct ControlCharacterInputTests {
    static let backends = PersonSessionTests.backends

    @Test("a person's or an app's name with a control character is a 400 naming the field", arguments: backends)
    func namesWithControlCharactersAreRefused(_ backend: TestServer.Backend) throws {
        let server = try TestServer(backend: backend)
        for name in [#"a\u0000b"#, #"tab\there"#, #"bell\u0007"#, #"line\u2028break"#] {
            let user = server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"\#(name)"}"#)
            #expect(user.status == 400 && user.text.contains(#""field":"name""#), "\(name): \(user.text)")
        }
        let alice = server.createUser("alice")
        // An app's name is shown on the person's apps page: invisible formatting is refused as in a
        // person's name (a bidirectional override would show one app as another).
        for name in [#"a\u0000b"#, #"\u202Eppa-htlaeH"#, #"Health\u200B"#, #"Health "#] {
            let app = server.request(.post, "/v1/authorizations", token: TestServer.adminToken,
                                     json: #"{"user":"\#(alice)","app":"\#(name)","read":["stepCount"]}"#)
            #expect(app.status == 400 && app.text.contains(#""field":"app""#), "\(name): \(app.text)")
        }
        // Nothing was made of them.
        let users = server.request(.get, "/v1/users", token: TestServer.adminToken)
        #expect(users["users"]?.arrayValue?.count == 1, "\(users.text)")
        let apps = server.request(.get, "/v1/users/\(alice)/authorizations", token: TestServer.adminToken)
        #expect(apps["authorizations"]?.arrayValue?.isEmpty == true, "\(apps.text)")
    }

    @Test("a lookup by a name with a NUL finds no one: a body's user, a path's id, a sign-in", arguments: backends)
    func lookupsByANameWithANULFindNoOne(_ backend: TestServer.Backend) throws {
        let server = try TestServer(backend: backend)
        _ = server.createUser("alice")
        for (method, target, json) in [(HTTPMethod.post, "/v1/authorizations", #"{"user":"a\u0000b","app":"x"}"#),
                                       (.put, "/v1/characteristics", #"{"user":"a\u0000b","dateOfBirth":"1980-01-01"}"#),
                                       (.put, "/v1/sources/priority", #"{"user":"a\u0000b","type":"stepCount","order":[]}"#)] {
            let reply = server.request(method, target, token: TestServer.adminToken, json: json)
            #expect(reply.status == 400 && reply.text.contains("no user"), "\(target): \(reply.text)")
        }
        for (method, target) in [(HTTPMethod.get, "/v1/users/a%00b/authorizations"), (.delete, "/v1/users/a%00b"),
                                 (.post, "/v1/users/a%00b/invitation"), (.delete, "/v1/authorizations/a%00b"),
                                 (.delete, "/v1/webhooks/wh%00")] {
            let reply = server.request(method, target, token: TestServer.adminToken)
            #expect(reply.status == 404 && reply.code == "errorNotFound", "\(method) \(target): \(reply.text)")
        }
        // The same 401 as any wrong name, and the guess counts like one.
        let wrong = server.request(.post, "/v1/session", json: #"{"name":"a\u0000b","password":"correct horse battery"}"#)
        let unknown = server.request(.post, "/v1/session", json: #"{"name":"nobody","password":"correct horse battery"}"#)
        #expect(wrong.status == 401 && wrong.text == unknown.text, "\(wrong.text)")
    }

    @Test("a name that reads like an existing account's is a 409 naming it; nothing is made", arguments: backends)
    func lookalikeNamesAreRefused(_ backend: TestServer.Backend) throws {
        let server = try TestServer(backend: backend)
        for name in ["Maya", "José"] {
            #expect(server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"\#(name)"}"#).status == 201)
        }
        // Another case, full-width letters, "é" as "e" and a combining accent, a ligature.
        for name in ["maya", "MAYA", "\u{FF4D}\u{FF41}\u{FF59}\u{FF41}", "Jose\u{301}", "jos\u{E9}"] {
            let reply = server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"\#(name)"}"#)
            #expect(reply.status == 409 && (reply.text.contains("'Maya'") || reply.text.contains("'José'")), "\(name): \(reply.text)")
        }
        // `healthd invite` and `import` create through userCreatingIfNeeded: the exact name finds its
        // account, a lookalike is the same refusal.
        #expect(try server.backend.userCreatingIfNeeded(name: "Maya").name == "Maya")
        #expect(throws: StoreError.conflict("the name 'maya' reads like an existing user's, 'Maya'")) {
            try server.backend.userCreatingIfNeeded(name: "maya")
        }
        // Different letters are different people, accents included.
        #expect(server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"Jose"}"#).status == 201)
        #expect(server.request(.post, "/v1/users", token: TestServer.adminToken, json: #"{"name":"Mayan"}"#).status == 201)
        let users = server.request(.get, "/v1/users", token: TestServer.adminToken)
        #expect(users["users"]?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue }.sorted() == ["Jose", "José", "Maya", "Mayan"],
                "\(users.text)")
    }
}
