import Foundation
import Testing
import HealthModel
@testable import HealthStore
@testable import SQLiteStore

/// The store's change feed, activity summaries and workout sessions, tested without the HTTP layer.
@Suite struct StoreFeatureTests {
    private static let t0: Int64 = 1_772_960_400_000  // 2026-03-08T09:00:00Z

    private func world() throws -> (TemporaryStore, User, AppAuthorization) {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let types = ["stepCount", "distanceWalkingRunning", "activeEnergyBurned", "heartRate", "workout"]
        let (app, _) = try t.store.createAuthorization(user: user, app: "phone", read: Set(types), share: Set(types))
        return (t, user, app)
    }

    @Test func changesPageAdditionsAndDeletionsInCommitOrderFromAnAnchor() throws {
        let (t, user, app) = try world()
        let first = try t.store.save((0..<3).map { steps(Double($0 + 1), start: Self.t0 + Int64($0) * 60_000) }, by: app)
        var page = try t.store.changes(ChangeRequest(types: ["stepCount"], after: nil, limit: 2), for: app, userExternalID: user.id)
        #expect(page.added.map(\.sample.uuid) == Array(first.prefix(2)) && page.more)
        page = try t.store.changes(ChangeRequest(types: ["stepCount"], after: page.next, limit: 2), for: app, userExternalID: user.id)
        #expect(page.added.map(\.sample.uuid) == [first[2]] && !page.more)
        let anchor = page.next

        try t.store.deleteSample(first[0], by: app)
        let later = try t.store.save([steps(9, start: Self.t0 + 600_000)], by: app)
        page = try t.store.changes(ChangeRequest(types: ["stepCount"], after: anchor, limit: 10), for: app, userExternalID: user.id)
        #expect(page.deleted == [DeletedSample(uuid: first[0], type: "stepCount")])
        #expect(page.added.map(\.sample.uuid) == later)
        // Other types are not in a stepCount feed; nothing new after the last page.
        _ = try t.store.save([HealthSample(uuid: .random(), type: "heartRate", start: Self.t0, end: Self.t0, content: .quantity(70))], by: app)
        let quiet = try t.store.changes(ChangeRequest(types: ["stepCount"], after: page.next, limit: 10), for: app, userExternalID: user.id)
        #expect(quiet.isEmpty)
    }

    @Test func activitySummariesReplaceTheirDayAndReadBackInRange() throws {
        let (t, user, _) = try world()
        let days = ["2026-03-07", "2026-03-08", "2026-03-09"].compactMap { HealthDate.parseDay($0) }
        try #require(days.count == 3)
        try t.store.saveActivitySummaries(days.map { ActivitySummary(day: $0, activeEnergyBurned: 100, activeEnergyBurnedGoal: 500) },
                                          userRowID: user.rowID)
        // A later export knows the finished day: it replaces the stored one, absent fields included.
        try t.store.saveActivitySummaries([ActivitySummary(day: days[1], activeEnergyBurned: 620, appleStandHours: 11)],
                                          userRowID: user.rowID)
        let read = try t.store.activitySummaries(userRowID: user.rowID, from: days[1], through: days[2])
        #expect(read.map(\.day) == [days[1], days[2]])
        #expect(read.first == ActivitySummary(day: days[1], activeEnergyBurned: 620, appleStandHours: 11))
        #expect(try t.store.activitySummaries(userRowID: user.rowID + 1, from: days[0], through: days[2]).isEmpty)
    }

    @Test func workoutSessionRunsPausesEndsAndSavesItsWorkout() throws {
        let (t, user, app) = try world()
        let session = try t.store.startWorkoutSession(app: app, activityType: "running", zone: nil, at: Self.t0)
        #expect(session.state == .running)
        #expect(throws: StoreError.self) { try t.store.startWorkoutSession(app: app, activityType: "walking", zone: nil, at: Self.t0) }
        // 10 minutes running, 5 paused, 5 running: only the running stretches count toward totals.
        _ = try t.store.save([HealthSample(uuid: .random(), type: "distanceWalkingRunning", start: Self.t0, end: Self.t0 + 1_200_000,
                                           content: .quantity(2_000))], by: app)
        _ = try t.store.changeWorkoutSession(id: session.id, app: app, action: .pause, now: Self.t0 + 600_000)
        #expect(throws: WorkoutSessionTransitionError(current: .paused, action: .pause)) {
            try t.store.changeWorkoutSession(id: session.id, app: app, action: .pause, now: Self.t0 + 700_000)
        }
        _ = try t.store.changeWorkoutSession(id: session.id, app: app, action: .resume, now: Self.t0 + 900_000)
        let workoutUUID = HealthUUID.random()
        let ended = try t.store.endWorkoutSession(id: session.id, app: app, now: Self.t0 + 1_200_000, workoutUUID: workoutUUID)
        #expect(ended.state == .ended && ended.workoutUUID == workoutUUID)
        #expect(ended.timeline.runningIntervals == [Self.t0..<(Self.t0 + 600_000), (Self.t0 + 900_000)..<(Self.t0 + 1_200_000)])
        let stored = try #require(try t.store.sample(workoutUUID, for: app, userExternalID: user.id))
        guard case .workout(let details) = stored.sample.content else { Issue.record("not a workout"); return }
        #expect(details.activityType == "running")
        #expect(abs((details.totalDistance ?? 0) - 1_500) < 1e-9, "15 of the 20 minutes ran: 3/4 of 2,000 m")
        #expect(try t.store.workoutSession(id: session.id, app: app)?.state == .ended)
        // Another app of the same user does not see the session.
        let (other, _) = try t.store.createAuthorization(user: user, app: "watch", read: ["workout"], share: ["workout"])
        #expect(try t.store.workoutSession(id: session.id, app: other) == nil)
    }
}
