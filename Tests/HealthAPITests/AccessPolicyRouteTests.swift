import Foundation
import PostgresTestSupport
import Testing
import HTTP
import JSON
@testable import HealthAPI

/// Walks every registered route with tokens that lack one permission each, and checks the
/// contract (docs/api.md, Authorization): without read permission a type behaves as if the only data
/// were the caller's own (never an error, never another app's data); without share permission a
/// write or delete of the type is a 403 and changes nothing; other users' data never shows; app
/// tokens cannot call admin routes. A route added without an entry here fails the walk.
@Suite struct AccessPolicyRouteTests {
    /// The types the walk withholds one at a time, with the owner's distinctive value for each.
    static let types = sampleTypes + ["dateOfBirth"]
    /// The withheld types that are samples (the rest are characteristics).
    static let sampleTypes = ["stepCount", "distanceWalkingRunning", "heartRate", "workout", "activeEnergyBurned"]
    static let everything = types + ["flightsClimbed"]
    static let day = "2026-03-08"

    /// Alice's "ownerapp" and Bob's "bobapp" each store one sample of every type (and Alice's
    /// date of birth); their uuids, app names and values must not reach a token that may not see them.
    struct World {
        let server: TestServer
        let alice: String
        let owner: String
        let ownerSession: String
        /// Uuid of the owner's sample of each type.
        let ownerUUIDs: [String: String]
        /// Per sample type, an anchor of the change feed from before any sample was saved.
        let startAnchors: [String: String]
        let bobUUIDs: [String]

        init(_ backend: TestServer.Backend = .sqlite) throws {
            // The walk calls every route with app tokens, the person's routes too (each a 401, which
            // costs the address extra): the address budget is not what it tests.
            server = try TestServer(backend: backend) { $0.rateLimitPerAddressPerSecond = 0 }
            alice = server.createUser("alice")
            let bob = server.createUser("bob")
            owner = server.token(user: alice, app: "ownerapp", read: AccessPolicyRouteTests.everything,
                                 share: AccessPolicyRouteTests.everything)
            let bobToken = server.token(user: bob, app: "bobapp", read: AccessPolicyRouteTests.everything,
                                        share: AccessPolicyRouteTests.everything)
            var anchors: [String: String] = [:]
            for type in AccessPolicyRouteTests.sampleTypes {
                anchors[type] = server.request(.get, "/v1/changes?types=\(type)", token: owner)["anchor"]?.stringValue
            }
            startAnchors = anchors
            var uuids: [String: String] = [:]
            var bobs: [String] = []
            for (index, type) in AccessPolicyRouteTests.sampleTypes.enumerated() {
                let mine = String(format: "aaaaaaaa-0000-4000-8000-%012d", index)
                let theirs = String(format: "bbbbbbbb-0000-4000-8000-%012d", index)
                for (token, uuid) in [(owner, mine), (bobToken, theirs)] {
                    let reply = server.request(.post, "/v1/samples", token: token,
                                               json: #"{"samples":[\#(AccessPolicyRouteTests.sample(type, uuid: uuid, owner: true))]}"#)
                    #expect(reply.status == 201, "\(reply.text)")
                }
                uuids[type] = mine
                bobs.append(theirs)
            }
            ownerUUIDs = uuids
            bobUUIDs = bobs
            let characteristics = server.request(.put, "/v1/characteristics", token: TestServer.adminToken,
                                                 json: #"{"user":"\#(alice)","dateOfBirth":"1961-07-04"}"#)
            #expect(characteristics.status == 200, "\(characteristics.text)")
            let session = server.request(.post, "/v1/workout-sessions", token: owner,
                                         json: #"{"activityType":"running","zone":{"low":120,"high":150}}"#)
            #expect(session.status == 201, "\(session.text)")
            ownerSession = session["id"]?.stringValue ?? "missing"
        }

        /// The owner's samples as the owner reads them: must be the same after the walk.
        func ownerData() -> [String] {
            ownerUUIDs.values.sorted().map { server.request(.get, "/v1/samples/\($0)", token: owner).text }
        }
    }

    /// One sample of `type`; the owners' values are distinctive (4321 steps, 9876.5 m, 187.25 bpm,
    /// a 7777.5 m hike, 654.5 kcal), a probe's are small, and a probe's own kept sample (`own`)
    /// has values of its own (`ownValues`), so a reply shows whose data it holds.
    static func sample(_ type: String, uuid: String? = nil, owner: Bool, own: Bool = false) -> String {
        let id = uuid.map { #""uuid":"\#($0)","# } ?? ""
        let hour = owner ? "08" : own ? "10" : "09"
        let start = "\(day)T\(hour):00:00Z"
        let end = "\(day)T\(hour):30:00Z"
        func value(_ ownerValue: String, _ probeValue: String) -> String {
            owner ? ownerValue : own ? (ownValues[type] ?? probeValue) : probeValue
        }
        switch type {
        case "distanceWalkingRunning":
            return #"{\#(id)"type":"distanceWalkingRunning","value":\#(value("9876.5", "3")),"unit":"m","start":"\#(start)","end":"\#(end)"}"#
        case "heartRate":
            return #"{\#(id)"type":"heartRate","value":\#(value("187.25", "61")),"unit":"count/min","start":"\#(start)","end":"\#(start)"}"#
        case "workout":
            return #"{\#(id)"type":"workout","activityType":"hiking","totalDistance":{"value":\#(value("7777.5", "1")),"unit":"m"},"start":"\#(start)","end":"\#(end)"}"#
        case "flightsClimbed":
            return #"{\#(id)"type":"flightsClimbed","value":\#(value("13", "1")),"unit":"count","start":"\#(start)","end":"\#(end)"}"#
        case "activeEnergyBurned":
            return #"{\#(id)"type":"activeEnergyBurned","value":\#(value("654.5", "4")),"unit":"kcal","start":"\#(start)","end":"\#(end)"}"#
        default:
            return #"{\#(id)"type":"stepCount","value":\#(value("4321", "2")),"unit":"count","start":"\#(start)","end":"\#(end)"}"#
        }
    }

    /// The owner's value of each withheld type as replies write it (`dateOfBirth`: its year).
    static let ownerValues = ["stepCount": "4321", "distanceWalkingRunning": "9876.5", "heartRate": "187.25",
                              "workout": "7777.5", "activeEnergyBurned": "654.5", "dateOfBirth": "1961"]
    /// The value of a probe's own kept sample of each sample type.
    static let ownValues = ["stepCount": "555", "distanceWalkingRunning": "333.25", "heartRate": "66.5",
                            "workout": "2222.5", "activeEnergyBurned": "44.5"]

    /// What a route is called with for withheld type `type`, and whether it writes `type`.
    struct Call {
        var method: HTTPMethod
        var target: String
        var json: String? = nil
        var writes = false
        var admin = false
    }

    /// The call for each registered route, for withheld type `type`.
    static func call(_ method: HTTPMethod, _ pattern: String, type: String, world: World) -> Call? {
        let range = "start=\(day)T00:00:00Z&end=\(day)T23:59:59Z"
        let options = ["stepCount": "cumulativeSum", "distanceWalkingRunning": "cumulativeSum",
                       "activeEnergyBurned": "cumulativeSum"][type] ?? "discreteAverage"
        let uuid = world.ownerUUIDs[type] ?? world.ownerUUIDs["stepCount"] ?? ""
        let imu = type == "flightsClimbed" ? IMUIngestTests.climb(session: "probe-\(type)") : #"{"session":"probe-\#(type)","seq":0,"unit":"g","t0":"\#(day)T10:00:00Z","samples":{"t":[0,0.02,0.04],"x":[0,0,0],"y":[0,0,0],"z":[1,1,1]}}"#
        switch (method, pattern) {
        case (.get, "/healthz"), (.get, "/metrics"), (.get, "/openapi.json"): return Call(method: method, target: pattern)
        case (.post, "/v1/users"): return Call(method: .post, target: pattern, json: #"{"name":"mallory"}"#, admin: true)
        case (.post, "/v1/users/{id}/invitation"):
            return Call(method: .post, target: "/v1/users/\(world.alice)/invitation", admin: true)
        case (.post, "/v1/people/activate"): return Call(method: .post, target: pattern, json: "{}")
        case (.post, "/v1/authorizations"):
            return Call(method: .post, target: pattern,
                        json: #"{"user":"\#(world.alice)","app":"x","read":["\#(type)"],"share":[]}"#, admin: true)
        case (.delete, "/v1/authorizations/{id}"): return Call(method: .delete, target: "/v1/authorizations/nosuch", admin: true)
        case (.post, "/v1/authorization-requests"):
            return Call(method: .post, target: pattern, json: #"{"app":"probe","read":["\#(type)"],"reason":"probing"}"#)
        case (.post, "/v1/authorization-requests/token"):
            return Call(method: .post, target: pattern, json: #"{"deviceCode":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}"#)
        case (.get, "/v1/users"): return Call(method: .get, target: pattern, admin: true)
        case (.get, "/v1/users/{id}/authorizations"): return Call(method: .get, target: "/v1/users/\(world.alice)/authorizations", admin: true)
        case (.delete, "/v1/users/{id}"): return Call(method: .delete, target: "/v1/users/nosuch", admin: true)
        case (.put, "/v1/characteristics"):
            return Call(method: .put, target: pattern, json: #"{"user":"\#(world.alice)","dateOfBirth":"2000-01-01"}"#, admin: true)
        case (.put, "/v1/sources/priority"):
            return Call(method: .put, target: pattern, json: #"{"user":"\#(world.alice)","type":"\#(type)","order":["probe"]}"#, admin: true)
        case (.put, "/v1/activity-goals"):
            return Call(method: .put, target: pattern, json: #"{"user":"\#(world.alice)","activeEnergyBurned":1}"#, admin: true)
        case (.get, "/v1/authorizations/status"): return Call(method: .get, target: "\(pattern)?types=\(type)")
        case (.get, "/v1/authorizations/current"): return Call(method: .get, target: pattern)
        case (.get, "/v1/workouts"): return Call(method: .get, target: "\(pattern)?\(range)")
        case (.get, "/v1/workouts/{uuid}/route"):
            return Call(method: .get, target: "/v1/workouts/\(world.ownerUUIDs["workout"] ?? uuid)/route")
        case (.post, "/v1/ingest/health-auto-export"):
            // Types the token may not share are counted as refused in a 200 (the app cannot split
            // its export); the owner's data staying intact is what the walk checks.
            return Call(method: .post, target: pattern,
                        json: #"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"\#(day) 09:00:00 +0000","qty":3}]}]}}"#)
        case (.post, "/v1/samples"):
            return Call(method: .post, target: pattern, json: #"{"samples":[\#(sample(type, owner: false))]}"#,
                        writes: type != "dateOfBirth")
        case (.get, "/v1/samples"): return Call(method: .get, target: "\(pattern)?type=\(type)")
        case (.delete, "/v1/samples"): return Call(method: .delete, target: "\(pattern)?type=\(type)&\(range)", writes: true)
        case (.get, "/v1/samples/{uuid}"): return Call(method: .get, target: "/v1/samples/\(uuid)")
        case (.delete, "/v1/samples/{uuid}"): return Call(method: .delete, target: "/v1/samples/\(uuid)", writes: true)
        case (.get, "/v1/sources"): return Call(method: .get, target: "\(pattern)?type=\(type)")
        case (.post, "/v1/ingest/imu"):
            return Call(method: .post, target: pattern, json: imu, writes: type == "stepCount" || type == "distanceWalkingRunning")
        case (.post, "/v1/ingest/imu/{session}/end"): return Call(method: .post, target: "/v1/ingest/imu/probe-\(type)/end")
        case (.get, "/v1/pedometer"): return Call(method: .get, target: "\(pattern)?\(range)")
        case (.get, "/v1/types"): return Call(method: .get, target: pattern)
        case (.get, "/v1/types/{id}"): return Call(method: .get, target: "/v1/types/\(type)")
        case (.get, "/v1/characteristics"): return Call(method: .get, target: pattern)
        case (.get, "/v1/heart-rate/zones"): return Call(method: .get, target: pattern)
        case (.get, "/v1/export"): return Call(method: .get, target: pattern)
        case (.get, "/v1/changes"): return Call(method: .get, target: "\(pattern)?types=\(type)")
        case (.get, "/v1/changes/stream"): return Call(method: .get, target: "\(pattern)?types=\(type)")
        case (.get, "/v1/statistics"): return Call(method: .get, target: "\(pattern)?type=\(type)&options=\(options)&\(range)")
        case (.get, "/v1/statistics/collection"):
            return Call(method: .get, target: "\(pattern)?type=\(type)&options=\(options)&\(range)&anchor=\(day)T00:00:00Z&interval=PT1H")
        case (.get, "/v1/sources/priority"): return Call(method: .get, target: "\(pattern)?type=\(type)")
        case (.get, "/v1/summary"): return Call(method: .get, target: "\(pattern)?date=\(day)")
        case (.get, "/v1/activity-summaries"): return Call(method: .get, target: "\(pattern)?start=\(day)&end=\(day)")
        case (.post, "/v1/workout-sessions"):
            return Call(method: .post, target: pattern, json: #"{"activityType":"walking"}"#, writes: type == "workout")
        case (.get, "/v1/workout-sessions/{id}"): return Call(method: .get, target: "/v1/workout-sessions/\(world.ownerSession)")
        case (.post, "/v1/workout-sessions/{id}/pause"), (.post, "/v1/workout-sessions/{id}/resume"),
             (.post, "/v1/workout-sessions/{id}/end"):
            return Call(method: .post, target: pattern.replacingOccurrences(of: "{id}", with: world.ownerSession))
        // Webhook routes answer no health data; the pages they deliver are checked in WebhookDeliveryTests.
        case (.post, "/v1/webhooks"):
            return Call(method: .post, target: pattern, json: #"{"url":"http://203.0.113.5/x","types":["\#(type)"]}"#)
        case (.get, "/v1/webhooks"): return Call(method: .get, target: pattern)
        case (.delete, "/v1/webhooks/{id}"): return Call(method: .delete, target: "/v1/webhooks/wh_none")
        case (.get, "/v1/webhooks/{id}/deliveries"): return Call(method: .get, target: "/v1/webhooks/wh_none/deliveries")
        case _ where pattern == "/v1/session" || pattern == "/v1/me" || pattern.hasPrefix("/v1/me/"):
            // The person's routes: an app token there is a 401 (sign-in itself is open; `{}` is a 400).
            let target = pattern.split(separator: "/", omittingEmptySubsequences: false).map { $0.hasPrefix("{") ? "probe" : $0 }.joined(separator: "/")
            return Call(method: method, target: target, json: method == .get ? nil : "{}")
        default: return nil
        }
    }

    /// Text that only the owner's (or another user's) data can produce.
    static func secrets(_ world: World, withheld type: String) -> [String] {
        var secrets = world.bobUUIDs + ["bobapp"]
        switch type {
        case "stepCount": secrets += [world.ownerUUIDs[type] ?? "", "4321", "ownerapp"]
        case "distanceWalkingRunning": secrets += [world.ownerUUIDs[type] ?? "", "9876.5", "9.8765", "ownerapp"]
        case "heartRate": secrets += [world.ownerUUIDs[type] ?? "", "187.25", "ownerapp"]
        case "workout": secrets += [world.ownerUUIDs[type] ?? "", "7777.5", "ownerapp"]
        case "activeEnergyBurned": secrets += [world.ownerUUIDs[type] ?? "", "654.5", "ownerapp"]
        default: secrets += [#""1961-"#]
        }
        return secrets
    }

    /// Whether `text` shows `secret`: a number as a JSON value (never digits inside a random id, token
    /// or webhook secret, which may hold "4321" by chance), anything else as written.
    static func shows(_ text: String, _ secret: String) -> Bool {
        guard !secret.isEmpty, secret.allSatisfy({ $0.isNumber || $0 == "." }) else { return text.contains(secret) }
        return text.range(of: #"[:\[,]\s*"# + NSRegularExpression.escapedPattern(for: secret) + "(?![0-9])",
                          options: .regularExpression) != nil
    }

    /// Calls every registered route as `token` (a route without a call fails the walk); no answer
    /// may be a 5xx; `check` sees each call, its reply and a label for messages.
    static func walk(_ world: World, token: String, withheld type: String, lacking permission: String,
                     _ check: (Call, TestServer.Reply, String) -> Void) {
        for route in world.server.application.registeredRoutes {
            guard let call = Self.call(route.method, route.pattern, type: type, world: world) else {
                Issue.record("\(route.method.rawValue) \(route.pattern) has no call in the access walk")
                continue
            }
            let reply = world.server.request(call.method, call.target, token: token, json: call.json)
            let label = "\(call.method.rawValue) \(call.target) without \(permission) \(type)"
            #expect(reply.status < 500, "\(label): \(reply.status) \(reply.text)")
            check(call, reply, label)
        }
    }

    @Test func everyRouteKeepsDataFromATokenWithoutReadPermission() throws {
        try Self.keepsDataFromATokenWithoutReadPermission(.sqlite)
    }

    @Test func everyWriteRouteRefusesATokenWithoutSharePermission() throws {
        try Self.refusesWritesOfATokenWithoutSharePermission(.sqlite)
    }

    static func keepsDataFromATokenWithoutReadPermission(_ backend: TestServer.Backend) throws {
        let world = try World(backend)
        let before = world.ownerData()
        for type in Self.types {
            let probe = world.server.token(user: world.alice, app: "probe-noread-\(type)",
                                           read: Self.everything.filter { $0 != type }, share: Self.everything)
            let secrets = Self.secrets(world, withheld: type)
            Self.walk(world, token: probe, withheld: type, lacking: "read") { call, reply, where_ in
                if call.admin { #expect(reply.status == 403, "\(where_) is an admin route") }
                // A 404 may echo the uuid the caller asked for; that discloses nothing. The owner's
                // app name is a secret only where the call names the withheld type (the probe
                // reads the owner's other types, e.g. its workouts, by right).
                for secret in secrets where Self.shows(reply.text, secret) && !call.target.contains(secret)
                    && (secret != "ownerapp" || call.target.contains("=\(type)")) {
                    Issue.record("\(where_) shows '\(secret)': \(reply.text)")
                }
            }
            // Read permission is never disclosed, and share permission is reported as granted.
            let status = world.server.request(.get, "/v1/authorizations/status?types=\(type)", token: probe)
            if type != "dateOfBirth" { #expect(status[type]?.stringValue == "sharingAuthorized", "\(status.text)") }
        }
        #expect(world.ownerData() == before, "a token without read permission changed the owner's data")
    }

    static func refusesWritesOfATokenWithoutSharePermission(_ backend: TestServer.Backend) throws {
        let world = try World(backend)
        let before = world.ownerData()
        // Flights too: IMU ingest derives them from the barometer, beside the steps it may save.
        for type in Self.types + ["flightsClimbed"] {
            let probe = world.server.token(user: world.alice, app: "probe-noshare-\(type)",
                                           read: Self.everything, share: Self.everything.filter { $0 != type })
            Self.walk(world, token: probe, withheld: type, lacking: "share") { call, reply, where_ in
                if call.writes || call.admin {
                    #expect(reply.status == 403, "\(where_): \(reply.status) \(reply.text)")
                    #expect(reply.code == "errorAuthorizationDenied", "\(where_): \(reply.text)")
                }
                for secret in world.bobUUIDs + ["bobapp"] where reply.text.contains(secret) {
                    Issue.record("\(where_) shows another user's '\(secret)'")
                }
            }
            let status = world.server.request(.get, "/v1/authorizations/status?types=\(type)", token: probe)
            #expect(status[type]?.stringValue == "sharingDenied", "\(status.text)")
            if type != "dateOfBirth" {
                // Its own samples of the type: none was saved by any route.
                let own = world.server.request(.get, "/v1/samples?type=\(type)&source=probe-noshare-\(type)", token: probe)
                #expect(own["samples"]?.arrayValue?.isEmpty == true, "a route saved \(type) for a token that may not share it: \(own.text)")
            }
        }
        #expect(world.ownerData() == before, "a token without share permission changed the owner's data")
    }
}

/// The same walk on the PostgreSQL store: its access control must hold exactly as SQLite's.
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to walk the routes on the PostgreSQL store"))
struct PostgresAccessPolicyRouteTests {
    @Test func everyRouteKeepsDataFromATokenWithoutReadPermission() throws {
        try AccessPolicyRouteTests.keepsDataFromATokenWithoutReadPermission(.postgres)
    }

    @Test func everyWriteRouteRefusesATokenWithoutSharePermission() throws {
        try AccessPolicyRouteTests.refusesWritesOfATokenWithoutSharePermission(.postgres)
    }
}
