import Foundation
import Synchronization
import Testing
import HTTP
import JSON
@testable import HealthAPI

/// Read privacy, route by route, with a control: every registered route that reads typed data is
/// called by a token that may read the type (it must show the owner's value, so the route really
/// answers with other apps' data) and by one that may not but saved a sample of its own (it must
/// show its own value and never the owner's). The store decides what each token sees; this proves
/// no route bypasses it. A route added without an entry here fails the walk.
extension AccessPolicyRouteTests {
    /// What a read route is asked for a withheld type, and what its answer must show.
    struct ReadCheck {
        var target: String
        /// Shown to a token that may read the type; never to one that may not.
        var ownerMarker: String
        /// Shown to a token without read permission that saved its own sample (nil: the route has
        /// no place for it, e.g. a characteristic or another app's sample by uuid).
        var ownMarker: String?
        /// The answer is a Server-Sent Events stream that never ends by itself.
        var eventStream = false
    }

    /// Routes that read no data of a type a token might not read: open and admin routes, writes
    /// (the share walk covers them), the catalog, a token's own permissions, and objects that only
    /// their own app ever sees (IMU batches and pedometer totals, workout sessions).
    static let routesWithoutTypedReads: Set<String> = [
        "GET /healthz", "GET /metrics", "GET /openapi.json", "POST /v1/users", "POST /v1/authorizations",
        "DELETE /v1/authorizations/{id}", "PUT /v1/characteristics", "PUT /v1/sources/priority", "PUT /v1/activity-goals",
        "GET /v1/authorizations/status", "GET /v1/authorizations/current", "POST /v1/ingest/health-auto-export",
        "POST /v1/samples", "DELETE /v1/samples", "DELETE /v1/samples/{uuid}", "POST /v1/ingest/imu",
        "POST /v1/ingest/imu/{session}/end", "GET /v1/pedometer", "GET /v1/types", "GET /v1/types/{id}",
        "POST /v1/workout-sessions", "GET /v1/workout-sessions/{id}", "POST /v1/workout-sessions/{id}/pause",
        "POST /v1/workout-sessions/{id}/resume", "POST /v1/workout-sessions/{id}/end",
        "POST /v1/session", "POST /v1/people/activate", "POST /v1/users/{id}/invitation",
        "POST /v1/authorization-requests", "POST /v1/authorization-requests/token",
        "GET /v1/users", "GET /v1/users/{id}/authorizations", "DELETE /v1/users/{id}",
        // Subscriptions, not data: the pages they deliver are read as /v1/changes reads them
        // (WebhookDeliveryTests.aTypeTheTokenMayNotReadNeverAppears, Tests/e2e/webhooks.py).
        "POST /v1/webhooks", "GET /v1/webhooks", "DELETE /v1/webhooks/{id}", "GET /v1/webhooks/{id}/deliveries",
    ]

    /// The check of a reading route for withheld `type`; nil where the route cannot concern the type
    /// (statistics of a workout, characteristics for steps...).
    static func readCheck(_ method: HTTPMethod, _ pattern: String, type: String, world: World) -> ReadCheck? {
        guard let owner = ownerValues[type] else { return nil }
        let own = ownValues[type]
        let isSample = own != nil
        let quantity = isSample && type != "workout"
        let range = "start=\(day)T00:00:00Z&end=\(day)T23:59:59Z"
        // The maximum, not the average: a reader's average would mix in other apps' values.
        let options = type == "heartRate" ? "discreteMax" : "cumulativeSum"
        switch (method, pattern) {
        case (.get, "/v1/samples") where isSample:
            return ReadCheck(target: "\(pattern)?type=\(type)", ownerMarker: owner, ownMarker: own)
        case (.get, "/v1/samples/{uuid}") where isSample:
            return ReadCheck(target: "/v1/samples/\(world.ownerUUIDs[type] ?? "")", ownerMarker: owner)
        case (.get, "/v1/sources") where isSample:
            return ReadCheck(target: "\(pattern)?type=\(type)", ownerMarker: "ownerapp", ownMarker: "probe-own-\(type)")
        case (.get, "/v1/sources/priority") where quantity:
            return ReadCheck(target: "\(pattern)?type=\(type)", ownerMarker: "ownerapp", ownMarker: "probe-own-\(type)")
        case (.get, "/v1/statistics") where quantity:
            return ReadCheck(target: "\(pattern)?type=\(type)&options=\(options)&\(range)", ownerMarker: owner, ownMarker: own)
        case (.get, "/v1/statistics/collection") where quantity:
            return ReadCheck(target: "\(pattern)?type=\(type)&options=\(options)&\(range)&anchor=\(day)T00:00:00Z&interval=PT1H",
                             ownerMarker: owner, ownMarker: own)
        case (.get, "/v1/summary") where ["stepCount", "distanceWalkingRunning", "activeEnergyBurned"].contains(type):
            return ReadCheck(target: "\(pattern)?date=\(day)", ownerMarker: owner, ownMarker: own)
        case (.get, "/v1/activity-summaries") where type == "activeEnergyBurned":
            return ReadCheck(target: "\(pattern)?start=\(day)&end=\(day)", ownerMarker: owner, ownMarker: own)
        case (.get, "/v1/workouts") where type == "workout":
            return ReadCheck(target: "\(pattern)?\(range)", ownerMarker: owner, ownMarker: own)
        case (.get, "/v1/workouts/{uuid}/route") where type == "workout":
            // Another app's workout is a 404 without read permission; "routes" is the 200's list.
            return ReadCheck(target: "/v1/workouts/\(world.ownerUUIDs[type] ?? "")/route", ownerMarker: #""routes""#)
        case (.get, "/v1/export") where isSample:
            return ReadCheck(target: "\(pattern)?types=\(type)", ownerMarker: owner, ownMarker: own)
        case (.get, "/v1/changes") where isSample:
            return ReadCheck(target: "\(pattern)?types=\(type)", ownerMarker: owner, ownMarker: own)
        case (.get, "/v1/changes/stream") where isSample:
            return ReadCheck(target: "\(pattern)?types=\(type)&anchor=\(world.startAnchors[type] ?? "")",
                             ownerMarker: owner, ownMarker: own, eventStream: true)
        case (.get, "/v1/characteristics") where type == "dateOfBirth":
            return ReadCheck(target: pattern, ownerMarker: owner)
        case (.get, "/v1/heart-rate/zones") where type == "dateOfBirth":
            // The age comes from the date of birth only when the token may read it; without, the
            // age is missing (400), exactly as for a user who never set one.
            return ReadCheck(target: "\(pattern)?goal=cardio", ownerMarker: #""method""#)
        default:
            return nil
        }
    }

    /// Whether a route reads typed data for some withheld type (so it must have checks).
    static func readsTypedData(_ method: HTTPMethod, _ pattern: String, world: World) -> Bool {
        types.contains { readCheck(method, pattern, type: $0, world: world) != nil }
    }

    /// The answer's text; a finite stream (the export) is read to its end, an event stream until
    /// `until` appears in it (or a time limit passes).
    static func readText(_ world: World, _ check: ReadCheck, token: String, until marker: String) -> String {
        var fields = HTTPHeaders()
        fields.add("Host", "test")
        fields.add("Authorization", "Bearer \(token)")
        let result = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        world.server.application.respond(to: HTTPRequest(method: .get, target: check.target, headers: fields),
                                         connection: ConnectionInfo(id: 9, remoteAddress: "127.0.0.1")) { response in
            result.withLock { $0 = response }
            done.signal()
        }
        done.wait()
        guard let response = result.withLock({ $0 }) else { return "" }
        switch response.body {
        case .bytes(let bytes):
            return String(decoding: bytes, as: UTF8.self)
        case .stream(let producer) where check.eventStream:
            let output = RecordingBodyStream()
            producer(output)
            output.waitUntil { $0.text.contains(marker) }
            return output.text
        case .stream(let producer), .sizedStream(_, let producer):
            let output = CollectingBodyStream()
            producer(output)
            return String(decoding: output.waitForBody(), as: UTF8.self)
        }
    }

    @Test func everyReadRouteShowsOtherAppsDataOnlyWithReadPermission() throws {
        let world = try World()
        let access = world.server.application.routeAccess
        for route in world.server.application.registeredRoutes {
            let name = "\(route.method.rawValue) \(route.pattern)"
            // A person's routes take no app token: the person reads all of their own data
            // (PersonSessionTests and the person's read-route tests cover them).
            if access[name] == .person { continue }
            if !Self.routesWithoutTypedReads.contains(name) && !Self.readsTypedData(route.method, route.pattern, world: world) {
                Issue.record("\(name) has no read-privacy check (and is not listed as reading no typed data)")
            }
        }
        for type in Self.types {
            // The control first, before the probe adds a sample of its own that would change sums.
            let reader = world.server.token(user: world.alice, app: "reader-\(type)", read: Self.everything, share: [])
            let probe = world.server.token(user: world.alice, app: "probe-own-\(type)",
                                           read: Self.everything.filter { $0 != type }, share: Self.everything)
            let checks = world.server.application.registeredRoutes.compactMap {
                Self.readCheck($0.method, $0.pattern, type: type, world: world)
            }
            #expect(!checks.isEmpty, "no route reads \(type)")
            for check in checks {
                let text = Self.readText(world, check, token: reader, until: check.ownerMarker)
                #expect(text.contains(check.ownerMarker), "\(check.target) with read \(type) lacks the owner's data: \(text)")
            }
            if Self.ownValues[type] != nil {
                let uuid = "cccccccc-0000-4000-8000-\(String(repeating: "0", count: 11))\(Self.sampleTypes.firstIndex(of: type) ?? 0)"
                let saved = world.server.request(.post, "/v1/samples", token: probe,
                                                 json: #"{"samples":[\#(Self.sample(type, uuid: uuid, owner: false, own: true))]}"#)
                #expect(saved.status == 201, "\(saved.text)")
            }
            for check in checks {
                let text = Self.readText(world, check, token: probe, until: check.ownMarker ?? check.ownerMarker)
                let label = "\(check.target) without read \(type)"
                #expect(!text.contains(check.ownerMarker), "\(label) shows the owner's data: \(text)")
                if let own = check.ownMarker { #expect(text.contains(own), "\(label) lacks the app's own data: \(text)") }
            }
        }
    }
}
