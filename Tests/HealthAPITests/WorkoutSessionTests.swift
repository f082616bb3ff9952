import Foundation
import Testing
import HTTP
import HealthModel
import JSON
@testable import HealthAPI
@testable import HealthStore
@testable import SQLiteStore

// MARK: Pure: state machine, timeline, zone judgement

@Suite struct WorkoutSessionStateMachineTests {
    @Test func transitionsAllowedAndRefused() throws {
        #expect(try WorkoutSessionState.running.applying(.pause) == .paused)
        #expect(try WorkoutSessionState.paused.applying(.resume) == .running)
        #expect(try WorkoutSessionState.running.applying(.end) == .ended)
        #expect(try WorkoutSessionState.paused.applying(.end) == .ended)
        #expect(throws: WorkoutSessionTransitionError(current: .running, action: .resume)) {
            try WorkoutSessionState.running.applying(.resume)
        }
        #expect(throws: WorkoutSessionTransitionError(current: .paused, action: .pause)) {
            try WorkoutSessionState.paused.applying(.pause)
        }
        for action in WorkoutSessionAction.allCases {
            #expect(throws: WorkoutSessionTransitionError(current: .ended, action: action)) {
                try WorkoutSessionState.ended.applying(action)
            }
        }
        #expect(WorkoutSessionTransitionError(current: .paused, action: .pause).description.contains("paused"))
    }

    @Test func runningIntervalsLeaveOutPauses() {
        var timeline = WorkoutSessionTimeline(start: 100)
        #expect(timeline.runningIntervals == [100..<Int64.max])
        timeline.events = [WorkoutEvent(type: .pause, date: 200), WorkoutEvent(type: .resume, date: 300),
                           WorkoutEvent(type: .pause, date: 400)]
        #expect(timeline.runningIntervals == [100..<200, 300..<400])
        #expect(timeline.isRunning(at: 150) && !timeline.isRunning(at: 250) && !timeline.isRunning(at: 500))
        timeline.events.append(WorkoutEvent(type: .resume, date: 450))
        timeline.end = 600
        #expect(timeline.runningIntervals == [100..<200, 300..<400, 450..<600])
        #expect(!timeline.isRunning(at: 99) && !timeline.isRunning(at: 600))
        // A pause in the start's millisecond leaves no empty stretch behind.
        #expect(WorkoutSessionTimeline(start: 5, events: [WorkoutEvent(type: .pause, date: 5)]).runningIntervals.isEmpty)
    }

    @Test func eventDatesNeverGoBackwards() {
        let timeline = WorkoutSessionTimeline(start: 1_000, events: [WorkoutEvent(type: .pause, date: 2_000)])
        #expect(timeline.eventDate(now: 1_500) == 2_000)
        #expect(timeline.eventDate(now: 2_500) == 2_500)
        #expect(WorkoutSessionTimeline(start: 1_000).eventDate(now: 900) == 1_000)
    }

    @Test func zoneBoundsAreValidated() {
        #expect(HeartRateZoneBounds.validated(low: 120, high: 150) == HeartRateZoneBounds(low: 120, high: 150))
        #expect(HeartRateZoneBounds.validated(low: 150, high: 150) == nil)
        #expect(HeartRateZoneBounds.validated(low: 29, high: 150) == nil)
        #expect(HeartRateZoneBounds.validated(low: 120, high: 251) == nil)
        #expect(HeartRateZoneBounds.validated(low: .nan, high: 150) == nil)
        let zone = HeartRateZoneBounds(low: 120, high: 150)
        #expect(zone.state(of: 119.9) == .below && zone.state(of: 120) == .inZone && zone.state(of: 150) == .inZone
            && zone.state(of: 150.5) == .above)
    }

    @Test func trackerReportsTheFirstReadingThenOnlyChanges() {
        var tracker = HeartRateZoneTracker(bounds: HeartRateZoneBounds(low: 100, high: 150))
        #expect(tracker.judge(heartRate: 90, at: 1) == .below)
        #expect(tracker.judge(heartRate: 95, at: 2) == nil)
        #expect(tracker.judge(heartRate: 120, at: 3) == .inZone)
        #expect(tracker.judge(heartRate: 160, at: 4) == .above)
        // Stale: older than the latest reading judged.
        #expect(tracker.judge(heartRate: 120, at: 3) == nil)
        #expect(tracker.current == .above)
        tracker.reset()
        #expect(tracker.judge(heartRate: 170, at: 5) == .above)
    }
}

// MARK: Store: totals and zone progress with explicit instants

private func instant(_ text: String) -> Int64 { RFC3339.parse(text) ?? 0 }

private func quantity(_ type: String, _ value: Double, _ unit: String, _ start: String, _ end: String) -> String {
    #"{"type":"\#(type)","value":\#(value),"unit":"\#(unit)","start":"\#(start)","end":"\#(end)"}"#
}

private struct WorkoutFixture {
    let server: TestServer
    let user: String
    /// The coaching app: shares workouts, reads heart rate and distance, not active energy.
    let coach: String
    /// The watch: writes heart rate, energy and distance; reads nothing.
    let watch: String
    /// An app reading steps only.
    let steps: String
    let otherUser: String

    init(server: TestServer? = nil) throws {
        self.server = try server ?? TestServer()
        user = self.server.createUser("runner")
        coach = self.server.token(user: user, app: "coach", read: ["heartRate", "distanceWalkingRunning", "workout"],
                                  share: ["workout", "activeEnergyBurned"])
        watch = self.server.token(user: user, app: "watch", read: [],
                                  share: ["heartRate", "activeEnergyBurned", "distanceWalkingRunning", "stepCount"])
        steps = self.server.token(user: user, app: "steps", read: ["stepCount"], share: ["workout"])
        let other = self.server.createUser("someone-else")
        otherUser = self.server.token(user: other, app: "coach", read: ["heartRate"], share: ["workout"])
    }

    func save(_ token: String, _ samples: [String]) {
        let reply = server.request(.post, "/v1/samples", token: token, json: #"{"samples":[\#(samples.joined(separator: ","))]}"#)
        #expect(reply.status == 201, "\(reply.text)")
    }

    func app(_ token: String) throws -> AppAuthorization {
        try #require(try server.store.authorization(tokenHash: TokenHashing.hash(token)))
    }
}

@Suite struct WorkoutSessionStoreTests {
    @Test func endSavesTheWorkoutWithEventsAndProRatedTotalsOverRunningTime() throws {
        let f = try WorkoutFixture()
        let store = f.server.store
        let coach = try f.app(f.coach)
        let session = try store.startWorkoutSession(app: coach, activityType: "running", zone: nil,
                                                    at: instant("2026-03-01T10:00:00Z"))
        _ = try store.changeWorkoutSession(id: session.id, app: coach, action: .pause, now: instant("2026-03-01T10:20:00Z"))
        _ = try store.changeWorkoutSession(id: session.id, app: coach, action: .resume, now: instant("2026-03-01T10:30:00Z"))
        // Running: [10:00, 10:20) and [10:30, 10:40).
        f.save(f.coach, [
            quantity("activeEnergyBurned", 20, "kcal", "2026-03-01T09:50:00Z", "2026-03-01T10:10:00Z"),  // half: 10
            quantity("activeEnergyBurned", 40, "kcal", "2026-03-01T10:15:00Z", "2026-03-01T10:35:00Z"),  // half: 20
            quantity("activeEnergyBurned", 10, "kcal", "2026-03-01T10:35:00Z", "2026-03-01T10:45:00Z"),  // half: 5
            quantity("activeEnergyBurned", 99, "kcal", "2026-03-01T10:21:00Z", "2026-03-01T10:29:00Z"),  // paused: 0
        ])
        // The coach may not read active energy: the watch's does not count. It may read distance.
        f.save(f.watch, [
            quantity("activeEnergyBurned", 500, "kcal", "2026-03-01T10:00:00Z", "2026-03-01T10:10:00Z"),
            quantity("distanceWalkingRunning", 4000, "m", "2026-03-01T10:00:00Z", "2026-03-01T10:40:00Z"),  // 30 of 40 min
        ])
        let ended = try store.endWorkoutSession(id: session.id, app: coach, now: instant("2026-03-01T10:40:00Z"))
        #expect(ended.state == .ended && ended.timeline.end == instant("2026-03-01T10:40:00Z"))
        let uuid = try #require(ended.workoutUUID)

        let reply = f.server.request(.get, "/v1/samples/\(uuid.lowercasedString)", token: f.coach)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply["type"]?.stringValue == "workout")
        #expect(reply["activityType"]?.stringValue == "running")
        #expect(reply["start"]?.stringValue == "2026-03-01T10:00:00.000Z")
        #expect(reply["end"]?.stringValue == "2026-03-01T10:40:00.000Z")
        #expect(reply["source"]?.objectValue?["app"]?.stringValue == "coach")
        let energy = try #require(reply["totalEnergyBurned"]?.objectValue)
        #expect(abs((energy["value"]?.numberValue ?? 0) - 35) < 1e-9)
        #expect(energy["unit"]?.stringValue == "kcal")
        let distance = try #require(reply["totalDistance"]?.objectValue)
        #expect(abs((distance["value"]?.numberValue ?? 0) - 3000) < 1e-9)
        let events = reply["events"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(events.map { $0["type"]?.stringValue } == ["pause", "resume"])
        #expect(events.map { $0["date"]?.stringValue } == ["2026-03-01T10:20:00.000Z", "2026-03-01T10:30:00.000Z"])
    }

    @Test func overlappingSourcesAreMergedByPriorityNotCountedTwice() throws {
        let f = try WorkoutFixture()
        let store = f.server.store
        let both = f.server.token(user: f.user, app: "phone", read: ["distanceWalkingRunning"],
                                  share: ["workout", "distanceWalkingRunning"])
        let phone = try f.app(both)
        // The watch saved distance first, so it ranks first; the phone's overlapping figure is shadowed.
        f.save(f.watch, [quantity("distanceWalkingRunning", 1000, "m", "2026-03-01T10:00:00Z", "2026-03-01T10:10:00Z")])
        f.save(both, [quantity("distanceWalkingRunning", 900, "m", "2026-03-01T10:00:00Z", "2026-03-01T10:10:00Z"),
                      quantity("distanceWalkingRunning", 50, "m", "2026-03-01T10:10:00Z", "2026-03-01T10:11:00Z")])
        let session = try store.startWorkoutSession(app: phone, activityType: "walking", zone: nil, at: instant("2026-03-01T10:00:00Z"))
        let ended = try store.endWorkoutSession(id: session.id, app: phone, now: instant("2026-03-01T10:15:00Z"))
        let uuid = try #require(ended.workoutUUID)
        let sample = try #require(try store.sample(uuid, for: phone, userExternalID: phone.userID))
        guard case .workout(let workout) = sample.sample.content else { Issue.record("not a workout"); return }
        #expect(workout.totalDistance.map { abs($0 - 1050) < 1e-9 } == true, "\(String(describing: workout.totalDistance))")
        #expect(throws: StoreError.self) { try store.changeWorkoutSession(id: session.id, app: phone, action: .end, now: 0) }
    }

    @Test func aTypeWithoutSamplesHasNoTotal() throws {
        let f = try WorkoutFixture()
        let coach = try f.app(f.coach)
        let session = try f.server.store.startWorkoutSession(app: coach, activityType: "cycling", zone: nil, at: instant("2026-03-01T10:00:00Z"))
        let ended = try f.server.store.endWorkoutSession(id: session.id, app: coach, now: instant("2026-03-01T11:00:00Z"))
        let reply = f.server.request(.get, "/v1/samples/\(ended.workoutUUID?.lowercasedString ?? "")", token: f.coach)
        #expect(reply.status == 200)
        #expect(reply["totalEnergyBurned"] == nil && reply["totalDistance"] == nil)
    }

    @Test func zoneJudgementSkipsPausesAndStaleReadingsAndResetsOnResume() throws {
        let f = try WorkoutFixture()
        let store = f.server.store
        let coach = try f.app(f.coach)
        let session = try store.startWorkoutSession(app: coach, activityType: "running", zone: HeartRateZoneBounds(low: 100, high: 150),
                                                    at: instant("2026-03-01T10:00:00Z"))
        func heartRate(_ bpm: Double, _ time: String) -> String { quantity("heartRate", bpm, "count/min", time, time) }
        f.save(f.watch, [heartRate(200, "2026-03-01T09:59:00Z"), heartRate(130, "2026-03-01T10:05:00Z"),
                         heartRate(135, "2026-03-01T10:06:00Z")])
        #expect(try store.advanceWorkoutZones(userRowID: coach.userRowID).map { [$0.heartRate] + [$0.state == .inZone ? 1 : 0] } == [[130, 1]])
        #expect(try store.advanceWorkoutZones(userRowID: coach.userRowID).isEmpty)

        _ = try store.changeWorkoutSession(id: session.id, app: coach, action: .pause, now: instant("2026-03-01T10:20:00Z"))
        f.save(f.watch, [heartRate(200, "2026-03-01T10:25:00Z")])
        #expect(try store.advanceWorkoutZones(userRowID: coach.userRowID).isEmpty)
        _ = try store.changeWorkoutSession(id: session.id, app: coach, action: .resume, now: instant("2026-03-01T10:30:00Z"))
        // The paused reading stays out; the state was reset, so "in" reports again.
        f.save(f.watch, [heartRate(140, "2026-03-01T10:35:00Z")])
        let resumed = try store.advanceWorkoutZones(userRowID: coach.userRowID)
        #expect(resumed == [WorkoutZoneChange(session: session.id, heartRate: 140, state: .inZone, date: instant("2026-03-01T10:35:00Z"),
                                              zone: HeartRateZoneBounds(low: 100, high: 150))])
        // A late reading older than the latest judged changes nothing; a newer one does.
        f.save(f.watch, [heartRate(90, "2026-03-01T10:34:00Z")])
        #expect(try store.advanceWorkoutZones(userRowID: coach.userRowID).isEmpty)
        f.save(f.watch, [heartRate(160, "2026-03-01T10:36:00Z"), heartRate(90, "2026-03-01T10:37:00Z")])
        #expect(try store.advanceWorkoutZones(userRowID: coach.userRowID).map(\.state) == [.above, .below])
    }
}

// MARK: Routes

private func sessionReply(_ f: WorkoutFixture, _ path: String, token: String, json: String? = nil) -> TestServer.Reply {
    f.server.request(.post, path, token: token, json: json)
}

@Suite struct WorkoutSessionRouteTests {
    @Test func startPauseResumeEndAndConflicts() throws {
        let f = try WorkoutFixture()
        let created = sessionReply(f, "/v1/workout-sessions", token: f.coach,
                                   json: #"{"activityType":"HKWorkoutActivityTypeRunning","zone":{"low":120,"high":150}}"#)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created["id"]?.stringValue)
        #expect(created["state"]?.stringValue == "running")
        #expect(created["activityType"]?.stringValue == "running")
        let start = try #require(created["start"]?.stringValue.flatMap { RFC3339.parse($0) })
        #expect(created["zone"]?.objectValue?["low"]?.numberValue == 120)
        #expect(created["end"] == .null && created["workout"] == .null)

        // One active session per app.
        let second = sessionReply(f, "/v1/workout-sessions", token: f.coach, json: #"{"activityType":"walking"}"#)
        #expect(second.status == 409 && second.text.contains(id))

        // A distance sample straddling the start (and the end, which comes within minutes).
        let straddling = quantity("distanceWalkingRunning", 1200, "m", RFC3339.format(start - 600_000), RFC3339.format(start + 600_000))
        f.save(f.watch, [straddling])

        #expect(sessionReply(f, "/v1/workout-sessions/\(id)/resume", token: f.coach).status == 409)
        let resumeWhileRunning = sessionReply(f, "/v1/workout-sessions/\(id)/resume", token: f.coach)
        #expect(resumeWhileRunning.code == "errorConflict" && resumeWhileRunning.text.contains("running"))
        let paused = sessionReply(f, "/v1/workout-sessions/\(id)/pause", token: f.coach, json: "{}")
        #expect(paused.status == 200 && paused["state"]?.stringValue == "paused")
        #expect(sessionReply(f, "/v1/workout-sessions/\(id)/pause", token: f.coach).text.contains("paused"))
        let resumed = sessionReply(f, "/v1/workout-sessions/\(id)/resume", token: f.coach)
        #expect(resumed.status == 200 && resumed["state"]?.stringValue == "running")
        #expect(resumed["events"]?.arrayValue?.count == 2)

        // Other apps and users do not see it.
        #expect(sessionReply(f, "/v1/workout-sessions/\(id)/pause", token: f.steps).status == 404)
        #expect(sessionReply(f, "/v1/workout-sessions/\(id)/end", token: f.otherUser).status == 404)
        #expect(f.server.request(.get, "/v1/workout-sessions/\(id)", token: f.otherUser).status == 404)
        #expect(f.server.request(.get, "/v1/workout-sessions/not-a-uuid", token: f.coach).status == 404)
        #expect(f.server.request(.get, "/v1/workout-sessions/\(id)", token: f.coach)["state"]?.stringValue == "running")

        let ended = sessionReply(f, "/v1/workout-sessions/\(id)/end", token: f.coach)
        #expect(ended.status == 200, "\(ended.text)")
        #expect(ended["state"]?.stringValue == "ended")
        let workout = try #require(ended["workout"]?.stringValue)
        let end = try #require(ended["end"]?.stringValue.flatMap { RFC3339.parse($0) })
        let events = ended["events"]?.arrayValue?.compactMap { $0.objectValue?["date"]?.stringValue.flatMap { RFC3339.parse($0) } } ?? []
        #expect(events.count == 2)
        let after = sessionReply(f, "/v1/workout-sessions/\(id)/end", token: f.coach)
        #expect(after.status == 409 && after.text.contains("ended"))

        let sample = f.server.request(.get, "/v1/samples/\(workout)", token: f.coach)
        #expect(sample["activityType"]?.stringValue == "running")
        #expect(sample["events"]?.arrayValue?.count == 2)
        // Pro-rated over the running time: start to pause, resume to end.
        let runningMilliseconds = (events[0] - start) + (end - events[1])
        let expected = 1200 * Double(runningMilliseconds) / 1_200_000
        let total = sample["totalDistance"]?.objectValue?["value"]?.numberValue
        #expect(total.map { abs($0 - expected) < 1e-6 } == true, "\(sample.text) expected \(expected)")

        // After the end, a new session may start.
        #expect(sessionReply(f, "/v1/workout-sessions", token: f.coach, json: #"{"activityType":"walking"}"#).status == 201)
    }

    @Test func badInputIsA4xxNamingTheField() throws {
        let f = try WorkoutFixture()
        func start(_ body: String, token: String? = nil) -> TestServer.Reply {
            sessionReply(f, "/v1/workout-sessions", token: token ?? f.coach, json: body)
        }
        func field(_ reply: TestServer.Reply) -> String? { reply["errors"]?.arrayValue?.first?.objectValue?["field"]?.stringValue }
        #expect(field(start(#"{"activityType":"flying"}"#)) == "activityType")
        #expect(field(start(#"{}"#)) == "activityType")
        #expect(field(start(#"{"activityType":"running","colour":"red"}"#)) == "colour")
        #expect(field(start(#"{"activityType":"running","zone":{"low":150,"high":120}}"#)) == "zone.high")
        #expect(field(start(#"{"activityType":"running","zone":{"low":20,"high":120}}"#)) == "zone.low")
        #expect(field(start(#"{"activityType":"running","zone":{"low":100,"high":300}}"#)) == "zone.high")
        #expect(field(start(#"{"activityType":"running","zone":{"low":100}}"#)) == "zone.high")
        #expect(field(start(#"{"activityType":"running","zone":{"low":100,"high":140,"max":190}}"#)) == "zone.max")
        #expect(field(start(#"{"activityType":"running","zone":{"low":"100","high":140}}"#)) == "zone.low")
        #expect(start(#"{"activityType":"running""#).status == 400)
        #expect(start(#"{"activityType":"running"}"#, token: f.watch).status == 403)
        #expect(f.server.request(.post, "/v1/workout-sessions", json: #"{"activityType":"running"}"#).status == 401)
        #expect(start(#"{"activityType":"running"}"#, token: TestServer.adminToken).status == 403)
        let id = try #require(start(#"{"activityType":"running"}"#)["id"]?.stringValue)
        #expect(sessionReply(f, "/v1/workout-sessions/\(id)/pause", token: f.coach, json: #"{"date":"now"}"#).status == 400)
        #expect(f.server.request(.post, "/v1/workout-sessions/\(id)/pause?x=1", token: f.coach).status == 400)
        #expect(f.server.request(.get, "/v1/workout-sessions/\(id)", token: f.coach)["state"]?.stringValue == "running")
    }
}

// MARK: Zone events on the change stream

/// Opens `/v1/changes/stream` and connects its producer to a recording stream.
private func openZoneStream(_ server: TestServer, token: String, query: String) throws -> RecordingBodyStream {
    let pending = PendingReply(server, "/v1/changes/stream?\(query)", token: token)
    let response = try #require(pending.wait())
    #expect(response.status.code == 200)
    guard case .stream(let producer) = response.body else {
        Issue.record("not a stream")
        return RecordingBodyStream()
    }
    let output = RecordingBodyStream()
    producer(output)
    return output
}

private func zoneEvents(_ stream: RecordingBodyStream) -> [(id: String?, data: JSONObject)] {
    stream.events.filter { $0.event == "zone" }.compactMap { event in
        (try? JSONParser.parse(event.data))?.objectValue.map { (event.id, $0) }
    }
}

private func heartRates(_ f: WorkoutFixture, after start: Int64, _ readings: [(seconds: Int64, bpm: Double)]) {
    f.save(f.watch, readings.map { reading in
        let time = RFC3339.format(start + reading.seconds * 1000)
        return quantity("heartRate", reading.bpm, "count/min", time, time)
    })
}

@Suite struct WorkoutZoneEventTests {
    @Test func readersOfHeartRateGetZoneChangesOthersDoNot() throws {
        let f = try WorkoutFixture()
        let reader = try openZoneStream(f.server, token: f.coach, query: "types=heartRate")
        let stepsOnly = try openZoneStream(f.server, token: f.steps, query: "types=stepCount")
        let created = sessionReply(f, "/v1/workout-sessions", token: f.coach,
                                   json: #"{"activityType":"running","zone":{"low":100,"high":150}}"#)
        let id = try #require(created["id"]?.stringValue)
        let start = try #require(created["start"]?.stringValue.flatMap { RFC3339.parse($0) })

        heartRates(f, after: start, [(-5, 200)])             // before the start: not judged
        heartRates(f, after: start, [(1, 90), (2, 95)])      // below, then still below
        heartRates(f, after: start, [(3, 120)])              // in
        heartRates(f, after: start, [(4, 160)])              // above
        #expect(reader.waitUntil { zoneEvents($0).count == 3 })
        let events = zoneEvents(reader)
        #expect(events.map { $0.data["state"]?.stringValue } == ["below", "in", "above"])
        #expect(events.map { $0.data["heartRate"]?.numberValue } == [90, 120, 160])
        #expect(events.allSatisfy { $0.data["session"]?.stringValue == id && $0.id == nil })
        #expect(events.first?.data["date"]?.stringValue == RFC3339.format(start + 1000))
        #expect(events.first?.data["zone"]?.objectValue?["low"]?.numberValue == 100)
        #expect(events.first?.data["zone"]?.objectValue?["high"]?.numberValue == 150)
        // Each zone event follows the change event that carried its reading.
        let kinds = reader.events.map(\.event)
        let firstZone = try #require(kinds.firstIndex(of: "zone"))
        #expect(kinds[..<firstZone].filter { $0 == "change" }.count >= 2)

        // Pause, resume: the state starts over, so the same state reports again.
        #expect(sessionReply(f, "/v1/workout-sessions/\(id)/pause", token: f.coach).status == 200)
        #expect(sessionReply(f, "/v1/workout-sessions/\(id)/resume", token: f.coach).status == 200)
        heartRates(f, after: start, [(60, 170)])
        #expect(reader.waitUntil { zoneEvents($0).count == 4 })
        #expect(zoneEvents(reader).last?.data["state"]?.stringValue == "above")

        // The steps app cannot read heart rate: a later change reaches it, no zone event ever did.
        f.save(f.watch, [quantity("stepCount", 10, "count", RFC3339.format(start), RFC3339.format(start + 5000))])
        #expect(stepsOnly.waitUntil { $0.events.contains { $0.event == "change" && $0.data.contains("stepCount") } })
        #expect(zoneEvents(stepsOnly).isEmpty)

        // After the end, nothing more.
        #expect(sessionReply(f, "/v1/workout-sessions/\(id)/end", token: f.coach).status == 200)
        heartRates(f, after: start, [(120, 90)])
        f.save(f.watch, [quantity("stepCount", 11, "count", RFC3339.format(start + 6000), RFC3339.format(start + 7000))])
        #expect(reader.waitUntil { $0.events.filter { $0.event == "change" }.contains { $0.data.contains("\"value\":90") } })
        #expect(zoneEvents(reader).count == 4)
    }

    @Test func aRestartKeepsARunningSession() throws {
        let directory = NSTemporaryDirectory() + "healthd-workout-restart-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let id: String, start: Int64, coach: String, watch: String
        do {
            let f = try WorkoutFixture(server: TestServer(directory: directory))
            let created = sessionReply(f, "/v1/workout-sessions", token: f.coach,
                                       json: #"{"activityType":"cycling","zone":{"low":100,"high":150}}"#)
            id = try #require(created["id"]?.stringValue)
            start = try #require(created["start"]?.stringValue.flatMap { RFC3339.parse($0) })
            coach = f.coach
            watch = f.watch
            let reader = try openZoneStream(f.server, token: f.coach, query: "types=heartRate")
            heartRates(f, after: start, [(1, 120)])
            #expect(reader.waitUntil { zoneEvents($0).count == 1 })
        }
        let server = try TestServer(directory: directory)
        #expect(server.request(.get, "/v1/workout-sessions/\(id)", token: coach)["state"]?.stringValue == "running")
        let reader = try openZoneStream(server, token: coach, query: "types=heartRate")
        // The judged state survived: 125 is still "in" (no event), 170 is the first change.
        for (seconds, bpm) in [(2, 125.0), (3, 170.0)] as [(Int64, Double)] {
            let time = RFC3339.format(start + seconds * 1000)
            let saved = server.request(.post, "/v1/samples", token: watch,
                                       json: #"{"samples":[\#(quantity("heartRate", bpm, "count/min", time, time))]}"#)
            #expect(saved.status == 201)
        }
        #expect(reader.waitUntil { zoneEvents($0).count == 1 })
        #expect(zoneEvents(reader).map { $0.data["heartRate"]?.numberValue } == [170])
        #expect(zoneEvents(reader).first?.data["state"]?.stringValue == "above")
        let ended = server.request(.post, "/v1/workout-sessions/\(id)/end", token: coach)
        #expect(ended.status == 200 && ended["workout"]?.stringValue != nil)
    }
}
