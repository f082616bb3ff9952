import Foundation
import Synchronization
import Testing
import HTTP
import JSON
@testable import HealthAPI
import ClientThreads

/// A phone in a pocket walking at 1.8 steps/s: vertical bounce at the step frequency, sway at half
/// of it, gravity on an oblique axis, a little deterministic noise. 50 Hz.
struct WalkingSignal {
    let rate = 50.0
    let seconds: Double
    var count: Int { Int(seconds * rate) }

    func sample(_ i: Int) -> (t: Double, x: Double, y: Double, z: Double) {
        let t = Double(i) / rate
        let bounce = 3.0 * sin(2 * .pi * 1.8 * t)
        let sway = 1.2 * sin(2 * .pi * 0.9 * t + 0.4)
        let noise = 0.15 * sin(Double(i) * 12.9898).truncatingRemainder(dividingBy: 1)
        return (t, 0.3 * bounce + sway + noise, 6.9 + 0.7 * bounce, 6.9 + 0.7 * bounce - 0.2 * sway)
    }

    func json(session: String, seq: Int, range: Range<Int>, unit: String = "m/s2") -> String {
        let rows = range.map(sample)
        func list(_ f: ((t: Double, x: Double, y: Double, z: Double)) -> Double) -> String {
            "[" + rows.map { String(f($0)) }.joined(separator: ",") + "]"
        }
        return #"{"device":{"name":"Test Phone","model":"iPhone"},"session":"\#(session)","seq":\#(seq),"unit":"\#(unit)","t0":"2026-03-08T09:00:00Z","samples":{"t":\#(list { $0.t }),"x":\#(list { $0.x }),"y":\#(list { $0.y }),"z":\#(list { $0.z })},"heightCm":175}"#
    }

    func csv(range: Range<Int>) -> String {
        "t,x,y,z\n" + range.map(sample).map { "\($0.t),\($0.x),\($0.y),\($0.z)" }.joined(separator: "\n") + "\n"
    }
}

struct IMUFixture {
    let server: TestServer
    let token: String
    init(server: TestServer? = nil) throws {
        let server = try server ?? TestServer()
        self.server = server
        let user = server.createUser("walker")
        token = server.token(user: user, app: "phone", read: ["stepCount", "distanceWalkingRunning"],
                             share: ["stepCount", "distanceWalkingRunning", "flightsClimbed"])
    }

    func post(_ body: String) -> TestServer.Reply {
        server.request(.post, "/v1/ingest/imu", token: token, json: body)
    }

    /// Sends the signal in batches of `size` samples, ends the session, returns the final answer.
    func run(_ signal: WalkingSignal, batchSize size: Int, session: String) -> TestServer.Reply {
        var seq = 0
        var start = 0
        while start < signal.count {
            let reply = post(signal.json(session: session, seq: seq, range: start..<min(start + size, signal.count)))
            #expect(reply.status == 200, "\(reply.text)")
            start += size
            seq += 1
        }
        return server.request(.post, "/v1/ingest/imu/\(session)/end", token: token)
    }
}

@Suite struct IMUIngestTests {
    @Test func countsStepsAndSavesSamples() throws {
        let f = try IMUFixture()
        let end = f.run(WalkingSignal(seconds: 60), batchSize: 500, session: "walk-1")
        #expect(end.status == 200, "\(end.text)")
        let total = end["totalSteps"]?.numberValue ?? 0
        #expect(abs(total - 108) <= 3, "60 s at 1.8 steps/s; got \(total)")
        #expect(end["activity"]?.stringValue != nil)
        #expect((end["distance"]?.numberValue ?? 0) > 50)
        let samples = f.server.request(.get, "/v1/samples?type=stepCount&limit=1000", token: f.token)
        let saved = samples["samples"]?.arrayValue?.compactMap { $0.objectValue?["value"]?.numberValue }.reduce(0, +) ?? 0
        #expect(saved == total, "the saved stepCount samples add up to the session's total")
        let first = samples["samples"]?.arrayValue?.first?.objectValue
        #expect(first?["device"]?.objectValue?["name"]?.stringValue == "Test Phone")
        let pedometer = f.server.request(.get, "/v1/pedometer?start=2026-03-08T08:00:00Z&end=2026-03-08T10:00:00Z", token: f.token)
        #expect(pedometer["numberOfSteps"]?.numberValue == total)
        #expect(pedometer["floorsAscended"]?.numberValue == 0)
    }

    @Test(arguments: [1, 7, 100, 10_000])
    func batchSplitGivesTheSameTotal(size: Int) throws {
        let signal = WalkingSignal(seconds: size == 1 ? 6 : 30)
        let reference = try IMUFixture().run(signal, batchSize: signal.count, session: "whole")["totalSteps"]?.numberValue
        let split = try IMUFixture().run(signal, batchSize: size, session: "split")["totalSteps"]?.numberValue
        #expect(reference != nil)
        #expect(split == reference)
    }

    @Test func repeatedSeqReturnsTheFirstAnswerAndGapsAre409() throws {
        let f = try IMUFixture()
        let signal = WalkingSignal(seconds: 20)
        let first = f.post(signal.json(session: "s", seq: 0, range: 0..<500))
        let again = f.post(signal.json(session: "s", seq: 0, range: 0..<500))
        #expect(first.status == 200)
        #expect(again.body == first.body, "a repeated seq returns the first answer")
        let gap = f.post(signal.json(session: "s", seq: 2, range: 500..<1000))
        #expect(gap.status == 409)
        #expect(gap.text.contains("expected 1"))
        #expect(f.post(signal.json(session: "s", seq: 1, range: 500..<1000)).status == 200)
        let samples = f.server.request(.get, "/v1/samples?type=stepCount", token: f.token)["samples"]?.arrayValue ?? []
        let steps = samples.compactMap { $0.objectValue?["value"]?.numberValue }.reduce(0, +)
        let end = f.server.request(.post, "/v1/ingest/imu/s/end", token: f.token)
        #expect(end.status == 200)
        #expect(f.server.request(.post, "/v1/ingest/imu/s/end", token: f.token).body == end.body, "end is idempotent too")
        #expect(f.post(signal.json(session: "s", seq: 2, range: 0..<100)).status == 409, "an ended session takes no more batches")
        #expect(steps <= end["totalSteps"]?.numberValue ?? 0)
        #expect(f.server.request(.post, "/v1/ingest/imu/nosuch/end", token: f.token).status == 404)
    }

    @Test func aRestartMidSessionLosesNothing() throws {
        let signal = WalkingSignal(seconds: 40)
        let reference = try IMUFixture().run(signal, batchSize: 400, session: "ref")["totalSteps"]?.numberValue
        let directory = NSTemporaryDirectory() + "healthd-restart-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var first: TestServer? = try TestServer(directory: directory)
        let f = try IMUFixture(server: first)
        for seq in 0..<3 {
            #expect(f.post(signal.json(session: "r", seq: seq, range: (seq * 400)..<((seq + 1) * 400))).status == 200)
        }
        first = nil  // the server goes away with its in-memory state
        let restarted = try TestServer(directory: directory)
        var seq = 3
        while seq * 400 < signal.count {
            let reply = restarted.request(.post, "/v1/ingest/imu", token: f.token,
                                          json: signal.json(session: "r", seq: seq, range: (seq * 400)..<min((seq + 1) * 400, signal.count)))
            #expect(reply.status == 200, "\(reply.text)")
            seq += 1
        }
        let end = restarted.request(.post, "/v1/ingest/imu/r/end", token: f.token)
        #expect(end["totalSteps"]?.numberValue == reference)
    }

    @Test func csvBatches() throws {
        let f = try IMUFixture()
        let signal = WalkingSignal(seconds: 10)
        let reply = f.server.request(.post, "/v1/ingest/imu?session=c&seq=0&unit=m/s2&t0=2026-03-08T09:00:00Z&device=Pixel",
                                     token: f.token, json: signal.csv(range: 0..<signal.count), headers: [("Content-Type", "text/csv")])
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply["session"]?.stringValue == "c")
    }

    @Test func badInputIs400AndSavesNothing() throws {
        let f = try IMUFixture()
        let t0 = #""t0":"2026-03-08T09:00:00Z""#
        let cases: [(String, String)] = [
            (#"{"session":"b","seq":0,"unit":"m/s2",\#(t0),"samples":{"t":[0,0.02],"x":[1],"y":[1,2],"z":[1,2]}}"#, "samples"),
            (#"{"session":"b","seq":0,"unit":"furlongs",\#(t0),"samples":{"t":[0,0.02],"x":[1,1],"y":[1,2],"z":[1,2]}}"#, "unit"),
            (#"{"session":"b","seq":0,"unit":"g",\#(t0),"samples":{"t":[],"x":[],"y":[],"z":[]}}"#, "samples.t"),
            (#"{"session":"b","seq":0,"unit":"g",\#(t0),"samples":{"t":[0,0.5,0.1],"x":[1,1,1],"y":[1,2,1],"z":[1,2,1]}}"#, "index 2"),
            (#"{"session":"b","seq":0,"unit":"g",\#(t0),"samples":{"t":[0,1,2,3,4],"x":[1,1,1,1,1],"y":[1,2,1,1,1],"z":[1,2,1,1,1]}}"#, "samples.t"),
            (#"{"session":"b","seq":0,"unit":"g","t0":"yesterday","samples":{"t":[0],"x":[1],"y":[1],"z":[1]}}"#, "t0"),
            (#"{"session":"b","seq":-1,"unit":"g",\#(t0),"samples":{"t":[0],"x":[1],"y":[1],"z":[1]}}"#, "seq"),
            (#"{"session":"b c","seq":0,"unit":"g",\#(t0),"samples":{"t":[0],"x":[1],"y":[1],"z":[1]}}"#, "session"),
            (#"{"session":"b","seq":0,"unit":"g",\#(t0),"samples":{"t":[0],"x":[1],"y":[1],"z":[1]},"extra":1}"#, "extra"),
        ]
        for (body, field) in cases {
            let reply = f.post(body)
            #expect(reply.status == 400, "\(body)")
            #expect(reply.text.contains(field), "\(reply.text) should name \(field)")
        }
        let nan = f.server.request(.post, "/v1/ingest/imu?session=n&seq=0&unit=g&t0=2026-03-08T09:00:00Z", token: f.token,
                                   json: "t,x,y,z\n0,1,1,1\n0.02,nan,1,1\n", headers: [("Content-Type", "text/csv")])
        #expect(nan.status == 400)
        #expect(nan.text.contains("samples.x"))
        for (csv, says) in [("t,x,y,z\n0,1,1,1\n0.02,1,1\n", "row 3 has 3 fields"), ("t,x,y\n0,1,1\n", "header row"),
                            ("t,x,y,z\n0,1,one,1\n", "'one' is not a number"), ("", "is empty")] {
            let bad = f.server.request(.post, "/v1/ingest/imu?session=c&seq=0&unit=g&t0=2026-03-08T09:00:00Z", token: f.token,
                                       json: csv, headers: [("Content-Type", "text/csv")])
            #expect(bad.status == 400, "\(csv)")
            #expect(bad.text.contains(says), "\(bad.text) should say \(says)")
        }
        let big = "t,x,y,z\n" + (0...100_000).map { "\(Double($0) / 50),0,0,1" }.joined(separator: "\n")
        let oversize = f.server.request(.post, "/v1/ingest/imu?session=o&seq=0&unit=g&t0=2026-03-08T09:00:00Z", token: f.token,
                                        json: big, headers: [("Content-Type", "text/csv")])
        #expect(oversize.status == 413)
        #expect(f.server.request(.get, "/v1/samples?type=stepCount", token: f.token)["samples"]?.arrayValue?.isEmpty == true)
        // A rejected batch does not advance the session: seq 0 is still expected.
        #expect(f.post(WalkingSignal(seconds: 5).json(session: "b", seq: 0, range: 0..<250)).status == 200)
    }

    /// Offsets that put a sample far outside 1900-2200 are a 400 naming the sample, not a trap
    /// turning 1e300 s into milliseconds (or a sample stored in the year 3e9).
    @Test func offsetsBeyondTheSampleRangeAre400() throws {
        let f = try IMUFixture()
        let walk = WalkingSignal(seconds: 2)
        func batch(_ session: String, offset: Double) -> String {
            let rows = (0..<walk.count).map(walk.sample)
            func list(_ values: [Double]) -> String { "[" + values.map { String($0) }.joined(separator: ",") + "]" }
            return #"{"session":"\#(session)","seq":0,"unit":"m/s2","t0":"2026-03-08T09:00:00Z","samples":{"t":\#(list(rows.map { $0.t + offset })),"x":\#(list(rows.map(\.x))),"y":\#(list(rows.map(\.y))),"z":\#(list(rows.map(\.z)))}}"#
        }
        for (index, offset) in [1e300, -1e300, 1e17, 6e9].enumerated() {
            let reply = f.post(batch("far-\(index)", offset: offset))
            #expect(reply.status == 400, "\(offset): \(reply.text)")
            #expect(reply.text.contains("samples.t"), "\(reply.text)")
        }
        let single = f.post(#"{"session":"one","seq":0,"unit":"g","t0":"2026-03-08T09:00:00Z","samples":{"t":[1e300],"x":[0],"y":[0],"z":[1]}}"#)
        #expect(single.status == 400, "\(single.text)")
        let pressure = f.post(#"{"session":"p","seq":0,"unit":"g","t0":"2026-03-08T09:00:00Z","samples":{"t":[0],"x":[0],"y":[0],"z":[1]},"pressure":{"t":[1e300],"hPa":[1000]}}"#)
        #expect(pressure.status == 400, "\(pressure.text)")
        #expect(pressure.text.contains("pressure.t"), "\(pressure.text)")
        let csv = f.server.request(.post, "/v1/ingest/imu?session=c&seq=0&unit=g&t0=2026-03-08T09:00:00Z", token: f.token,
                                   json: "t,x,y,z\n1e300,0,0,1\n", headers: [("Content-Type", "text/csv")])
        #expect(csv.status == 400, "\(csv.text)")
        #expect(f.server.request(.get, "/v1/samples?type=stepCount", token: f.token)["samples"]?.arrayValue?.isEmpty == true)
        // A session's offsets may still run for days from its t0.
        #expect(f.post(batch("days", offset: 3 * 86_400)).status == 200)
    }

    @Test func messyStreamsAreAcceptedAndRepairsReported() throws {
        let f = try IMUFixture()
        let t0 = #""t0":"2026-03-08T09:00:00Z""#
        // A repeated timestamp and a reading 10 ms late: accepted, and the answer says what was repaired.
        let messy = f.post(#"{"session":"m","seq":0,"unit":"g",\#(t0),"samples":{"t":[0,0.02,0.02,0.06,0.04,0.08],"x":[0,0,1,0,0,0],"y":[0,0,0,0,0,0],"z":[1,1,1,1,1,1]}}"#)
        #expect(messy.status == 200, "\(messy.text)")
        #expect(messy["repaired"]?.objectValue?["duplicates"]?.numberValue == 1)
        #expect(messy["repaired"]?.objectValue?["reordered"]?.numberValue == 1)
        // The next batch may start a little before the last one ended; its early readings are dropped.
        let overlapping = f.post(#"{"session":"m","seq":1,"unit":"g",\#(t0),"samples":{"t":[0.05,0.1,0.12],"x":[0,0,0],"y":[0,0,0],"z":[1,1,1]}}"#)
        #expect(overlapping.status == 200, "\(overlapping.text)")
        #expect(overlapping["repaired"]?.objectValue?["late"]?.numberValue == 1)
        // More than 0.1 s before the previous end: a 400 naming the sample and the rule; seq 2 is still expected.
        let resent = f.post(#"{"session":"m","seq":2,"unit":"g",\#(t0),"samples":{"t":[0.12,0.14],"x":[0,0],"y":[0,0],"z":[1,1]}}"#)
        #expect(resent.status == 200, "\(resent.text)")
        let backwards = f.post(#"{"session":"m","seq":3,"unit":"g",\#(t0),"samples":{"t":[0.16,0.18,0.01],"x":[0,0,0],"y":[0,0,0],"z":[1,1,1]}}"#)
        #expect(backwards.status == 400)
        #expect(backwards["errors"]?.arrayValue?.first?.objectValue?["index"]?.numberValue == 2)
        #expect(backwards.text.contains("at most 0.1 s"))
        let stale = f.post(#"{"session":"m","seq":3,"unit":"g",\#(t0),"samples":{"t":[0.0,0.02],"x":[0,0],"y":[0,0],"z":[1,1]}}"#)
        #expect(stale.status == 400)
        #expect(stale["errors"]?.arrayValue?.first?.objectValue?["index"]?.numberValue == 0)
        #expect(stale.text.contains("previous batch"))
        #expect(f.post(#"{"session":"m","seq":3,"unit":"g",\#(t0),"samples":{"t":[0.2],"x":[0],"y":[0],"z":[1]}}"#).status == 200)
    }

    /// Copies of one batch sent at once (a phone retrying on a slow network): the pedometer runs
    /// outside the writer for each, one commit wins, the others find its answer and replay it.
    @Test func concurrentCopiesOfABatchCountOnceAndGetTheSameAnswer() throws {
        let f = try IMUFixture()
        let signal = WalkingSignal(seconds: 30)
        #expect(f.post(signal.json(session: "race", seq: 0, range: 0..<750)).status == 200)
        let body = signal.json(session: "race", seq: 1, range: 750..<1_500)
        let answers = Mutex<[String]>([])
        onThreads(8) { _ in
            let reply = f.post(body)
            answers.withLock { $0.append("\(reply.status) \(reply.text)") }
        }
        let distinct = Set(answers.withLock { $0 })
        #expect(distinct.count == 1, "\(distinct)")
        #expect(distinct.first?.hasPrefix("200 ") == true)
        let end = f.server.request(.post, "/v1/ingest/imu/race/end", token: f.token)
        let reference = try IMUFixture()
        #expect(reference.post(signal.json(session: "race", seq: 0, range: 0..<750)).status == 200)
        #expect(reference.post(body).status == 200)
        let referenceEnd = reference.server.request(.post, "/v1/ingest/imu/race/end", token: reference.token)
        #expect(end["totalSteps"]?.numberValue == referenceEnd["totalSteps"]?.numberValue)
        #expect((end["totalSteps"]?.numberValue ?? 0) > 40)
    }

    @Test func ingestNeedsSharePermission() throws {
        let server = try TestServer()
        let user = server.createUser("reader")
        let token = server.token(user: user, app: "viewer", read: ["stepCount"], share: [])
        let reply = server.request(.post, "/v1/ingest/imu", token: token,
                                   json: WalkingSignal(seconds: 2).json(session: "x", seq: 0, range: 0..<100))
        #expect(reply.status == 403)
    }

    /// A walk up about 10 m (three floors) over 20 s, with the barometer's readings beside it.
    static func climb(session: String) -> String {
        let signal = WalkingSignal(seconds: 20)
        let times = stride(from: 0.0, through: 20.0, by: 0.5).map { $0 }
        let pressure = #","pressure":{"t":[\#(times.map { String($0) }.joined(separator: ","))],"hPa":[\#(times.map { String(1013.25 - 0.06 * $0) }.joined(separator: ","))]},"heightCm":175}"#
        return signal.json(session: session, seq: 0, range: 0..<signal.count)
            .replacingOccurrences(of: #","heightCm":175}"#, with: pressure)
    }

    /// Steps and distance are saved; flights the token may not share are counted under `refused`
    /// and never stored (the same climb with share permission does store them).
    @Test func flightsTheTokenMayNotShareAreRefusedNotSaved() throws {
        let server = try TestServer()
        let user = server.createUser("climber")
        let sharing = server.token(user: user, app: "barometer", read: [], share: ["stepCount", "distanceWalkingRunning", "flightsClimbed"])
        let allowed = server.request(.post, "/v1/ingest/imu", token: sharing, json: Self.climb(session: "up"))
        #expect(allowed.status == 200, "\(allowed.text)")
        #expect(allowed["refused"] == nil, "\(allowed.text)")
        let stored = server.request(.get, "/v1/samples?type=flightsClimbed", token: sharing)
        #expect((stored["samples"]?.arrayValue?.count ?? 0) > 0, "the climb must make flights for the test to mean anything: \(stored.text)")

        let limited = server.token(user: user, app: "stepsonly", read: [], share: ["stepCount", "distanceWalkingRunning"])
        let reply = server.request(.post, "/v1/ingest/imu", token: limited, json: Self.climb(session: "up"))
        #expect(reply.status == 200, "\(reply.text)")
        #expect((reply["refused"]?.objectValue?["flightsClimbed"]?.numberValue ?? 0) >= 1, "\(reply.text)")
        #expect((reply["saved"]?.arrayValue?.count ?? 0) == 2, "steps and distance only: \(reply.text)")
        let flights = server.request(.get, "/v1/samples?type=flightsClimbed", token: limited)
        #expect(flights["samples"]?.arrayValue?.isEmpty == true, "\(flights.text)")
        let steps = server.request(.get, "/v1/samples?type=stepCount", token: limited)
        #expect((steps["samples"]?.arrayValue?.count ?? 0) == 1, "\(steps.text)")
    }
}
