import Foundation
import HTTP
import JSON
import Testing
@testable import HealthAPI

/// `POST /v1/ingest/health-auto-export` through the application, with fixtures written from the
/// app's published format.
@Suite("Health Auto Export route")
struct HealthAutoExportAPITests {
    static let path = "/v1/ingest/health-auto-export"
    static let allTypes = ["stepCount", "distanceWalkingRunning", "activeEnergyBurned", "heartRate", "restingHeartRate", "bodyMass",
                           "oxygenSaturation", "bloodGlucose", "bloodPressure", "bloodPressureSystolic", "bloodPressureDiastolic",
                           "sleepAnalysis", "workout", "workoutRoute", "headache", "stateOfMind"]

    static func fixture(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/health-auto-export/\(name)")
        return try String(contentsOf: url, encoding: .utf8)
    }

    func counts(_ reply: TestServer.Reply, _ key: String) -> [String: Int] {
        var table: [String: Int] = [:]
        for member in reply[key]?.objectValue?.members ?? [] { table[member.key] = Int(member.value.numberValue ?? -1) }
        return table
    }

    @Test("a payload is saved once; posting it again saves nothing and the statistics stay the same")
    func idempotent() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "health-auto-export", read: Self.allTypes, share: Self.allTypes)
        let body = try Self.fixture("metrics-aggregated.json")
        let first = server.request(.post, Self.path, token: token, json: body)
        #expect(first.status == 200, "\(first.text)")
        // 3 steps, 2 distance, 1 energy, 2 heart rate, 1 resting, 1 mass, 1 SpO2, 1 glucose, 1 pressure, 5 sleep,
        // 1 symptom, 1 state of mind.
        #expect(first["saved"]?.numberValue == 20)
        #expect(first["duplicates"]?.numberValue == 0)
        #expect(counts(first, "unmapped") == ["physical_effort": 2])
        #expect(counts(first, "refused").isEmpty)

        let statistics = "/v1/statistics?type=stepCount&options=cumulativeSum&start=2024-02-06T00:00:00-08:00&end=2024-02-07T00:00:00-08:00"
        let before = server.request(.get, statistics, token: token)
        #expect(before["sum"]?.numberValue == 200)

        let second = server.request(.post, Self.path, token: token, json: body)
        #expect(second.status == 200)
        #expect(second["saved"]?.numberValue == 0)
        #expect(second["duplicates"]?.numberValue == 20)
        #expect(server.request(.get, statistics, token: token).body == before.body)

        // The day bucket in the user's zone holds all three step points, including 23:59 local.
        let daily = server.request(.get, "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D"
            + "&timeZone=America/Los_Angeles&start=2024-02-06T00:00:00-08:00&end=2024-02-07T00:00:00-08:00", token: token)
        #expect(daily["buckets"]?.arrayValue?.first?.objectValue?["sum"]?.numberValue == 200)

        // Blood pressure is a correlation with its two objects; sleep stages are category samples.
        let pressure = server.request(.get, "/v1/samples?type=bloodPressure", token: token)
        #expect(pressure["samples"]?.arrayValue?.first?.objectValue?["objects"]?.arrayValue?.count == 2)
        let sleep = server.request(.get, "/v1/samples?type=sleepAnalysis", token: token)
        #expect(sleep["samples"]?.arrayValue?.compactMap { $0.objectValue?["value"]?.stringValue }
                == ["inBed", "asleepCore", "asleepDeep", "asleepREM", "awake"])
    }

    @Test("workouts v1 and v2 are saved with totals, heart rate and routes; GET /v1/workouts/{uuid}/route returns the route")
    func workouts() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "hae", read: Self.allTypes, share: Self.allTypes)
        let v1 = server.request(.post, Self.path, token: token, json: try Self.fixture("workouts-v1.json"))
        #expect(v1.status == 200)
        // The workout, its two heart-rate points and its route.
        #expect(v1["saved"]?.numberValue == 4)
        #expect(counts(v1, "unmapped").isEmpty)
        let v2 = server.request(.post, Self.path, token: token, json: try Self.fixture("workouts-v2.json"))
        #expect(v2["saved"]?.numberValue == 5)
        let again = server.request(.post, Self.path, token: token, json: try Self.fixture("workouts-v2.json"))
        #expect(again["saved"]?.numberValue == 0 && again["duplicates"]?.numberValue == 5)
        let workouts = server.request(.get, "/v1/samples?type=workout", token: token)["samples"]?.arrayValue ?? []
        #expect(workouts.compactMap { $0.objectValue?["activityType"]?.stringValue } == ["walking", "running", "traditionalStrengthTraining"])
        let run = workouts[1].objectValue
        #expect(run?["totalDistance"]?.objectValue?["value"]?.numberValue == 5200)
        #expect(run?["totalEnergyBurned"]?.objectValue?["value"]?.numberValue == 350)

        let runUUID = try #require(run?["uuid"]?.stringValue)
        let route = server.request(.get, "/v1/workouts/\(runUUID)/route", token: token)
        #expect(route.status == 200, "\(route.text)")
        #expect(route["workout"]?.stringValue == runUUID)
        let routes = route["routes"]?.arrayValue ?? []
        #expect(routes.count == 1)
        let locations = routes.first?.objectValue?["locations"]?.arrayValue ?? []
        #expect(locations.count == 2)
        let first = locations.first?.objectValue
        #expect(first?["latitude"]?.numberValue == 37.7749 && first?["longitude"]?.numberValue == -122.4194)
        #expect(first?["speed"]?.numberValue == 2.9 && first?["course"]?.numberValue == 90)
        #expect(first?["date"]?.stringValue == "2024-02-06T15:00:02.000Z")
        // The route is a sample of its own too (HKSeriesType.workoutRoute), linked by the workout's uuid.
        let samples = server.request(.get, "/v1/samples?type=workoutRoute", token: token)["samples"]?.arrayValue ?? []
        let linked = samples.compactMap { $0.objectValue?["workout"]?.stringValue }
        #expect(linked.contains(runUUID))
        // The lifting workout has no route; a uuid that is no workout is a 404.
        let lift = try #require(workouts[2].objectValue?["uuid"]?.stringValue)
        #expect(server.request(.get, "/v1/workouts/\(lift)/route", token: token)["routes"]?.arrayValue?.isEmpty == true)
        let stepUUID = "0195c8a4-1f00-7000-8000-000000000001"
        #expect(server.request(.get, "/v1/workouts/\(stepUUID)/route", token: token).status == 404)
        #expect(server.request(.get, "/v1/workouts/not-a-uuid/route", token: token).status == 400)
        // Heart rate during the run is linked by time: GET /v1/workouts summarizes it.
        let listed = server.request(.get, "/v1/workouts?start=2024-02-06T00:00:00Z&end=2024-02-07T00:00:00Z", token: token)
        let listedRun = listed["workouts"]?.arrayValue?.first { $0.objectValue?["uuid"]?.stringValue == runUUID }?.objectValue
        #expect(listedRun?["heartRate"]?.objectValue?["readings"]?.numberValue == 2)
    }

    @Test("types the token may not share are refused and listed; the rest is saved")
    func refused() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "hae", read: [], share: ["stepCount", "bloodPressure", "bloodPressureSystolic"])
        let reply = server.request(.post, Self.path, token: token, json: try Self.fixture("metrics-aggregated.json"))
        #expect(reply.status == 200)
        #expect(reply["saved"]?.numberValue == 3)
        #expect(counts(reply, "refused") == ["walking_running_distance": 2, "active_energy": 1, "heart_rate": 2, "resting_heart_rate": 1,
                                             "weight_body_mass": 1, "blood_oxygen_saturation": 1, "blood_glucose": 1,
                                             "blood_pressure": 1, "sleep_analysis": 5, "symptoms": 1, "stateOfMind": 1])
    }

    @Test("malformed payloads are 400s naming the field, and nothing is saved")
    func malformed() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "hae", read: ["stepCount"], share: ["stepCount"])
        let body = #"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"2024-02-06 07:00:00 -0800","qty":5},{"date":"2024-02-06 07:01:00","qty":6}]}]}}"#
        let reply = server.request(.post, Self.path, token: token, json: body)
        #expect(reply.status == 400)
        #expect(reply.code == "errorInvalidArgument")
        #expect(reply["errors"]?.arrayValue?.first?.objectValue?["field"]?.stringValue == "data.metrics[0].data[1].date")
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: token)["samples"]?.arrayValue?.isEmpty == true)

        let notJSON = server.request(.post, Self.path, token: token, json: #"{"data":"#)
        #expect(notJSON.status == 400)
        #expect(notJSON["errors"]?.arrayValue?.first?.objectValue?["field"]?.stringValue == "body")
        let badInterval = server.request(.post, Self.path + "?interval=weeks", token: token, json: #"{"data":{}}"#)
        #expect(badInterval.status == 400)
        #expect(badInterval["errors"]?.arrayValue?.first?.objectValue?["field"]?.stringValue == "interval")
        let csv = server.request(.post, Self.path, token: token, json: nil, headers: [("Content-Type", "text/csv")])
        #expect(csv.status == 415)
        #expect(server.request(.post, Self.path, json: #"{"data":{}}"#).status == 401)
        #expect(server.request(.post, Self.path, token: TestServer.adminToken, json: #"{"data":{}}"#).status == 403)
    }

    @Test("the route has its own body limit, with a hint in the 413")
    func bodyLimit() {
        var limits = HTTPLimits(maxBodyLength: 1_000)
        limits.bodyLimitOverrides = [HealthAutoExportRoutes.bodyLimit(5_000)]
        func parse(_ target: String, length: Int) -> HTTPParserEvent? {
            var parser = HTTPRequestParser(limits: limits)
            parser.append(contentsOf: Array("POST \(target) HTTP/1.1\r\nHost: x\r\nContent-Length: \(length)\r\n\r\n".utf8))
            return parser.next()
        }
        guard case .head? = parse(Self.path + "?interval=hours", length: 4_000) else {
            Issue.record("the route's limit was not applied")
            return
        }
        guard case .error(let error)? = parse(Self.path, length: 6_000) else {
            Issue.record("over the route's limit was accepted")
            return
        }
        #expect(error.status == .contentTooLarge)
        #expect(error.detail.contains("5000 bytes") && error.detail.contains("Health Auto Export"))
        guard case .error(let other)? = parse("/v1/samples", length: 4_000) else {
            Issue.record("other routes kept the larger limit")
            return
        }
        #expect(other.detail == "The request body is larger than 1000 bytes.")
    }
}
