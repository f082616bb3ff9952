import Foundation
import HTTP
import Identity
import JSON
import PostgresStore
import PostgresTestSupport
import Testing
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore

/// The sheet's and the apps page's routes with the session cookie, on both stores: the whole
/// flow (an app asks, the person allows on the sheet, the app polls, the apps page changes and
/// revokes), CSRF (a cookie write that is not JSON), and a token where a cookie belongs.
@Suite struct PermissionSheetRouteTests {
    static let backends: [TestServer.Backend] = TestPostgres.isAvailable ? [.sqlite, .postgres] : [.sqlite]

    /// A server with Jane signed in: her cookie, and the headers of her writes.
    struct World {
        let server: TestServer
        let jane: User
        let cookie: String
        var writes: [(String, String)] { [("Cookie", cookie), ("Content-Type", "application/json")] }

        init(_ backend: TestServer.Backend) throws {
            (server, jane) = try PersonSessionTests.server(backend)
            cookie = try #require(PersonSessionTests.cookie(PersonSessionTests.signIn(server)))
        }

        func ask(_ json: String = PermissionRequestTests.ask) -> (deviceCode: String, userCode: String) {
            let reply = server.request(.post, "/v1/authorization-requests", json: json)
            return (reply["deviceCode"]?.stringValue ?? "", reply["userCode"]?.stringValue ?? "")
        }

        func poll(_ deviceCode: String) -> TestServer.Reply {
            server.request(.post, "/v1/authorization-requests/token", json: #"{"deviceCode":"\#(deviceCode)"}"#)
        }

        func apps() -> [JSONValue] {
            server.request(.get, "/v1/me/apps", headers: [("Cookie", cookie)])["apps"]?.arrayValue ?? []
        }
    }

    @Test("an app asks, the person allows part of it on the sheet, the app polls its token", arguments: backends)
    func theWholeFlow(backend: TestServer.Backend) throws {
        let w = try World(backend)
        let (deviceCode, userCode) = w.ask()
        let sheet = w.server.request(.get, "/v1/me/authorization-requests/\(userCode)", headers: [("Cookie", w.cookie)])
        #expect(sheet.status == 200, "\(sheet.text)")
        #expect(sheet["displayName"]?.stringValue == "Runner" && sheet["reason"]?.stringValue == "Counts your runs.")
        #expect(sheet["share"]?.arrayValue?.compactMap(\.stringValue) == ["stepCount", "heartRate"])
        // The code as typed: lower case, no dash.
        let typed = userCode.replacingOccurrences(of: "-", with: "").lowercased()
        #expect(w.server.request(.get, "/v1/me/authorization-requests/\(typed)", headers: [("Cookie", w.cookie)]).status == 200)
        let allowed = w.server.request(.post, "/v1/me/authorization-requests/\(userCode)",
                                       json: #"{"allow":true,"share":["stepCount"],"read":["heartRate"]}"#, headers: w.writes)
        #expect(allowed.status == 204, "\(allowed.text)")
        let reply = w.poll(deviceCode)
        #expect(reply.status == 200 && reply["share"]?.arrayValue?.compactMap(\.stringValue) == ["stepCount"], "\(reply.text)")
        let token = try #require(reply["token"]?.stringValue)
        #expect(w.server.request(.post, "/v1/samples", token: token,
                                 json: #"{"samples":[{"type":"stepCount","value":5,"unit":"count","start":"2026-03-02T10:00:00Z"}]}"#).status == 201)
        PermissionRequestTests.waitForUsage(w.server)

        // The apps page: the switches, on and off, with created and last used.
        let app = try #require(w.apps().first?.objectValue)
        #expect(app["app"]?.stringValue == "runner" && app["displayName"]?.stringValue == "Runner")
        #expect(app["share"]?.arrayValue?.compactMap(\.stringValue) == ["stepCount"])
        #expect(app["read"]?.arrayValue?.compactMap(\.stringValue) == ["heartRate"])
        #expect(app["switches"]?.objectValue?["share"]?.objectValue?["heartRate"]?.boolValue == false)
        #expect(app["switches"]?.objectValue?["read"]?.objectValue?["stepCount"]?.boolValue == false)
        #expect(app["created"]?.stringValue?.hasSuffix("Z") == true && app["lastUsed"]?.stringValue?.hasSuffix("Z") == true)

        // Turning sharing off: the token may no longer write.
        let changed = w.server.request(.put, "/v1/me/apps/runner", json: #"{"share":[],"read":["heartRate","stepCount"]}"#, headers: w.writes)
        #expect(changed.status == 200 && changed["read"]?.arrayValue?.count == 2, "\(changed.text)")
        #expect(w.server.request(.post, "/v1/samples", token: token,
                                 json: #"{"samples":[{"type":"stepCount","value":5,"unit":"count","start":"2026-03-02T11:00:00Z"}]}"#).status == 403)
        // A switch the app never asked for, or an unknown app.
        #expect(w.server.request(.put, "/v1/me/apps/runner", json: #"{"share":["bodyMass"],"read":[]}"#, headers: w.writes).status == 400)
        #expect(w.server.request(.put, "/v1/me/apps/nobody", json: #"{"share":[],"read":[]}"#, headers: w.writes).status == 404)
        // Revoked: the token is gone, and so is the app.
        #expect(w.server.request(.delete, "/v1/me/apps/runner", headers: w.writes).status == 204)
        #expect(w.server.request(.get, "/v1/authorizations/status?types=stepCount", token: token).status == 401)
        #expect(w.apps().isEmpty)
        #expect(w.server.request(.delete, "/v1/me/apps/runner", headers: w.writes).status == 404)
    }

    @Test("a cookie write that is not JSON is refused and changes nothing (CSRF)", arguments: backends)
    func crossSiteFormsCannotAnswer(backend: TestServer.Backend) throws {
        let w = try World(backend)
        let (deviceCode, userCode) = w.ask()
        _ = w.server.token(user: "jane", app: "scale", read: [], share: ["bodyMass"])
        for type in [nil, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            var headers = [("Cookie", w.cookie)]
            if let type { headers.append(("Content-Type", type)) }
            let body = #"{"allow":true,"share":["stepCount"],"read":[]}"#
            let sheet = w.server.request(.post, "/v1/me/authorization-requests/\(userCode)", json: type == nil ? nil : body, headers: headers)
            #expect(sheet.status == 415, "\(type ?? "no type"): \(sheet.status)")
            #expect(w.server.request(.put, "/v1/me/apps/scale", headers: headers).status == 415)
            #expect(w.server.request(.delete, "/v1/me/apps/scale", headers: headers).status == 415)
        }
        #expect(w.poll(deviceCode)["error"]?.stringValue == "authorization_pending")
        #expect(w.apps().count == 1)
    }

    @Test("an app token is not a person: the sheet's and apps routes answer 401", arguments: backends)
    func aTokenIsNotAPerson(backend: TestServer.Backend) throws {
        let w = try World(backend)
        let token = w.server.token(user: "jane", app: "scale", read: [], share: ["bodyMass"])
        let (_, userCode) = w.ask()
        #expect(w.server.request(.get, "/v1/me/apps", token: token).status == 401)
        #expect(w.server.request(.get, "/v1/me/authorization-requests/\(userCode)", token: token).status == 401)
        #expect(w.server.request(.delete, "/v1/me/apps/scale", token: token).status == 401)
        #expect(w.server.request(.get, "/v1/me/apps", token: TestServer.adminToken).status == 401)
        #expect(w.server.request(.get, "/v1/me/apps").status == 401)
    }

    @Test("a name or reason holding HTML comes back as the same JSON text, never markup", arguments: backends)
    func htmlIsText(backend: TestServer.Backend) throws {
        let w = try World(backend)
        let name = #"<img src=x onerror=\"alert(1)\">"#
        let (_, userCode) = w.ask(#"{"app":"x<b>","displayName":"\#(name)","read":["stepCount"],"reason":"</script><script>alert(2)</script>"}"#)
        let sheet = w.server.request(.get, "/v1/me/authorization-requests/\(userCode)", headers: [("Cookie", w.cookie)])
        #expect(sheet.headers["Content-Type"] == "application/json")
        #expect(sheet["displayName"]?.stringValue == #"<img src=x onerror="alert(1)">"#)
        #expect(sheet["reason"]?.stringValue == "</script><script>alert(2)</script>" && sheet["app"]?.stringValue == "x<b>")
        #expect(w.server.request(.post, "/v1/me/authorization-requests/\(userCode)", json: #"{"allow":false}"#, headers: w.writes).status == 204)
        #expect(w.apps().first?.objectValue?["displayName"]?.stringValue == #"<img src=x onerror="alert(1)">"#)
    }
}

extension PermissionRequestTests {
    /// Waits until the uses of tokens so far are written (lastUsed).
    static func waitForUsage(_ server: TestServer) {
        if let store = server.backend as? SQLiteHealthStore { store.waitForUsageWrites() }
        if let store = server.backend as? PostgresHealthStore { store.waitForUsageWrites() }
    }
}
