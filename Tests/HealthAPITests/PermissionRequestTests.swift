import Foundation
import HTTP
import HealthModel
import Identity
import JSON
import Testing
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore

/// RFC 8628's device grant as HealthKit's permission request (docs/api.md, "Permission requests"),
/// and its threats: polling faster than the interval, replaying a device code, the read decision
/// disclosed, guessing user codes, HTML in the app's name or reason.
@Suite struct PermissionRequestTests {
    static let ask = #"{"app":"runner","displayName":"Runner","share":["stepCount","HKQuantityTypeIdentifierHeartRate"],"read":["stepCount","heartRate"],"reason":"Counts your runs."}"#

    /// A server, Alice, and a permission request of the runner app.
    struct World {
        let server: TestServer
        let alice: User
        let sheet: PermissionSheet
        let deviceCode: String
        let userCode: String

        init(ask: String = PermissionRequestTests.ask) throws {
            server = try TestServer()
            alice = try server.store.createUser(name: "alice")
            sheet = PermissionSheet(data: HealthData(server.store))
            let reply = server.request(.post, "/v1/authorization-requests", json: ask)
            #expect(reply.status == 201, "\(reply.text)")
            deviceCode = reply["deviceCode"]?.stringValue ?? ""
            userCode = reply["userCode"]?.stringValue ?? ""
        }

        func poll(_ code: String? = nil) -> TestServer.Reply {
            server.request(.post, "/v1/authorization-requests/token", json: #"{"deviceCode":"\#(code ?? deviceCode)"}"#)
        }

        /// The sheet's POST as the signed-in person.
        func answer(_ json: String, code: String? = nil) throws(APIError) -> HTTPResponse {
            var headers = HTTPHeaders()
            headers.add("Content-Type", "application/json")
            return try sheet.answer(userCode: code ?? userCode, request: HTTPRequest(method: .post, target: "/", headers: headers,
                                                                                     body: Array(json.utf8)), for: alice)
        }

        /// Lets the next poll through at once (as if the interval had passed).
        func forgetLastPoll() throws {
            try server.executeBehindTheServersBack(sqlite: "UPDATE authorization_requests SET last_poll_ms = last_poll_ms - 60000 WHERE user_code = ?",
                                                   postgres: "", userCode.replacingOccurrences(of: "-", with: ""))
        }
    }

    @Test func theAnswerCarriesTheCodesAndWhereToGo() throws {
        let w = try World()
        let reply = w.server.request(.post, "/v1/authorization-requests", json: Self.ask)
        #expect(reply["deviceCode"]?.stringValue.flatMap { DeviceCode(presented: $0) } != nil)
        let userCode = try #require(reply["userCode"]?.stringValue)
        #expect(userCode.count == 9 && userCode.dropFirst(4).first == "-" && UserCode(userCode)?.description == userCode)
        #expect(reply["verificationURI"]?.stringValue == "http://test/#/authorize")
        #expect(reply["verificationURIComplete"]?.stringValue == "http://test/#/authorize?code=\(userCode)")
        #expect(reply["expiresIn"]?.numberValue == 600 && reply["interval"]?.numberValue == 5)
        #expect(reply.headers["Cache-Control"] == "no-store")
        // Stored with the device code only as its hash.
        let stored = try #require(try w.server.store.authorizationRequest(userCode: UserCode(userCode)?.letters ?? ""))
        #expect(stored.share == ["stepCount", "heartRate"] && stored.read == ["stepCount", "heartRate"] && stored.displayName == "Runner")
        let hashes = try w.server.store.pool.read { db in
            try db.map("SELECT device_code_hash FROM authorization_requests", [], { try $0.blob(at: 0) })
        }
        #expect(hashes.contains(DeviceCode(presented: reply["deviceCode"]?.stringValue ?? "")?.hash ?? []))
    }

    @Test func badRequestsAreRefusedNamingTheField() throws {
        let server = try TestServer()
        func refused(_ json: String, field: String) {
            let reply = server.request(.post, "/v1/authorization-requests", json: json)
            #expect(reply.status == 400 && reply.text.contains(field), "\(json): \(reply.status) \(reply.text)")
        }
        refused(#"{"app":"a","share":["stepCounts"],"reason":"r"}"#, field: "share[0]")
        refused(#"{"app":"a","share":["dateOfBirth"],"reason":"r"}"#, field: "share[0]")
        refused(#"{"app":"a","read":[],"reason":"r"}"#, field: "at least one type")
        refused(#"{"app":"a","read":["stepCount"]}"#, field: "reason")
        refused(#"{"app":"a","read":["stepCount"],"reason":"r","scope":"all"}"#, field: "scope")
        refused(#"{"app":"a","displayName":"two\nlines","read":["stepCount"],"reason":"r"}"#, field: "displayName")
        refused(#"{"app":"a","displayName":"\#(String(repeating: "x", count: 101))","read":["stepCount"],"reason":"r"}"#, field: "displayName")
        refused(#"{"app":"a","read":["stepCount"],"reason":"\#(String(repeating: "y", count: 1_001))"}"#, field: "reason")
        refused(#"{"app":"","read":["stepCount"],"reason":"r"}"#, field: "app")
        // A characteristic may be asked for reading, and a long reason with line breaks is fine.
        #expect(server.request(.post, "/v1/authorization-requests",
                               json: #"{"app":"a","read":["dateOfBirth"],"reason":"one\nand \#(String(repeating: "y", count: 900))"}"#).status == 201)
    }

    /// The sheet shows the app's name, display name and reason: each must read as it is stored.
    @Test func namesAndReasonsThatWouldShowAsSomethingElseAreRefused() throws {
        let server = try TestServer()
        func refused(_ json: String, field: String) {
            let reply = server.request(.post, "/v1/authorization-requests", json: json)
            #expect(reply.status == 400 && reply.text.contains(field), "\(json): \(reply.status) \(reply.text)")
        }
        // No bidirectional override (U+202E shows "\u202Eppa-htlaeH" as "Health-app"), no
        // zero-width space, no space at either end.
        refused(#"{"app":"\u202Eppa-htlaeH","read":["stepCount"],"reason":"r"}"#, field: "app")
        refused(#"{"app":"Health\u200B","read":["stepCount"],"reason":"r"}"#, field: "app")
        refused(#"{"app":" Health","read":["stepCount"],"reason":"r"}"#, field: "app")
        refused(#"{"app":"a","displayName":"Health\u2066 app","read":["stepCount"],"reason":"r"}"#, field: "displayName")
        refused(#"{"app":"a","read":["stepCount"],"reason":"Reads your steps\u202E only"}"#, field: "reason")
        // Right-to-left text with its marks, and emoji joined by U+200D, are names and reasons like any.
        let rightToLeft = server.request(.post, "/v1/authorization-requests",
                                         json: #"{"app":"\u05D4\u05DC\u05D9\u05DB\u05D4","displayName":"Runner \uD83C\uDFC3\u200D\u2640\uFE0F","read":["stepCount"],"reason":"\u05E1\u05D5\u05E4\u05E8 \u200Fsteps"}"#)
        #expect(rightToLeft.status == 201, "\(rightToLeft.text)")
    }

    /// Asking stores a row per request: an address gets a few at once, then waits.
    @Test func requestsAreLimitedPerAddress() throws {
        let server = try TestServer()
        var statuses: [Int] = []
        for _ in 0..<12 { statuses.append(server.request(.post, "/v1/authorization-requests", json: Self.ask, remote: "10.0.0.1").status) }
        #expect(statuses.prefix(10).allSatisfy { $0 == 201 } && statuses.suffix(2).allSatisfy { $0 == 429 }, "\(statuses)")
        let limited = server.request(.post, "/v1/authorization-requests", json: Self.ask, remote: "10.0.0.1")
        #expect(limited.headers["Retry-After"] != nil && limited["code"]?.stringValue == "errorRateLimited")
        #expect(server.request(.post, "/v1/authorization-requests", json: Self.ask, remote: "10.0.0.2").status == 201)
    }

    /// RFC 8628 section 3.5: pending until answered; a poll sooner than the interval is slow_down
    /// and the interval grows by 5 s each time.
    @Test func pollingFasterThanTheIntervalSlowsTheAppDown() throws {
        let w = try World()
        #expect(w.poll().text == #"{"error":"authorization_pending"}"#)
        let fast = w.poll()
        #expect(fast.status == 400 && fast["error"]?.stringValue == "slow_down" && fast["interval"]?.numberValue == 10)
        #expect(w.poll()["interval"]?.numberValue == 15)
        // Answered meanwhile, but still too fast: no token yet.
        _ = try w.answer(#"{"allow":true,"share":["stepCount"],"read":[]}"#)
        #expect(w.poll()["error"]?.stringValue == "slow_down")
        try w.forgetLastPoll()
        #expect(w.poll().status == 200)
    }

    /// Allowed: the token once, naming only the granted share types; the read decision shows
    /// nowhere (not in the answer, not in the status route, and refused data looks like none).
    /// A replayed device code is invalid_grant.
    @Test func theTokenComesOnceWithTheShareTypesOnly() throws {
        let w = try World()
        _ = w.server.token(user: "alice", app: "other", read: [], share: ["heartRate"])
        let other = w.server.token(user: "alice", app: "other", read: [], share: ["heartRate"])
        #expect(w.server.request(.post, "/v1/samples", token: other,
                                 json: #"{"samples":[{"type":"heartRate","value":61,"unit":"count/min","start":"2026-03-02T10:00:00Z"}]}"#).status == 201)
        let answered = try w.answer(#"{"allow":true,"share":["stepCount"],"read":["stepCount"]}"#)
        #expect(answered.status.code == 204)
        let reply = w.poll()
        #expect(reply.status == 200, "\(reply.text)")
        let token = try #require(reply["token"]?.stringValue)
        #expect(reply["user"]?.stringValue == w.alice.id && reply["app"]?.stringValue == "runner")
        #expect(reply["share"]?.arrayValue?.compactMap(\.stringValue) == ["stepCount"])
        #expect(reply.object?.keys.sorted() == ["app", "share", "token", "user"], "the read decision is not in the answer")
        // Replayed: spent, whenever it comes.
        for _ in 0..<2 {
            let replay = w.poll()
            #expect(replay.status == 400 && replay["error"]?.stringValue == "invalid_grant" && replay["token"] == nil)
        }
        // The status route tells sharing only; heart rate (read refused) looks like no data at all.
        let status = w.server.request(.get, "/v1/authorizations/status?types=stepCount,heartRate", token: token)
        #expect(status.text == #"{"stepCount":"sharingAuthorized","heartRate":"sharingDenied"}"#)
        let heart = w.server.request(.get, "/v1/samples?type=heartRate", token: token)
        #expect(heart.status == 200 && heart["samples"]?.arrayValue?.isEmpty == true)
        let current = w.server.request(.get, "/v1/authorizations/current", token: token)
        #expect(current["read"] == nil && current["discloseRead"]?.boolValue == false)
    }

    @Test func aDeniedRequestAnswersAccessDeniedAndAnExpiredOneExpiredToken() throws {
        let w = try World()
        #expect(try w.answer(#"{"allow":false}"#).status.code == 204)
        #expect(w.poll().text == #"{"error":"access_denied"}"#)
        // Don't Allow decides the shown types (off): asking again shows none of them.
        let grant = try #require(try w.server.store.appGrants(userRowID: w.alice.rowID).first)
        #expect(grant.share.isEmpty && grant.read.isEmpty && grant.decidedShare == ["stepCount", "heartRate"])

        let code = DeviceCode.random()
        let old = AuthorizationRequestRecord(id: "old", userCode: "BCDFGHJK", app: "runner", displayName: "Runner", reason: "r",
                                             share: ["stepCount"], read: [], created: StoreClock.nowMilliseconds() - 601_000, interval: 5)
        #expect(try w.server.store.createAuthorizationRequest(old, deviceCodeHash: code.hash))
        #expect(w.poll(code.value).text == #"{"error":"expired_token"}"#)
        #expect(throws: APIError.self) { try w.answer(#"{"allow":true}"#, code: "BCDF-GHJK") }
        // Codes this server never issued.
        #expect(w.poll("not-a-code")["error"]?.stringValue == "invalid_grant")
        #expect(w.poll(DeviceCode.random().value)["error"]?.stringValue == "invalid_grant")
    }

    /// The sheet takes a subset of what was asked; more is a 400 and changes nothing.
    @Test func theSheetTakesASubsetOfWhatWasAsked() throws {
        let w = try World()
        #expect(throws: APIError.self) { try w.answer(#"{"allow":true,"share":["bodyMass"],"read":[]}"#) }
        #expect(throws: APIError.self) { try w.answer(#"{"allow":true,"share":[],"read":["sleepAnalysis"]}"#) }
        #expect(throws: APIError.self) { try w.answer(#"{"allow":true,"share":["dateOfBirth"]}"#) }
        #expect(try w.server.store.appGrants(userRowID: w.alice.rowID).isEmpty)
        #expect(w.poll().text == #"{"error":"authorization_pending"}"#)
        #expect(try w.answer(#"{"allow":true,"share":["HKQuantityTypeIdentifierStepCount"],"read":["heartRate"]}"#).status.code == 204)
        // Answered once only.
        #expect(throws: APIError.self) { try w.answer(#"{"allow":true,"share":["stepCount"]}"#) }
    }

    /// Asking again shows only the types not decided yet; the app and reason come back as JSON
    /// text, whatever HTML they hold.
    @Test func askingAgainShowsOnlyUndecidedTypesAndNamesAreText() throws {
        let html = #"<img src=x onerror=alert(1)>"#
        let ask = #"{"app":"runner","displayName":"\#(html)","share":["stepCount"],"read":["stepCount"],"reason":"<script>alert(2)</script>"}"#
        let w = try World(ask: ask)
        let first = try w.sheet.show(userCode: w.userCode, for: w.alice)
        let shown = try #require(try JSONParser.parse(first.bodyBytes).objectValue)
        #expect(shown["displayName"]?.stringValue == html && shown["reason"]?.stringValue == "<script>alert(2)</script>")
        #expect(shown["share"]?.arrayValue?.compactMap(\.stringValue) == ["stepCount"])
        _ = try w.answer(#"{"allow":true,"share":["stepCount"],"read":[]}"#)
        // The app asks again, for one more type.
        let again = w.server.request(.post, "/v1/authorization-requests",
                                     json: #"{"app":"runner","share":["stepCount","bodyMass"],"read":["stepCount","heartRate"],"reason":"more"}"#)
        let second = try w.sheet.show(userCode: again["userCode"]?.stringValue ?? "", for: w.alice)
        let secondShown = try #require(try JSONParser.parse(second.bodyBytes).objectValue)
        #expect(secondShown["share"]?.arrayValue?.compactMap(\.stringValue) == ["bodyMass"])
        #expect(secondShown["read"]?.arrayValue?.compactMap(\.stringValue) == ["heartRate"])
        #expect(secondShown["userCode"]?.stringValue == again["userCode"]?.stringValue)
    }

    /// Anyone can ask in an app's name: a request naming an app that already reads or writes says
    /// since when (the sheet warns), and one naming an app with no access, or only refusals, does not.
    @Test func aRequestInTheNameOfAnAppWithAccessSaysSince() throws {
        let w = try World()
        func allowedBefore(_ code: String) throws -> JSONValue? {
            try #require(try JSONParser.parse(try w.sheet.show(userCode: code, for: w.alice).bodyBytes).objectValue)["allowedBefore"]
        }
        #expect(try allowedBefore(w.userCode) == .null)
        _ = try w.answer(#"{"allow":false}"#)
        let refusedOnly = w.server.request(.post, "/v1/authorization-requests", json: #"{"app":"runner","share":["bodyMass"],"reason":"r"}"#)
        #expect(try allowedBefore(refusedOnly["userCode"]?.stringValue ?? "") == .null)
        _ = try w.answer(#"{"allow":true,"share":["bodyMass"]}"#, code: refusedOnly["userCode"]?.stringValue ?? "")
        let created = try #require(try w.server.store.appGrants(userRowID: w.alice.rowID).first { $0.app == "runner" }).created
        let impostor = w.server.request(.post, "/v1/authorization-requests", json: #"{"app":"runner","displayName":"Runner","read":["stepCount"],"reason":"r"}"#)
        #expect(try allowedBefore(impostor["userCode"]?.stringValue ?? "") == .string(RFC3339.format(created)))
    }

    /// An app asking under a name that reads like an allowed app's (its id or shown name, another
    /// case or width) is named with that app, so the sheet can say it is another app; the allowed
    /// app itself, an app with only refusals, and names merely alike in letters are not.
    @Test func aRequestWhoseNameReadsLikeAnAllowedAppsSaysWhich() throws {
        let w = try World()
        _ = try w.answer(#"{"allow":true,"share":["stepCount"]}"#)
        func readsLike(_ json: String) throws -> JSONValue? {
            let asked = w.server.request(.post, "/v1/authorization-requests", json: json)
            #expect(asked.status == 201, "\(asked.text)")
            let shown = try w.sheet.show(userCode: asked["userCode"]?.stringValue ?? "", for: w.alice)
            return try #require(try JSONParser.parse(shown.bodyBytes).objectValue)["readsLike"]
        }
        let runner = JSONValue.object(["app": .string("runner"), "displayName": .string("Runner")])
        #expect(try readsLike(#"{"app":"Runner","read":["stepCount"],"reason":"r"}"#) == runner)
        #expect(try readsLike(#"{"app":"com.evil","displayName":"RUNNER","read":["stepCount"],"reason":"r"}"#) == runner)
        #expect(try readsLike(#"{"app":"com.evil","displayName":"\uFF32unner","read":["stepCount"],"reason":"r"}"#) == runner)
        #expect(try readsLike(#"{"app":"runner","displayName":"Runner","read":["stepCount"],"reason":"r"}"#) == .null)
        #expect(try readsLike(#"{"app":"runners","displayName":"Runners","read":["stepCount"],"reason":"r"}"#) == .null)
    }

    /// The admin acts for the person: a second POST /v1/authorizations for the app turns on what it
    /// names, leaves the rest, and both tokens follow; it never narrows.
    @Test func theAdminTurnsOnTheSwitchesItNames() throws {
        let server = try TestServer()
        let alice = server.createUser("alice")
        let first = server.request(.post, "/v1/authorizations", token: TestServer.adminToken,
                                   json: #"{"user":"\#(alice)","app":"runner","read":["stepCount"],"share":["stepCount"]}"#)
        let second = server.request(.post, "/v1/authorizations", token: TestServer.adminToken,
                                    json: #"{"user":"\#(alice)","app":"runner","read":["heartRate"],"share":[]}"#)
        #expect(second["read"]?.arrayValue?.compactMap(\.stringValue) == ["heartRate", "stepCount"])
        #expect(second["share"]?.arrayValue?.compactMap(\.stringValue) == ["stepCount"])
        let firstToken = first["token"]?.stringValue ?? ""
        #expect(server.request(.get, "/v1/authorizations/status?types=stepCount", token: second["token"]?.stringValue ?? "").text
                    == #"{"stepCount":"sharingAuthorized"}"#)
        let user = try #require(try server.store.user(idOrName: alice))
        let grant = try #require(try server.store.appGrants(userRowID: user.rowID).first)
        #expect(grant.read == ["heartRate", "stepCount"] && grant.share == ["stepCount"])
        #expect(try server.store.authorization(tokenHash: TokenHashing.hash(firstToken))?.read == ["heartRate", "stepCount"])
    }

    /// Guessing user codes: each wrong code counts against the person; past 10 in 15 minutes even
    /// the right code is refused with 429 and Retry-After.
    @Test func guessingUserCodesIsLimitedPerPerson() throws {
        let w = try World()
        var wrong = 0
        for letters in ["BBBBBBBB", "BBBBBBBC", "not a code", "BBBB-BBBD", "BBBBBBBF", "BBBBBBBG", "BBBBBBBH", "BBBBBBBJ", "BBBBBBBK", "BBBBBBBL"] {
            do { _ = try w.sheet.show(userCode: letters, for: w.alice) } catch { if error.status == .notFound { wrong += 1 } }
        }
        #expect(wrong == 10)
        do {
            _ = try w.sheet.show(userCode: w.userCode, for: w.alice)
            Issue.record("the right code went through after 10 wrong ones")
        } catch {
            #expect(error.status == .tooManyRequests && error.headers["Retry-After"] != nil)
        }
        // Another person has their own budget.
        let bob = try w.server.store.createUser(name: "bob")
        #expect(try w.sheet.show(userCode: w.userCode, for: bob).status.code == 200)
    }
}

extension HTTPResponse {
    /// The body of a response built from bytes.
    var bodyBytes: [UInt8] {
        if case .bytes(let bytes) = body { return bytes }
        return []
    }
}
