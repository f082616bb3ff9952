import Foundation
import Testing
import HTTP
import JSON
import HealthModel
import HealthStore
@testable import HealthAPI

/// alice with an iPhone app (reads and shares activity types) and a Watch app that shares but reads nothing.
struct StatisticsFixture {
    static let types = ["stepCount", "heartRate", "distanceWalkingRunning", "activeEnergyBurned", "appleExerciseTime",
                        "appleStandHour", "sleepAnalysis"]
    let server: TestServer
    let alice: String
    let phone: String
    let watch: String

    init() throws {
        server = try TestServer()
        alice = server.createUser("alice")
        phone = server.token(user: alice, app: "iphone", read: Self.types, share: Self.types)
        watch = server.token(user: alice, app: "watch", read: [], share: Self.types)
    }

    @discardableResult
    func save(_ token: String, _ samples: [String]) -> TestServer.Reply {
        let reply = server.request(.post, "/v1/samples", token: token, json: #"{"samples":[\#(samples.joined(separator: ","))]}"#)
        #expect(reply.status == 201, "\(reply.text)")
        return reply
    }

    static func quantity(_ type: String, _ value: Double, _ unit: String, _ start: String, _ end: String) -> String {
        #"{"type":"\#(type)","value":\#(value),"unit":"\#(unit)","start":"\#(start)","end":"\#(end)"}"#
    }

    func get(_ token: String, _ target: String) -> TestServer.Reply { server.request(.get, target, token: token) }

    static func number(_ reply: TestServer.Reply, _ key: String) -> Double? { reply[key]?.numberValue }
}

@Suite struct StatisticsAPITests {
    static let window = "start=2024-05-01T00:00:00Z&end=2024-05-02T00:00:00Z"

    /// Both devices count the same walk; HealthKit's merge counts it once, from the higher-priority source.
    @Test func iPhoneAndWatchOverlapCountsOnce() throws {
        let f = try StatisticsFixture()
        f.save(f.phone, [StatisticsFixture.quantity("stepCount", 1000, "count", "2024-05-01T10:00:00Z", "2024-05-01T10:10:00Z")])
        f.save(f.watch, [StatisticsFixture.quantity("stepCount", 800, "count", "2024-05-01T10:00:00Z", "2024-05-01T10:10:00Z"),
                         StatisticsFixture.quantity("stepCount", 50, "count", "2024-05-01T11:00:00Z", "2024-05-01T11:01:00Z")])
        let merged = f.get(f.phone, "/v1/statistics?type=stepCount&options=cumulativeSum&\(Self.window)")
        #expect(merged.status == 200, "\(merged.text)")
        #expect(StatisticsFixture.number(merged, "sum") == 1050)
        #expect(merged["type"]?.stringValue == "stepCount")
        #expect(merged["unit"]?.stringValue == "count")
        #expect(merged["start"]?.stringValue == "2024-05-01T00:00:00.000Z")
        #expect(merged["sources"] == nil)
        #expect(merged["average"] == nil)

        let separate = f.get(f.phone, "/v1/statistics?type=stepCount&options=cumulativeSum,separateBySource&\(Self.window)")
        let sources = separate["sources"]?.arrayValue ?? []
        #expect(sources.count == 2)
        #expect(sources.first?.objectValue?["app"]?.stringValue == "iphone")
        #expect(sources.first?.objectValue?["sum"]?.numberValue == 1000)
        #expect(sources.last?.objectValue?["sum"]?.numberValue == 850)

        // Hourly buckets: the overlap hour counts the iPhone only; the pro-rated half hour splits it.
        let hourly = f.get(f.phone, "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=PT1H&start=2024-05-01T09:00:00Z&end=2024-05-01T12:00:00Z")
        let sums = (hourly["buckets"]?.arrayValue ?? []).map { $0.objectValue?["sum"]?.numberValue }
        #expect(sums == [nil, 1000, 50])
        let half = f.get(f.phone, "/v1/statistics?type=stepCount&options=cumulativeSum&start=2024-05-01T10:00:00Z&end=2024-05-01T10:05:00Z")
        #expect(StatisticsFixture.number(half, "sum") == 500)
    }

    @Test func dstDayBucketsInNewYorkCarryTheirOffsets() throws {
        let f = try StatisticsFixture()
        // One sample spanning the skipped hour's day boundary: 23:30 EST to 00:30 EST on 2024-03-10.
        f.save(f.phone, [StatisticsFixture.quantity("stepCount", 600, "count", "2024-03-09T23:30:00-05:00", "2024-03-10T00:30:00-05:00"),
                         StatisticsFixture.quantity("stepCount", 100, "count", "2024-03-10T23:00:00-04:00", "2024-03-10T23:10:00-04:00")])
        let reply = f.get(f.phone, "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&timeZone=America/New_York&start=2024-03-09T12:00:00-05:00&end=2024-03-11T12:00:00-04:00")
        #expect(reply.status == 200, "\(reply.text)")
        let buckets = (reply["buckets"]?.arrayValue ?? []).compactMap(\.objectValue)
        #expect(buckets.map { $0["start"]?.stringValue } == ["2024-03-09T00:00:00.000-05:00", "2024-03-10T00:00:00.000-05:00",
                                                             "2024-03-11T00:00:00.000-04:00"])
        #expect(buckets.map { $0["end"]?.stringValue } == ["2024-03-10T00:00:00.000-05:00", "2024-03-11T00:00:00.000-04:00",
                                                           "2024-03-12T00:00:00.000-04:00"])
        #expect(buckets.map { $0["sum"]?.numberValue } == [300, 400, nil])
        // The default anchor is the start of start's day in the zone; a bucket with no data has no value fields.
        #expect(buckets.last?["sum"] == nil)
    }

    @Test func optionMismatchAndBadParametersAre400() throws {
        let f = try StatisticsFixture()
        let cases = [
            "/v1/statistics?type=stepCount&options=discreteAverage&\(Self.window)",
            "/v1/statistics?type=heartRate&options=cumulativeSum&\(Self.window)",
            "/v1/statistics?type=stepCount&options=bogus&\(Self.window)",
            "/v1/statistics?type=stepCount&options=separateBySource&\(Self.window)",
            "/v1/statistics?type=stepCount&\(Self.window)",
            "/v1/statistics?type=stepCount&options=cumulativeSum&start=2024-05-01T00:00:00Z",
            "/v1/statistics?type=stepCount&options=cumulativeSum&start=2024-05-02T00:00:00Z&end=2024-05-01T00:00:00Z",
            "/v1/statistics?type=sleepAnalysis&options=cumulativeSum&\(Self.window)",
            "/v1/statistics?type=stepCount&options=cumulativeSum&unit=kg&\(Self.window)",
            "/v1/statistics?type=stepCount&options=cumulativeSum&bogus=1&\(Self.window)",
            "/v1/statistics/collection?type=stepCount&options=cumulativeSum&\(Self.window)",
            "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1X&\(Self.window)",
            "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&timeZone=Mars/Olympus&\(Self.window)",
            "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=PT1M&start=2000-01-01T00:00:00Z&end=2024-01-01T00:00:00Z",
        ]
        for target in cases {
            let reply = f.get(f.phone, target)
            #expect(reply.status == 400, "\(target): \(reply.text)")
            #expect(reply.code == "errorInvalidArgument", "\(target)")
        }
        let mismatch = f.get(f.phone, "/v1/statistics?type=stepCount&options=discreteAverage&\(Self.window)")
        #expect(mismatch.text.contains("discreteAverage") && mismatch.text.contains("cumulative"))
        #expect(f.get(f.phone, "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=P1D&timeZone=Mars/Olympus&\(Self.window)")
            .text.contains("Mars/Olympus"))
        #expect(f.server.request(.get, "/v1/statistics?type=stepCount&options=cumulativeSum&\(Self.window)").status == 401)
    }

    @Test func discreteFiguresUnitsAndMostRecent() throws {
        let f = try StatisticsFixture()
        f.save(f.phone, [StatisticsFixture.quantity("heartRate", 60, "count/min", "2024-05-01T08:00:00Z", "2024-05-01T08:00:00Z"),
                         StatisticsFixture.quantity("heartRate", 90, "count/min", "2024-05-01T09:00:00Z", "2024-05-01T09:00:00Z")])
        f.save(f.watch, [StatisticsFixture.quantity("heartRate", 120, "count/min", "2024-05-01T10:00:00-04:00", "2024-05-01T10:00:00-04:00")])
        let reply = f.get(f.phone, "/v1/statistics?type=heartRate&options=discreteAverage,discreteMin,discreteMax,mostRecent&\(Self.window)")
        #expect(StatisticsFixture.number(reply, "average") == 90)
        #expect(StatisticsFixture.number(reply, "minimum") == 60)
        #expect(StatisticsFixture.number(reply, "maximum") == 120)
        let recent = reply["mostRecent"]?.objectValue
        #expect(recent?["value"]?.numberValue == 120)
        #expect(recent?["start"]?.stringValue == "2024-05-01T14:00:00.000Z")
        #expect(reply["sum"] == nil)

        f.save(f.phone, [StatisticsFixture.quantity("distanceWalkingRunning", 1500, "m", "2024-05-01T10:00:00Z", "2024-05-01T10:20:00Z")])
        let km = f.get(f.phone, "/v1/statistics?type=distanceWalkingRunning&options=cumulativeSum&unit=km&\(Self.window)")
        #expect(StatisticsFixture.number(km, "sum") == 1.5)
        #expect(km["unit"]?.stringValue == "km")

        let empty = f.get(f.phone, "/v1/statistics?type=heartRate&options=discreteAverage,separateBySource&start=2020-01-01T00:00:00Z&end=2020-01-02T00:00:00Z")
        #expect(empty.status == 200)
        #expect(empty["average"] == nil)
        #expect(empty["sources"] == .array([]))
    }

    /// Without read permission an app's statistics cover its own samples only, in every form.
    @Test func readPrivacyLimitsFiguresToTheAppsOwnSamples() throws {
        let f = try StatisticsFixture()
        f.save(f.phone, [StatisticsFixture.quantity("stepCount", 1000, "count", "2024-05-01T10:00:00Z", "2024-05-01T10:10:00Z")])
        f.save(f.watch, [StatisticsFixture.quantity("stepCount", 800, "count", "2024-05-01T10:00:00Z", "2024-05-01T10:10:00Z"),
                         StatisticsFixture.quantity("stepCount", 5, "count", "2024-05-01T12:00:00Z", "2024-05-01T12:10:00Z")])
        let own = f.get(f.watch, "/v1/statistics?type=stepCount&options=cumulativeSum,separateBySource&\(Self.window)")
        #expect(StatisticsFixture.number(own, "sum") == 805)
        let sources = own["sources"]?.arrayValue ?? []
        #expect(sources.count == 1)
        #expect(sources.first?.objectValue?["app"]?.stringValue == "watch")
        let buckets = f.get(f.watch, "/v1/statistics/collection?type=stepCount&options=cumulativeSum&interval=PT1H&start=2024-05-01T10:00:00Z&end=2024-05-01T11:00:00Z")
        #expect(buckets["buckets"]?.arrayValue?.first?.objectValue?["sum"]?.numberValue == 800)
        // The priority order does not reveal the other app either.
        let order = f.get(f.watch, "/v1/sources/priority?type=stepCount")
        #expect(order["order"] == .array([.string("watch")]))
        // An app with no samples of its own sees no data at all.
        let stranger = f.server.token(user: f.alice, app: "stranger", read: [], share: [])
        let nothing = f.get(stranger, "/v1/statistics?type=stepCount&options=cumulativeSum&\(Self.window)")
        #expect(nothing.status == 200)
        #expect(nothing["sum"] == nil)
    }

    @Test func priorityChangeReachesTheCachedIndex() throws {
        let f = try StatisticsFixture()
        f.save(f.phone, [StatisticsFixture.quantity("stepCount", 1000, "count", "2024-05-01T10:00:00Z", "2024-05-01T10:10:00Z")])
        f.save(f.watch, [StatisticsFixture.quantity("stepCount", 800, "count", "2024-05-01T10:00:00Z", "2024-05-01T10:10:00Z")])
        let query = "/v1/statistics?type=stepCount&options=cumulativeSum&\(Self.window)"
        #expect(StatisticsFixture.number(f.get(f.phone, query), "sum") == 1000)
        #expect(f.get(f.phone, "/v1/sources/priority?type=stepCount")["order"] == .array([.string("iphone"), .string("watch")]))

        let put = f.server.request(.put, "/v1/sources/priority", token: TestServer.adminToken,
                                   json: #"{"user":"\#(f.alice)","type":"stepCount","order":["watch"]}"#)
        #expect(put.status == 200, "\(put.text)")
        #expect(put["order"] == .array([.string("watch"), .string("iphone")]))
        #expect(StatisticsFixture.number(f.get(f.phone, query), "sum") == 800)
        #expect(f.get(f.phone, "/v1/sources/priority?type=stepCount")["order"] == .array([.string("watch"), .string("iphone")]))

        let unknown = f.server.request(.put, "/v1/sources/priority", token: TestServer.adminToken,
                                       json: #"{"user":"\#(f.alice)","type":"stepCount","order":["watch","fitbit"]}"#)
        #expect(unknown.status == 400)
        #expect(unknown.text.contains("fitbit"))
        #expect(StatisticsFixture.number(f.get(f.phone, query), "sum") == 800)
        let byApp = f.server.request(.put, "/v1/sources/priority", token: f.phone,
                                     json: #"{"user":"\#(f.alice)","type":"stepCount","order":["iphone"]}"#)
        #expect(byApp.status == 403)
        let category = f.server.request(.put, "/v1/sources/priority", token: TestServer.adminToken,
                                        json: #"{"user":"\#(f.alice)","type":"sleepAnalysis","order":[]}"#)
        #expect(category.status == 400)
    }

    /// Saves and deletes between queries reach the cached index (catch-up by change sequence).
    @Test func writesAndDeletesBetweenQueriesAreExact() throws {
        let f = try StatisticsFixture()
        let query = "/v1/statistics?type=stepCount&options=cumulativeSum&\(Self.window)"
        #expect(f.get(f.phone, query)["sum"] == nil)
        let saved = f.save(f.phone, [StatisticsFixture.quantity("stepCount", 10, "count", "2024-05-01T10:00:00Z", "2024-05-01T10:01:00Z")])
        #expect(StatisticsFixture.number(f.get(f.phone, query), "sum") == 10)
        f.save(f.phone, [StatisticsFixture.quantity("stepCount", 5, "count", "2024-05-01T11:00:00Z", "2024-05-01T11:01:00Z")])
        let uuid = saved["saved"]?.arrayValue?.first?.stringValue ?? ""
        #expect(f.server.request(.delete, "/v1/samples/\(uuid)", token: f.phone).status == 204)
        #expect(StatisticsFixture.number(f.get(f.phone, query), "sum") == 5)
    }
}

@Suite struct SummaryAPITests {
    @Test func daySummaryAndWeekAverage() throws {
        let f = try StatisticsFixture()
        // Wednesday 2024-05-01 and Thursday 2024-05-02 in Seoul (+09:00).
        f.save(f.phone, [StatisticsFixture.quantity("stepCount", 3000, "count", "2024-05-01T08:00:00+09:00", "2024-05-01T08:30:00+09:00"),
                         StatisticsFixture.quantity("stepCount", 4000, "count", "2024-05-02T08:00:00+09:00", "2024-05-02T08:30:00+09:00"),
                         StatisticsFixture.quantity("distanceWalkingRunning", 2, "km", "2024-05-01T08:00:00+09:00", "2024-05-01T08:20:00+09:00"),
                         StatisticsFixture.quantity("activeEnergyBurned", 120, "kcal", "2024-05-01T08:00:00+09:00", "2024-05-01T08:30:00+09:00"),
                         StatisticsFixture.quantity("appleExerciseTime", 30, "min", "2024-05-01T08:00:00+09:00", "2024-05-01T08:30:00+09:00")])
        // The watch's copy of the same steps must not be counted twice.
        f.save(f.watch, [StatisticsFixture.quantity("stepCount", 2900, "count", "2024-05-01T08:00:00+09:00", "2024-05-01T08:30:00+09:00")])
        let day = f.get(f.phone, "/v1/summary?date=2024-05-01&timeZone=Asia/Seoul")
        #expect(day.status == 200, "\(day.text)")
        #expect(StatisticsFixture.number(day, "steps") == 3000)
        #expect(StatisticsFixture.number(day, "distance") == 2000)
        #expect(StatisticsFixture.number(day, "activeEnergy") == 120)
        #expect(StatisticsFixture.number(day, "exerciseTime") == 30)
        #expect(StatisticsFixture.number(day, "averagePace") == 0.6)  // 1,200 s over 2,000 m
        #expect(day["start"]?.stringValue == "2024-05-01T00:00:00.000+09:00")

        let week = f.get(f.phone, "/v1/summary?date=2024-05-02&timeZone=Asia/Seoul&period=week")
        #expect(StatisticsFixture.number(week, "steps") == 7000)
        #expect(week["start"]?.stringValue == "2024-04-29T00:00:00.000+09:00")  // Monday
        #expect(StatisticsFixture.number(week, "days") == 7)
        #expect(week["dailyAverage"]?.objectValue?["steps"]?.numberValue == 1000)

        let month = f.get(f.phone, "/v1/summary?date=2024-05-20&timeZone=Asia/Seoul&period=month")
        #expect(StatisticsFixture.number(month, "steps") == 7000)
        #expect(month["end"]?.stringValue == "2024-06-01T00:00:00.000+09:00")
        let empty = f.get(f.phone, "/v1/summary?date=2023-01-01&period=year")
        #expect(StatisticsFixture.number(empty, "steps") == 0)
        #expect(empty["averagePace"] == .null)

        #expect(f.get(f.phone, "/v1/summary?date=2024-13-01").status == 400)
        #expect(f.get(f.phone, "/v1/summary?date=2024-05-01&period=fortnight").status == 400)
        #expect(f.get(f.phone, "/v1/summary?date=2024-05-01&timeZone=Nowhere").status == 400)
        #expect(f.get(f.phone, "/v1/summary").status == 400)
    }

    @Test func activitySummariesWithGoalsAndStandHours() throws {
        let f = try StatisticsFixture()
        func stand(_ value: String, _ start: String, _ end: String) -> String {
            #"{"type":"appleStandHour","value":"\#(value)","start":"\#(start)","end":"\#(end)"}"#
        }
        f.save(f.phone, [StatisticsFixture.quantity("activeEnergyBurned", 300, "kcal", "2024-05-01T09:00:00-04:00", "2024-05-01T10:00:00-04:00"),
                         StatisticsFixture.quantity("appleExerciseTime", 45, "min", "2024-05-01T09:00:00-04:00", "2024-05-01T09:45:00-04:00"),
                         stand("stood", "2024-05-01T09:00:00-04:00", "2024-05-01T10:00:00-04:00"),
                         stand("stood", "2024-05-01T10:00:00-04:00", "2024-05-01T11:00:00-04:00"),
                         stand("idle", "2024-05-01T11:00:00-04:00", "2024-05-01T12:00:00-04:00"),
                         stand("stood", "2024-05-02T23:00:00-04:00", "2024-05-03T00:00:00-04:00")])
        let defaults = f.get(f.phone, "/v1/activity-summaries?start=2024-05-01&end=2024-05-03&timeZone=America/New_York")
        #expect(defaults.status == 200, "\(defaults.text)")
        let days = (defaults["summaries"]?.arrayValue ?? []).compactMap(\.objectValue)
        #expect(days.map { $0["date"]?.stringValue } == ["2024-05-01", "2024-05-02", "2024-05-03"])
        #expect(days.map { $0["activeEnergyBurned"]?.numberValue } == [300, 0, 0])
        #expect(days.map { $0["appleExerciseTime"]?.numberValue } == [45, 0, 0])
        #expect(days.map { $0["appleStandHours"]?.numberValue } == [2, 1, 0])
        #expect(days.first?["activeEnergyBurnedGoal"]?.numberValue == 500)
        #expect(days.first?["appleExerciseTimeGoal"]?.numberValue == 30)
        #expect(days.first?["appleStandHoursGoal"]?.numberValue == 12)

        let put = f.server.request(.put, "/v1/activity-goals", token: TestServer.adminToken,
                                   json: #"{"user":"alice","activeEnergyBurnedGoal":650,"appleStandHoursGoal":10}"#)
        #expect(put.status == 200, "\(put.text)")
        let after = f.get(f.phone, "/v1/activity-summaries?start=2024-05-01&end=2024-05-01&timeZone=America/New_York")
        let first = after["summaries"]?.arrayValue?.first?.objectValue
        #expect(first?["activeEnergyBurnedGoal"]?.numberValue == 650)
        #expect(first?["appleExerciseTimeGoal"]?.numberValue == 30)
        #expect(first?["appleStandHoursGoal"]?.numberValue == 10)

        // A day imported from Apple Health keeps that day's goals; other days use the user's.
        let userRowID = try #require(try f.server.store.user(idOrName: "alice")).rowID
        let importedDay = try #require(HealthDate.parseDay("2024-05-02"))
        try f.server.store.saveActivitySummaries([ActivitySummary(day: importedDay, activeEnergyBurnedGoal: 420,
                                                                  appleExerciseTimeGoal: 45)], userRowID: userRowID)
        let mixed = (f.get(f.phone, "/v1/activity-summaries?start=2024-05-01&end=2024-05-02&timeZone=America/New_York")["summaries"]?
            .arrayValue ?? []).compactMap(\.objectValue)
        #expect(mixed.map { $0["activeEnergyBurnedGoal"]?.numberValue } == [650, 420])
        #expect(mixed.map { $0["appleExerciseTimeGoal"]?.numberValue } == [30, 45])
        #expect(mixed.map { $0["appleStandHoursGoal"]?.numberValue } == [10, 10])

        #expect(f.server.request(.put, "/v1/activity-goals", token: f.phone, json: #"{"user":"alice","appleStandHoursGoal":10}"#).status == 403)
        #expect(f.server.request(.put, "/v1/activity-goals", token: TestServer.adminToken, json: #"{"user":"alice","appleStandHoursGoal":30}"#).status == 400)
        #expect(f.server.request(.put, "/v1/activity-goals", token: TestServer.adminToken, json: #"{"user":"alice","standGoal":3}"#).status == 400)
        #expect(f.server.request(.put, "/v1/activity-goals", token: TestServer.adminToken, json: #"{"user":"alice"}"#).status == 400)
        #expect(f.get(f.phone, "/v1/activity-summaries?start=2024-05-03&end=2024-05-01").status == 400)
        #expect(f.get(f.phone, "/v1/activity-summaries?start=2020-01-01&end=2024-05-01").status == 400)
    }
}
