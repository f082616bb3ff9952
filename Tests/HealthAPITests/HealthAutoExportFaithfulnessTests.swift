import Foundation
import HealthAutoExport
import HealthModel
import JSON
import PostgreSQL
import PostgresTestSupport
import Testing
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore

/// Health Auto Export payloads kept faithfully: dates from 12-hour phones, each app's own copy,
/// and a request stored whole or not at all when the store fails part way.
@Suite("Health Auto Export faithfulness")
struct HealthAutoExportFaithfulnessTests {
    static let path = HealthAutoExportAPITests.path
    static let fixtures = ["metrics-aggregated.json", "metrics-unaggregated.json", "sections.json", "workouts-v1.json", "workouts-v2.json"]

    // MARK: 12-hour dates

    /// How one 24-hour date is rewritten: the hour with or without its leading zero, am/pm in some
    /// case, after one of the three spaces (raw, or as a JSON escape).
    struct TwelveHourForm: Sendable, CustomStringConvertible {
        var padded: Bool
        var meridiem: (am: String, pm: String)
        var space: String
        var description: String { "\(padded ? "hh" : "h") \(meridiem.pm) \(space.unicodeScalars.map { String($0.value, radix: 16) })" }
    }

    static let forms: [TwelveHourForm] = [
        TwelveHourForm(padded: false, meridiem: ("am", "pm"), space: " "),
        TwelveHourForm(padded: true, meridiem: ("AM", "PM"), space: "\u{202F}"),
        TwelveHourForm(padded: false, meridiem: ("AM", "PM"), space: "\u{00A0}"),
        TwelveHourForm(padded: false, meridiem: ("am", "pm"), space: #"\u202f"#),
        TwelveHourForm(padded: true, meridiem: ("Am", "pM"), space: #"\u00A0"#),
        // Canadian English and Spanish phones.
        TwelveHourForm(padded: false, meridiem: ("a.m.", "p.m."), space: "\u{202F}"),
        TwelveHourForm(padded: false, meridiem: ("a.\u{202F}m.", "p.\u{202F}m."), space: " "),
    ]

    /// Every `yyyy-MM-dd HH:mm:ss ±hhmm` in `json` in a 12-hour form; `choose` picks the form of each date.
    static func twelveHour(_ json: String, _ choose: (Int) -> TwelveHourForm) throws -> String {
        let pattern = try NSRegularExpression(pattern: #"(\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2}:\d{2}) ([+-]\d{4})"#)
        let text = json as NSString
        var result = ""
        var last = 0
        for (index, match) in pattern.matches(in: json, range: NSRange(location: 0, length: text.length)).enumerated() {
            result += text.substring(with: NSRange(location: last, length: match.range.location - last))
            let form = choose(index)
            let hour = Int(text.substring(with: match.range(at: 2))) ?? 0
            let twelve = hour % 12 == 0 ? 12 : hour % 12
            let hourText = form.padded && twelve < 10 ? "0\(twelve)" : String(twelve)
            result += "\(text.substring(with: match.range(at: 1))) \(hourText):\(text.substring(with: match.range(at: 3)))"
                + "\(form.space)\(hour < 12 ? form.meridiem.am : form.meridiem.pm) \(text.substring(with: match.range(at: 4)))"
            last = match.range.location + match.range.length
        }
        return result + text.substring(from: last)
    }

    /// A user of a fresh server who may share and read every type the fixtures hold.
    struct Account {
        let server: TestServer
        let user: String
        let token: String

        init() throws {
            server = try TestServer()
            user = server.createUser("jane")
            token = server.token(user: user, app: "health-auto-export", read: HealthAutoExportAPITests.allTypes,
                                 share: HealthAutoExportAPITests.allTypes)
        }

        /// Posts every fixture, each rewritten by `rewrite`; the answers.
        func post(_ rewrite: (String) throws -> String) throws -> [String] {
            try HealthAutoExportFaithfulnessTests.fixtures.map { name in
                let reply = server.request(.post, HealthAutoExportFaithfulnessTests.path, token: token,
                                           json: try rewrite(try HealthAutoExportAPITests.fixture(name)))
                #expect(reply.status == 200, "\(name): \(reply.text)")
                return reply.text
            }
        }

        /// Every stored sample as read back, with what differs between two servers by design (the
        /// user's id, and so each content uuid; the time of saving) blanked.
        func stored() throws -> [String: String] {
            let uuid = try NSRegularExpression(pattern: "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
            let created = try NSRegularExpression(pattern: #""created":"[^"]*""#)
            func blanked(_ text: String) -> String {
                var result = text.replacingOccurrences(of: user, with: "USER")
                result = uuid.stringByReplacingMatches(in: result, range: NSRange(result.startIndex..., in: result), withTemplate: "UUID")
                return created.stringByReplacingMatches(in: result, range: NSRange(result.startIndex..., in: result), withTemplate: "")
            }
            var answers: [String: String] = [:]
            for type in HealthAutoExportAPITests.allTypes {
                answers[type] = blanked(server.request(.get, "/v1/samples?type=\(type)&limit=1000", token: token).text)
            }
            answers["workouts"] = blanked(server.request(.get, "/v1/workouts?start=2023-01-01T00:00:00Z&end=2025-01-01T00:00:00Z",
                                                         token: token).text)
            return answers
        }

        /// Every stored sample's uuid.
        func uuids() -> [String] {
            HealthAutoExportAPITests.allTypes.flatMap { type in
                (server.request(.get, "/v1/samples?type=\(type)&limit=1000", token: token)["samples"]?.arrayValue ?? [])
                    .compactMap { $0.objectValue?["uuid"]?.stringValue }
            }
        }
    }

    @Test("the same payloads with every date in a 12-hour form store byte-identical samples")
    func twelveHourFormsStoreTheSameSamples() throws {
        #expect(try Self.twelveHour(#"{"date":"2024-02-06 00:05:00 -0800","end":"2024-02-06 12:00:00 +0100"}"#) { _ in Self.forms[0] }
                == #"{"date":"2024-02-06 12:05:00 am -0800","end":"2024-02-06 12:00:00 pm +0100"}"#)
        let baseline = try Account()
        let baselineReplies = try baseline.post { $0 }
        let baselineStored = try baseline.stored()
        let baselineUUIDs = baseline.uuids()
        #expect(baselineUUIDs.count > 30, "the fixtures store samples")
        // Forms mixed date by date, as a payload gathered across an iOS update could be.
        var generator = SplitMix64(seed: 28)
        let choices = (0..<4_096).map { _ in Self.forms[Int(generator.next() % UInt64(Self.forms.count))] }
        let rewrites: [(String, (String) throws -> String)] = Self.forms.map { form in ("\(form)", { try Self.twelveHour($0) { _ in form } }) }
            + [("mixed", { try Self.twelveHour($0) { choices[$0 % choices.count] } })]
        for (name, rewrite) in rewrites {
            // On a server of its own: the same answers and the same samples, field for field.
            let account = try Account()
            #expect(try account.post(rewrite) == baselineReplies, "\(name)")
            let stored = try account.stored()
            for (type, text) in baselineStored { #expect(stored[type] == text, "\(name): \(type) differs") }
            // From the same user: the same uuids, so nothing is saved again.
            let replies = try baseline.post(rewrite)
            for reply in replies { #expect(reply.contains(#""saved":0,"#), "\(name): \(reply)") }
            #expect(baseline.uuids() == baselineUUIDs, "\(name)")
        }
    }

    @Test("a date in no form the app writes is a 400 naming the field, and nothing is saved", arguments: [
        ("2024-02-06 13:00:00 pm -0800", "data.metrics[0].data[1].date"),
        ("2024-02-06 0:30:00 am -0800", "data.metrics[0].data[1].date"),
        ("2024-02-06 7:00:00 p.m.-0800", "data.metrics[0].data[1].date"),
        ("2024-02-06 7:00:00\u{2009}pm -0800", "data.metrics[0].data[1].date"),
    ])
    func malformedTwelveHourDates(date: String, field: String) throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let token = server.token(user: user, app: "hae", read: ["stepCount"], share: ["stepCount"])
        let body = #"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"2024-02-06 7:00:00 pm -0800","qty":5},"#
            + #"{"date":"\#(date)","qty":6}]}]}}"#
        let reply = server.request(.post, Self.path, token: token, json: body)
        #expect(reply.status == 400)
        #expect(reply["errors"]?.arrayValue?.first?.objectValue?["field"]?.stringValue == field)
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: token)["samples"]?.arrayValue?.isEmpty == true)
    }

    @Test("sleep fields and workout heart rate from a 12-hour phone are read")
    func twelveHourSleepAndWorkouts() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let types = ["sleepAnalysis", "workout", "heartRate"]
        let token = server.token(user: user, app: "hae", read: types, share: types)
        let body = #"""
            {"data":{"metrics":[{"name":"sleep_analysis","units":"hr","data":[{"date":"2023-01-21 12:00:00\u202fAM +1100",
              "totalSleep":7,"core":4,"deep":1.5,"rem":1.5,"awake":0,"asleep":0,"inBed":7.5,
              "sleepStart":"2023-01-20 11:00:00 pm +1100","sleepEnd":"2023-01-21 6:00:00 AM +1100",
              "inBedStart":"2023-01-20 10:45:00\u00a0pm +1100","inBedEnd":"2023-01-21 6:15:00 am +1100"}]}],
             "workouts":[{"id":"W1","name":"Outdoor Run","start":"2023-01-20 7:57:00 pm +1100","end":"2023-01-20 8:27:00 pm +1100",
              "heartRateData":[{"date":"2023-01-20 8:00:00 PM +1100","Avg":150,"Min":140,"Max":160,"units":"count/min"}]}]}}
            """#
        let reply = server.request(.post, Self.path, token: token, json: body)
        #expect(reply.status == 200, "\(reply.text)")
        let sleep = server.request(.get, "/v1/samples?type=sleepAnalysis", token: token)["samples"]?.arrayValue ?? []
        let inBed = sleep.first { $0.objectValue?["value"]?.stringValue == "inBed" }?.objectValue
        #expect(inBed?["start"]?.stringValue == "2023-01-20T11:45:00.000Z")
        #expect(inBed?["end"]?.stringValue == "2023-01-20T19:15:00.000Z")
        let workout = server.request(.get, "/v1/samples?type=workout", token: token)["samples"]?.arrayValue?.first?.objectValue
        #expect(workout?["start"]?.stringValue == "2023-01-20T08:57:00.000Z")
        let heartRate = server.request(.get, "/v1/samples?type=heartRate", token: token)["samples"]?.arrayValue?.first?.objectValue
        #expect(heartRate?["start"]?.stringValue == "2023-01-20T09:00:00.000Z")
    }

    // MARK: Each app's copy

    static let onePoint = #"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"2024-02-06 07:00:00 -0800","qty":500,"source":"iPhone"}]}]}}"#

    @Test("a point another app stored is saved as this app's own copy; statistics count it once")
    func eachAppHasItsOwnCopy() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let first = server.token(user: user, app: "hae-phone", read: [], share: ["stepCount"])
        let second = server.token(user: user, app: "hae-ipad", read: [], share: ["stepCount"])
        let reader = server.token(user: user, app: "dashboard", read: ["stepCount"], share: [])
        #expect(server.request(.post, Self.path, token: first, json: Self.onePoint)["saved"]?.numberValue == 1)
        // The second app learns nothing of the first one's sample: it is saved, as its own.
        let reply = server.request(.post, Self.path, token: second, json: Self.onePoint)
        #expect(reply["saved"]?.numberValue == 1 && reply["duplicates"]?.numberValue == 0, "\(reply.text)")
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: second)["samples"]?.arrayValue?.count == 1)
        // Each app's re-send is its own duplicate.
        #expect(server.request(.post, Self.path, token: second, json: Self.onePoint)["duplicates"]?.numberValue == 1)
        let samples = server.request(.get, "/v1/samples?type=stepCount", token: reader)["samples"]?.arrayValue ?? []
        #expect(samples.count == 2)
        #expect(Set(samples.compactMap { $0.objectValue?["uuid"]?.stringValue }).count == 2)
        // Source merging keeps one copy of the overlapping points.
        let sum = server.request(.get, "/v1/statistics?type=stepCount&options=cumulativeSum&start=2024-02-06T00:00:00-08:00"
            + "&end=2024-02-07T00:00:00-08:00", token: reader)
        #expect(sum["sum"]?.numberValue == 500, "\(sum.text)")
    }

    @Test("samples stored under the uuids of before (without the app) are still duplicates when the same app re-sends them")
    func samplesStoredBeforeStayDuplicates() throws {
        let server = try TestServer()
        let user = server.createUser("jane")
        let types = HealthAutoExportAPITests.allTypes
        let token = server.token(user: user, app: "hae", read: types, share: types)
        let other = server.token(user: user, app: "hae-ipad", read: types, share: types)
        let authorization = try #require(try server.store.authorization(tokenHash: TokenHashing.hash(token)))
        // What an earlier server stored: the same payloads, uuids derived without the app.
        var stored = 0
        for name in Self.fixtures {
            var reader = HealthAutoExportReader(user: authorization.userID)
            var samples: [SourcedSample] = []
            try Array(try HealthAutoExportAPITests.fixture(name).utf8).withUnsafeBytes { body in
                try reader.read(body) { items in
                    // The types the token may share: the others would be refused, not found stored.
                    for case .sample(let sample, _) in items where types.contains(sample.type) {
                        samples.append(SourcedSample(app: "hae", sample: sample))
                    }
                }
            }
            stored += try server.store.importSamples(samples, userRowID: authorization.userRowID).filter { $0 == .inserted }.count
        }
        #expect(stored > 20)
        var duplicates = 0
        for name in Self.fixtures {
            let reply = server.request(.post, Self.path, token: token, json: try HealthAutoExportAPITests.fixture(name))
            #expect(reply.status == 200 && reply["saved"]?.numberValue == 0, "\(name): \(reply.text)")
            duplicates += Int(reply["duplicates"]?.numberValue ?? 0)
        }
        #expect(duplicates == stored)
        // Another app's copy is its own, under the new derivation.
        let copy = server.request(.post, Self.path, token: other, json: try HealthAutoExportAPITests.fixture("metrics-aggregated.json"))
        #expect(copy["saved"]?.numberValue == 20, "\(copy.text)")
    }

    // MARK: Whole or not at all

    /// `count` step points a minute apart: more than two store batches.
    static func manySteps(_ count: Int) -> String {
        var points: [String] = []
        points.reserveCapacity(count)
        let start = 1_706_745_600 // 2024-02-01T00:00:00Z
        for index in 0..<count {
            let seconds = start + index * 60
            let day = 1 + (seconds - start) / 86_400
            let secondOfDay = seconds % 86_400
            let stamp = String(format: "2024-02-%02d %02d:%02d:00 +0000", day, secondOfDay / 3_600, secondOfDay / 60 % 60)
            points.append(#"{"date":"\#(stamp)","qty":1}"#)
        }
        return #"{"data":{"metrics":[{"name":"step_count","units":"count","data":["# + points.joined(separator: ",") + "]}]}}"
    }

    static let stepTotal = 12_000

    static func stepCount(_ server: TestServer, _ token: String) -> Double? {
        server.request(.get, "/v1/statistics?type=stepCount&options=cumulativeSum&start=2024-01-01T00:00:00Z&end=2024-03-01T00:00:00Z",
                       token: token)["sum"]?.numberValue ?? 0
    }

    @Test("SQLite: a full disk part way through a request stores none of it; the re-send stores it all, once")
    func fullDiskPartWaySQLite() throws {
        let body = Self.manySteps(Self.stepTotal)
        #expect(Self.stepTotal > 2 * HealthAutoExportIngest.batchSize)
        func pageCount(_ store: SQLiteHealthStore) throws -> Int64 {
            try store.pool.write { db in try db.first("PRAGMA page_count", [], { try $0.int64(at: 0) }) ?? 0 }
        }
        // How many pages the whole request takes, measured on a store of its own.
        let measured = try TestServer()
        let measuredToken = measured.token(user: measured.createUser("jane"), app: "hae", read: ["stepCount"], share: ["stepCount"])
        let before = try pageCount(measured.store)
        #expect(measured.request(.post, Self.path, token: measuredToken, json: body)["saved"]?.numberValue == Double(Self.stepTotal))
        let needed = try pageCount(measured.store) - before
        #expect(needed > 10)

        let server = try TestServer()
        let token = server.token(user: server.createUser("jane"), app: "hae", read: ["stepCount"], share: ["stepCount"])
        let base = try pageCount(server.store)
        // The disk fills half way through the request: after its first batch was written.
        try server.store.pool.write { db in try db.execute("PRAGMA max_page_count = \(base + needed / 2)") }
        let refused = server.request(.post, Self.path, token: token, json: body)
        #expect(refused.status == 507 && refused.code == "errorInsufficientStorage", "\(refused.text)")
        #expect(refused.text.contains("nothing of this request was stored"))
        #expect(Self.stepCount(server, token) == 0)
        #expect(server.request(.get, "/v1/samples?type=stepCount&limit=1", token: token)["samples"]?.arrayValue?.isEmpty == true)

        try server.store.pool.write { db in try db.execute("PRAGMA max_page_count = 1073741823") }
        let resent = server.request(.post, Self.path, token: token, json: body)
        #expect(resent.status == 200 && resent["saved"]?.numberValue == Double(Self.stepTotal) && resent["duplicates"]?.numberValue == 0,
                "\(resent.text)")
        #expect(Self.stepCount(server, token) == Double(Self.stepTotal))
        let again = server.request(.post, Self.path, token: token, json: body)
        #expect(again["saved"]?.numberValue == 0 && again["duplicates"]?.numberValue == Double(Self.stepTotal))
    }
}

/// The same on PostgreSQL, where the disk fills (SQLSTATE 53100) after the first batch was written.
@Suite("Health Auto Export faithfulness on PostgreSQL",
       .enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the fault on the PostgreSQL store"))
struct HealthAutoExportPostgresFaultTests {
    @Test("PostgreSQL: a full disk part way through a request stores none of it; the re-send stores it all, once")
    func fullDiskPartWayPostgres() throws {
        let server = try TestServer(backend: .postgres)
        let schema = try #require(server.postgresSchema)
        let token = server.token(user: server.createUser("jane"), app: "hae", read: ["stepCount"], share: ["stepCount"])
        let body = HealthAutoExportFaithfulnessTests.manySteps(HealthAutoExportFaithfulnessTests.stepTotal)
        let connection = try schema.connect()
        defer { connection.close() }
        // Past one batch of rows, the next insert finds the disk full.
        try connection.execute("""
            CREATE FUNCTION hae_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF (SELECT count(*) FROM samples) > \(HealthAutoExportIngest.batchSize) THEN
                RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full';
              END IF;
              RETURN NULL;
            END $$
            """)
        try connection.execute("CREATE TRIGGER hae_disk_full AFTER INSERT ON samples FOR EACH STATEMENT EXECUTE FUNCTION hae_disk_full()")
        let refused = server.request(.post, HealthAutoExportFaithfulnessTests.path, token: token, json: body)
        #expect(refused.status == 507 && refused.code == "errorInsufficientStorage", "\(refused.text)")
        #expect(HealthAutoExportFaithfulnessTests.stepCount(server, token) == 0)
        #expect(try connection.scalarInt64("SELECT count(*) FROM samples", []) == 0)

        try connection.execute("DROP TRIGGER hae_disk_full ON samples")
        let resent = server.request(.post, HealthAutoExportFaithfulnessTests.path, token: token, json: body)
        #expect(resent.status == 200 && resent["saved"]?.numberValue == Double(HealthAutoExportFaithfulnessTests.stepTotal), "\(resent.text)")
        #expect(HealthAutoExportFaithfulnessTests.stepCount(server, token) == Double(HealthAutoExportFaithfulnessTests.stepTotal))
        let again = server.request(.post, HealthAutoExportFaithfulnessTests.path, token: token, json: body)
        #expect(again["saved"]?.numberValue == 0 && again["duplicates"]?.numberValue == Double(HealthAutoExportFaithfulnessTests.stepTotal))
    }
}

/// A small deterministic generator for the mixed forms.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
