import Testing
import HealthModel
import JSON
@testable import HealthAPI

@Suite struct WorkoutHeartRateTests {
    let minute: Int64 = 60_000

    @Test func activeIntervalsLeaveOutPausedSpells() {
        let events = [WorkoutEvent(type: .resume, date: 12 * minute), WorkoutEvent(type: .pause, date: 10 * minute),
                      WorkoutEvent(type: .lap, date: 15 * minute), WorkoutEvent(type: .pause, date: 25 * minute)]
        let active = WorkoutHeartRate.activeIntervals(start: 0, end: 30 * minute, events: events)
        #expect(active.map { [$0.start, $0.end] } == [[0, 10 * minute], [12 * minute, 25 * minute]], "a pause never resumed runs to the end")
        #expect(WorkoutHeartRate.activeIntervals(start: 0, end: 30 * minute, events: []).map { [$0.start, $0.end] } == [[0, 30 * minute]])
    }

    @Test func eachReadingHoldsUntilTheNextForAtMostFiveMinutes() {
        let readings: [(date: Int64, bpm: Double)] = [(0, 100), (2 * minute, 130), (4 * minute, 150), (5 * minute, 125),
                                                      (20 * minute, 128)]
        let active = [(start: Int64(0), end: 30 * minute)]
        // In 120-140: 2-4 (130), 5-10 (125, held 5 minutes, not until 20), 20-25 (128).
        #expect(WorkoutHeartRate.timeInZone(readings, active: active, low: 120, high: 140) == 12 * minute)
        // The bounds belong to the zone.
        #expect(WorkoutHeartRate.timeInZone(readings, active: active, low: 130, high: 150) == 3 * minute)
        // Paused time counts in no zone.
        let paused = [(start: Int64(0), end: 3 * minute), (start: 6 * minute, end: 30 * minute)]
        #expect(WorkoutHeartRate.timeInZone(readings, active: paused, low: 120, high: 140) == 10 * minute)
        #expect(WorkoutHeartRate.timeInZone([], active: active, low: 0, high: 300) == 0)
    }

    @Test func summaryOfTheReadingsInsideTheWorkout() throws {
        let summary = try #require(WorkoutHeartRate.summary([(0, 90), (minute, 120), (2 * minute, 150), (9 * minute, 200)],
                                                            start: 0, end: 2 * minute))
        #expect(summary == WorkoutHeartRate.Summary(average: 120, minimum: 90, maximum: 150, readings: 3))
        #expect(WorkoutHeartRate.summary([(9 * minute, 200)], start: 0, end: minute) == nil)
    }
}

@Suite struct WorkoutListAPITests {
    static let workout = #"""
        {"type":"workout","activityType":"running","start":"2026-03-08T07:00:00Z","end":"2026-03-08T07:30:00Z",
         "totalEnergyBurned":{"value":300,"unit":"kcal"},"totalDistance":{"value":5,"unit":"km"},
         "events":[{"type":"pause","date":"2026-03-08T07:10:00Z"},{"type":"resume","date":"2026-03-08T07:12:00Z"}]}
        """#

    private func seeded() throws -> (TestServer, reader: String, watch: String, blind: String) {
        let server = try TestServer()
        let user = server.createUser("wendy")
        let watch = server.token(user: user, app: "watch", read: [], share: ["workout", "heartRate"])
        let reader = server.token(user: user, app: "dashboard", read: ["workout", "heartRate", "dateOfBirth"], share: [])
        let blind = server.token(user: user, app: "other", read: [], share: [])
        // Readings every 2 minutes from 07:00 to 07:28: 100, 110, ..., 170 bpm, then 170s.
        var readings: [String] = []
        for index in 0..<15 {
            let bpm = min(100 + 10 * index, 170)
            readings.append(#"{"type":"heartRate","value":\#(bpm),"unit":"count/min","start":"2026-03-08T07:\#(index * 2 < 10 ? "0" : "")\#(index * 2):00Z"}"#)
        }
        let body = #"{"samples":[\#(Self.workout),\#(readings.joined(separator: ","))]}"#
        #expect(server.request(.post, "/v1/samples", token: watch, json: body).status == 201)
        return (server, reader, watch, blind)
    }

    @Test func listsTotalsDurationHeartRateAndTimeInZone() throws {
        let (server, reader, _, _) = try seeded()
        // Age 40: maximum 180, fatBurn 90-126 (no resting rate stored).
        let reply = server.request(.get, "/v1/workouts?start=2026-03-08T00:00:00Z&end=2026-03-09T00:00:00Z&age=40&goal=fatBurn",
                                   token: reader)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply["zone"]?.objectValue?["low"]?.numberValue == 90 && reply["zone"]?.objectValue?["high"]?.numberValue == 126)
        let workout = try #require(reply["workouts"]?.arrayValue?.first?.objectValue)
        #expect(workout["activityType"]?.stringValue == "running")
        #expect(workout["duration"]?.numberValue == Double(28 * 60), "30 minutes less a 2-minute pause")
        #expect(workout["totalDistance"]?.numberValue == 5_000 && workout["totalEnergyBurned"]?.numberValue == 300)
        let heart = try #require(workout["heartRate"]?.objectValue)
        #expect(heart["minimum"]?.numberValue == 100 && heart["maximum"]?.numberValue == 170 && heart["readings"]?.numberValue == 15)
        // 100, 110, 120 at 07:00, 07:02, 07:04 are in 90-126, each held 2 minutes: 6 minutes.
        #expect(workout["timeInZone"]?.numberValue == Double(6 * 60))
        #expect(workout["source"]?.stringValue == "watch")
    }

    @Test func withoutAKnownAgeThereIsNoZoneButStillAList() throws {
        let (server, reader, _, _) = try seeded()
        let reply = server.request(.get, "/v1/workouts?start=2026-03-08T00:00:00Z&end=2026-03-09T00:00:00Z", token: reader)
        #expect(reply.status == 200 && reply["zone"]?.isNull == true)
        #expect(reply["workouts"]?.arrayValue?.first?.objectValue?["timeInZone"]?.isNull == true)
        // With a stored date of birth the zone comes from it.
        let put = server.request(.put, "/v1/characteristics", token: TestServer.adminToken,
                                 json: #"{"user":"wendy","dateOfBirth":"1986-01-01"}"#)
        #expect(put.status == 200, "\(put.text)")
        let stored = server.request(.get, "/v1/workouts?start=2026-03-08T00:00:00Z&end=2026-03-09T00:00:00Z&goal=cardio", token: reader)
        #expect(stored["zone"]?.objectValue?["goal"]?.stringValue == "cardio")
        #expect(stored["workouts"]?.arrayValue?.first?.objectValue?["timeInZone"]?.numberValue != nil)
    }

    @Test func readPrivacyAndBadInput() throws {
        let (server, _, watch, blind) = try seeded()
        let range = "start=2026-03-08T00:00:00Z&end=2026-03-09T00:00:00Z"
        // Neither readable nor its own: no workouts at all.
        #expect(server.request(.get, "/v1/workouts?\(range)", token: blind)["workouts"]?.arrayValue?.count == 0)
        // The app that saved them sees its own.
        #expect(server.request(.get, "/v1/workouts?\(range)", token: watch)["workouts"]?.arrayValue?.count == 1)
        for bad in ["start=2026-03-08T00:00:00Z", "\(range)&goal=sprint", "\(range)&age=0", "\(range)&limit=0",
                    "start=2026-03-09T00:00:00Z&end=2026-03-08T00:00:00Z", "\(range)&extra=1"] {
            let reply = server.request(.get, "/v1/workouts?\(bad)", token: watch)
            #expect(reply.status == 400 && reply.code == "errorInvalidArgument", "\(bad)")
        }
        #expect(server.request(.get, "/v1/workouts?\(range)").status == 401)
    }
}

@Suite struct CurrentAuthorizationAPITests {
    /// POSTs an authorization with `extra` JSON members and returns the 201 answer.
    static func authorize(_ server: TestServer, user: String, app: String, extra: String = "") -> TestServer.Reply {
        let body = #"{"user":"\#(user)","app":"\#(app)","read":["stepCount","dateOfBirth"],"share":["heartRate"]\#(extra)}"#
        return server.request(.post, "/v1/authorizations", token: TestServer.adminToken, json: body)
    }

    /// As in HealthKit, read permission is never disclosed by default: the token learns its share list only.
    @Test func byDefaultATokenLearnsItsShareListButNotItsReadList() throws {
        let server = try TestServer()
        let user = server.createUser("gail")
        let created = Self.authorize(server, user: user, app: "phone")
        #expect(created.status == 201 && created["discloseRead"]?.boolValue == false)
        let token = try #require(created["token"]?.stringValue)
        let reply = server.request(.get, "/v1/authorizations/current", token: token)
        #expect(reply.status == 200)
        #expect(reply["app"]?.stringValue == "phone" && reply["user"]?.stringValue == user)
        #expect(reply["share"]?.arrayValue?.compactMap(\.stringValue) == ["heartRate"])
        #expect(reply["discloseRead"]?.boolValue == false)
        #expect(reply["read"] == nil, "no read list, not even an empty one")
        #expect(!reply.text.contains("stepCount") && !reply.text.contains("dateOfBirth"))
        #expect(server.request(.get, "/v1/authorizations/current").status == 401)
        #expect(server.request(.get, "/v1/authorizations/current?x=1", token: token).status == 400)
    }

    @Test func anOptedInTokenLearnsItsReadListToo() throws {
        let server = try TestServer()
        let user = server.createUser("gail")
        let created = Self.authorize(server, user: user, app: "dashboard", extra: #","discloseRead":true"#)
        #expect(created.status == 201 && created["discloseRead"]?.boolValue == true)
        let token = try #require(created["token"]?.stringValue)
        let reply = server.request(.get, "/v1/authorizations/current", token: token)
        #expect(reply.status == 200 && reply["discloseRead"]?.boolValue == true)
        #expect(reply["read"]?.arrayValue?.compactMap(\.stringValue) == ["dateOfBirth", "stepCount"])
        #expect(reply["share"]?.arrayValue?.compactMap(\.stringValue) == ["heartRate"])
        // An explicit false is the default.
        let plain = Self.authorize(server, user: user, app: "phone", extra: #","discloseRead":false"#)
        let plainToken = try #require(plain["token"]?.stringValue)
        #expect(server.request(.get, "/v1/authorizations/current", token: plainToken)["read"] == nil)
    }

    @Test func aFlagThatIsNotABooleanIsA400NamingIt() throws {
        let server = try TestServer()
        let user = server.createUser("gail")
        for bad in [#","discloseRead":"yes""#, #","discloseRead":1"#] {
            let reply = Self.authorize(server, user: user, app: "phone", extra: bad)
            #expect(reply.status == 400 && reply.text.contains("discloseRead"), "\(bad)")
        }
    }
}
