import Foundation
import HealthdCommandLine
import JSON
import Testing
@testable import HealthAPI

/// Workout routes (HKSeriesType.workoutRoute) through POST /v1/samples, GET /v1/samples, the
/// export, and GET /v1/workouts/{uuid}/route.
@Suite("Workout routes")
struct WorkoutRouteTests {
    static let workoutUUID = "0195c8a4-1f00-7000-8000-0000000000a1"
    static let routeUUID = "0195c8a4-1f00-7000-8000-0000000000a2"

    static func batch(latitude: String = "51.5007") -> String {
        #"""
        {"samples":[
          {"uuid":"\#(workoutUUID)","type":"workout","activityType":"running","start":"2026-03-08T09:00:00+00:00","end":"2026-03-08T09:30:00+00:00"},
          {"uuid":"\#(routeUUID)","type":"workoutRoute","workout":"\#(workoutUUID)","start":"2026-03-08T09:00:00+00:00","end":"2026-03-08T09:29:00+00:00",
           "locations":[{"date":"2026-03-08T09:00:00Z","latitude":\#(latitude),"longitude":-0.1246,"altitude":11,"speed":3.1,"course":45,"horizontalAccuracy":4},
                        {"date":"2026-03-08T09:29:00Z","latitude":51.5033,"longitude":-0.1196}]}]}
        """#
    }

    @Test("a route saved with its workout comes back with its locations, in the export too")
    func roundTrip() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "runner", read: ["workout", "workoutRoute"], share: ["workout", "workoutRoute"])
        let saved = server.request(.post, "/v1/samples", token: token, json: Self.batch())
        #expect(saved.status == 201, "\(saved.text)")

        let sample = server.request(.get, "/v1/samples/\(Self.routeUUID)", token: token)
        #expect(sample["workout"]?.stringValue == Self.workoutUUID)
        let locations = sample["locations"]?.arrayValue ?? []
        #expect(locations.count == 2)
        #expect(locations.first?.objectValue?["course"]?.numberValue == 45)
        // Unknown fields stay unknown rather than becoming zeros.
        #expect(locations.last?.objectValue?["speed"] == nil && locations.last?.objectValue?["altitude"] == nil)

        let route = server.request(.get, "/v1/workouts/\(Self.workoutUUID)/route", token: token)
        #expect(route["routes"]?.arrayValue?.first?.objectValue?["uuid"]?.stringValue == Self.routeUUID)
        #expect(route["routes"]?.arrayValue?.first?.objectValue?["locations"]?.arrayValue?.count == 2)

        // A sample's JSON is an export line (both are SampleCodec.write): restoring it gives the same route.
        let restored = try HealthdExportLine.decode(ArraySlice(sample.body))
        guard case .workoutRoute(let restoredRoute) = restored.sample.content else {
            Issue.record("not a route: \(restored.sample.content)")
            return
        }
        #expect(restoredRoute.workout.lowercasedString == Self.workoutUUID)
        #expect(restoredRoute.locations.map(\.latitude) == [51.5007, 51.5033])
        #expect(restoredRoute.locations.first?.horizontalAccuracy == 4 && restoredRoute.locations.last?.course == nil)
    }

    @Test("a location off the globe, out of the route's time, or a route without its workout is a 400 naming the field")
    func invalid() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "runner", read: [], share: ["workout", "workoutRoute"])
        let offGlobe = server.request(.post, "/v1/samples", token: token, json: Self.batch(latitude: "95"))
        #expect(offGlobe.status == 400)
        #expect(offGlobe.text.contains("samples[1].locations[0].latitude"))
        let late = Self.batch().replacingOccurrences(of: #""date":"2026-03-08T09:29:00Z""#, with: #""date":"2026-03-08T09:45:00Z""#)
        let outside = server.request(.post, "/v1/samples", token: token, json: late)
        #expect(outside.status == 400)
        #expect(outside.text.contains("locations[1].date"))
        let orphan = Self.batch().replacingOccurrences(of: #""workout":"\#(Self.workoutUUID)","#, with: "")
        #expect(server.request(.post, "/v1/samples", token: token, json: orphan).status == 400)
    }
}

@Suite("Workout route pages")
struct WorkoutRoutePageTests {
    /// One route of one location for the same workout, starting at 09:`minute` on 2026-03-08.
    static func route(atMinute minute: Int) -> String {
        let minute = String(format: "%02d", minute)
        return #"""
            {"type":"workoutRoute","workout":"0195c8a4-1f00-7000-8000-0000000000a1","start":"2026-03-08T09:\#(minute):00Z",
             "locations":[{"date":"2026-03-08T09:\#(minute):00Z","latitude":51.5,"longitude":-0.12}]}
            """#
    }

    @Test("routes come at most 16 a page, and paging with next reaches every one")
    func pages() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "runner", read: ["workoutRoute"], share: ["workout", "workoutRoute"])
        var samples: [String] = []
        for index in 0..<20 {
            samples.append(Self.route(atMinute: index))
        }
        #expect(server.request(.post, "/v1/samples", token: token, json: #"{"samples":[\#(samples.joined(separator: ","))]}"#).status == 201)
        let first = server.request(.get, "/v1/samples?type=workoutRoute&limit=100", token: token)
        #expect(first["samples"]?.arrayValue?.count == 16)
        let next = try #require(first["next"]?.stringValue)
        let second = server.request(.get, "/v1/samples?type=workoutRoute&limit=100&cursor=\(next)", token: token)
        #expect(second["samples"]?.arrayValue?.count == 4)
        #expect(second["next"] == .null)

        // The export writes a page as soon as it holds 16 routes, and still every route once.
        let stored = try #require(try server.store.user(named: "jane"))
        var pages: [Int] = []
        try ExportScope(.wholeUser(stored)).forEachPage(from: server.store) { bytes in
            pages.append(bytes.filter { $0 == 0x0A }.count)
            return true
        }
        #expect(pages == [16, 4])
    }

    @Test("a page of changes holds at most 16 routes too, and following its anchor lists every change once")
    func changePages() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "runner", read: ["workoutRoute", "stepCount"],
                                 share: ["workout", "workoutRoute", "stepCount"])
        var samples: [String] = []
        for index in 0..<20 {
            samples.append(Self.route(atMinute: index))
            let minute = String(format: "%02d", index)
            // Steps between the routes: the cap must not hold back or drop the other types.
            samples.append(#"{"type":"stepCount","start":"2026-03-08T09:\#(minute):00Z","end":"2026-03-08T09:\#(minute):30Z","value":10,"unit":"count"}"#)
        }
        #expect(server.request(.post, "/v1/samples", token: token, json: #"{"samples":[\#(samples.joined(separator: ","))]}"#).status == 201)

        var seen: [String] = []
        var routesPerPage: [Int] = []
        var anchor: String?
        for _ in 0..<10 {
            let path = "/v1/changes?limit=1000" + (anchor.map { "&anchor=\($0)" } ?? "")
            let page = server.request(.get, path, token: token)
            #expect(page.status == 200, "\(page.text)")
            let added = page["added"]?.arrayValue ?? []
            routesPerPage.append(added.filter { $0.objectValue?["type"]?.stringValue == "workoutRoute" }.count)
            seen += added.compactMap { $0.objectValue?["uuid"]?.stringValue }
            anchor = page["anchor"]?.stringValue
            if page["more"] != .bool(true) { break }
        }
        #expect(routesPerPage == [16, 4])
        #expect(seen.count == 40 && Set(seen).count == 40)
    }
}

extension WorkoutRouteTests {
    /// A route of `count` locations half a second apart from 09:00, linked to the workout.
    static func longRoute(uuid: String, count: Int) -> String {
        var locations: [String] = []
        locations.reserveCapacity(count)
        for index in 0 ..< count {
            let seconds = index / 2 % 60, minutes = index / 120 % 60, hours = 9 + index / 7200
            let date = "2026-03-08T" + [hours, minutes, seconds].map { $0 < 10 ? "0\($0)" : "\($0)" }.joined(separator: ":")
                + (index % 2 == 0 ? ".000Z" : ".500Z")
            locations.append(#"{"date":"\#(date)","latitude":51.5,"longitude":-0.12}"#)
        }
        return #"{"samples":[{"uuid":"\#(uuid)","type":"workoutRoute","workout":"\#(workoutUUID)","start":"2026-03-08T09:00:00+00:00","#
            + #""end":"2026-03-08T23:00:00+00:00","locations":[\#(locations.joined(separator: ","))]}]}"#
    }

    @Test("the route answer is paged by locations: two routes of 60,000 come one a page, and a cursor of another workout is a 400")
    func routeAnswerIsPagedByLocations() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "runner", read: ["workout", "workoutRoute"], share: ["workout", "workoutRoute"])
        let workout = #"{"samples":[{"uuid":"\#(Self.workoutUUID)","type":"workout","activityType":"running","#
            + #""start":"2026-03-08T09:00:00+00:00","end":"2026-03-08T23:00:00+00:00"}]}"#
        #expect(server.request(.post, "/v1/samples", token: token, json: workout).status == 201)
        let routeUUIDs = ["0195c8a4-1f00-7000-8000-0000000000b1", "0195c8a4-1f00-7000-8000-0000000000b2"]
        for uuid in routeUUIDs {
            let saved = server.request(.post, "/v1/samples", token: token, json: Self.longRoute(uuid: uuid, count: 60_000))
            #expect(saved.status == 201, "\(saved.text.prefix(300))")
        }
        let first = server.request(.get, "/v1/workouts/\(Self.workoutUUID)/route", token: token)
        #expect(first.status == 200)
        #expect(first["routes"]?.arrayValue?.count == 1)
        #expect(first["routes"]?.arrayValue?.first?.objectValue?["locations"]?.arrayValue?.count == 60_000)
        guard let cursor = first["next"]?.stringValue else {
            Issue.record("no next cursor: \(first.text.prefix(200))")
            return
        }
        let second = server.request(.get, "/v1/workouts/\(Self.workoutUUID)/route?cursor=\(cursor)", token: token)
        #expect(second["routes"]?.arrayValue?.count == 1)
        let uuids = [first, second].compactMap { $0["routes"]?.arrayValue?.first?.objectValue?["uuid"]?.stringValue }
        #expect(uuids == routeUUIDs)
        #expect(second["next"] == .null)
        let otherWorkout = "0195c8a4-1f00-7000-8000-0000000000c1"
        #expect(server.request(.get, "/v1/workouts/\(otherWorkout)/route?cursor=\(cursor)", token: token).status == 404)
        #expect(server.request(.get, "/v1/workouts/\(Self.workoutUUID)/route?cursor=x\(cursor)", token: token).status == 400)
    }
}
