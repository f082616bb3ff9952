import Foundation
import HealthModel
@testable import HealthStore
import PostgreSQL
@testable import PostgresStore
import Statistics
import PostgresTestSupport
import Testing

/// IMU sessions, workout sessions and activity summaries on PostgreSQL, with two pools on one
/// database standing for two healthd nodes.
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresSessionsTests {
    static let app = AppAuthorization(id: "auth", userRowID: RollupTestWriter.user, userID: "user", appName: "app-1",
                                      sourceRowID: 1, read: ["heartRate"], share: ["workout", "heartRate"])

    static func batch(_ seq: Int?, steps: Int, ended: Bool = false) -> IMUBatchResult {
        let start = PostgresStatisticsTests.base + Int64(seq ?? 9) * 30_000
        return IMUBatchResult(state: [UInt8(seq ?? 255), 1, 2], samples: [], start: start, end: start + 30_000, steps: steps,
                              distance: Double(steps) * 0.7, floorsAscended: 0, floorsDescended: 0,
                              cadence: steps > 0 ? 1.8 : nil, pace: nil, ended: ended,
                              response: Array("answer \(seq ?? -1) \(steps)".utf8))
    }

    /// Reads, then commits on `pool`; returns the answer (or the replay) as the route would.
    static func send(_ seq: Int?, steps: Int, ended: Bool = false, through pool: PostgresPool) throws -> [UInt8] {
        let lookup = try pool.read { connection in
            try PostgresIMUSessions.lookup(userRowID: app.userRowID, sourceRowID: app.sourceRowID, session: "walk",
                                           seq: seq, on: connection)
        }
        switch lookup {
        case .replay(let answer): return answer
        case .ready(let basis):
            let result = batch(seq, steps: steps, ended: ended)
            try commit(seq, basis: basis, result: result, through: pool)
            return result.response
        }
    }

    static func commit(_ seq: Int?, basis: IMUSessionState, result: IMUBatchResult, through pool: PostgresPool) throws {
        try pool.transaction { connection in
            try PostgresIMUSessions.commit(userRowID: app.userRowID, sourceRowID: app.sourceRowID, session: "walk", seq: seq,
                                           device: nil, basis: basis, result: result, on: connection) {}
        }
    }

    /// One session's batches alternate between two nodes: each node continues from the state the
    /// other committed, a repeated seq replays the first answer whichever node took it, a gap is
    /// `unexpectedSeq`, two nodes committing the same seq from the same read cannot both succeed
    /// (the loser re-reads and replays the winner), and after the end nothing more is taken.
    @Test func batchesOfOneSessionAlternateBetweenTwoNodes() throws {
        let schema = try TestSchema.migratedToStore()
        let nodeA = try schema.pool(), nodeB = try schema.pool()
        #expect(try Self.send(0, steps: 10, through: nodeA) == Array("answer 0 10".utf8))
        #expect(try Self.send(1, steps: 12, through: nodeB) == Array("answer 1 12".utf8))
        #expect(try Self.send(1, steps: 99, through: nodeA) == Array("answer 1 12".utf8), "a repeat replays node B's answer")
        #expect(throws: IMUIngestError.unexpectedSeq(expected: 2)) { try Self.send(3, steps: 1, through: nodeB) }

        // Both nodes read seq 2 before either commits.
        let read = { (pool: PostgresPool) in
            try pool.read { connection in
                try PostgresIMUSessions.lookup(userRowID: Self.app.userRowID, sourceRowID: Self.app.sourceRowID,
                                               session: "walk", seq: 2, on: connection)
            }
        }
        guard case .ready(let basisA) = try read(nodeA), case .ready(let basisB) = try read(nodeB) else {
            Issue.record("seq 2 should be ready on both nodes")
            return
        }
        #expect(basisA == basisB && basisA.nextSeq == 2 && basisA.detectorState == [1, 1, 2])
        try Self.commit(2, basis: basisA, result: Self.batch(2, steps: 7), through: nodeA)
        #expect(throws: IMUIngestError.sessionChanged) {
            try Self.commit(2, basis: basisB, result: Self.batch(2, steps: 8), through: nodeB)
        }
        #expect(try Self.send(2, steps: 8, through: nodeB) == Array("answer 2 7".utf8), "the loser replays the winner")

        #expect(try Self.send(nil, steps: 0, ended: true, through: nodeB) == Array("answer -1 0".utf8))
        #expect(throws: IMUIngestError.sessionEnded) { try Self.send(3, steps: 1, through: nodeA) }
        #expect(try Self.send(nil, steps: 0, through: nodeA) == Array("answer -1 0".utf8), "the end replays too")

        // A new session needs seq 0, and an end needs a session.
        let other = { (seq: Int?) in
            try nodeA.read { connection in
                try PostgresIMUSessions.lookup(userRowID: Self.app.userRowID, sourceRowID: Self.app.sourceRowID,
                                               session: "other", seq: seq, on: connection)
            }
        }
        #expect(throws: IMUIngestError.unexpectedSeq(expected: 0)) { try other(1) }
        #expect(throws: IMUIngestError.unknownSession) { try other(nil) }

        // Figures of batches 0-2 (10 + 12 + 7 steps), half of batch 2 cut off by the range.
        let totals = try nodeB.read { connection in
            try PostgresIMUSessions.totals(userRowID: Self.app.userRowID, sourceRowID: Self.app.sourceRowID,
                                           start: PostgresStatisticsTests.base,
                                           end: PostgresStatisticsTests.base + 75_000, on: connection)
        }
        #expect(totals.steps == 25.5)
        #expect(totals.activeSeconds == 75)
        #expect(totals.currentCadence == 1.8)
    }

    /// Two nodes cannot both start a session for one app; pause and resume apply to the state the
    /// other node committed; zone judgement publishes a change once even when both nodes judge;
    /// ending saves the workout with the running stretches' merged totals.
    @Test func workoutSessionAcrossTwoNodes() throws {
        let schema = try TestSchema.migratedToStore()
        let writer = try schema.connect()
        try RollupTestWriter.prepare(writer, sources: 2)
        let nodeA = try schema.pool(), nodeB = try schema.pool()
        let base = PostgresStatisticsTests.base
        let session = try nodeA.transaction { connection in
            try PostgresWorkoutSessions.start(app: Self.app, activityType: "running", zone: HeartRateZoneBounds(low: 120, high: 150),
                                              at: base, currentChange: 0, on: connection)
        }
        #expect(throws: StoreError.self) {
            try nodeB.transaction { connection in
                try PostgresWorkoutSessions.start(app: Self.app, activityType: "walking", zone: nil, at: base, currentChange: 0,
                                                  on: connection)
            }
        }
        // Heart rates: below at +1 min, in the zone at +2 min; both nodes judge.
        let heartRate = RollupTestWriter.heartRate
        _ = try RollupTestWriter.save([StatisticsSample(id: 0, start: base + 60_000, end: base + 60_000, value: 100, source: 2),
                                       StatisticsSample(id: 0, start: base + 120_000, end: base + 120_000, value: 130, source: 1)],
                                      typeCode: heartRate, on: writer)
        let judged = try [nodeA, nodeB].flatMap { pool in
            try pool.transaction { connection in
                try PostgresWorkoutSessions.advanceZones(userRowID: Self.app.userRowID, heartRateCode: heartRate, on: connection)
            }
        }
        #expect(judged.map(\.state) == [.below, .inZone])
        #expect(judged.allSatisfy { $0.session == session.id })

        let paused = try nodeB.transaction { connection in
            try PostgresWorkoutSessions.change(id: session.id, owner: AppSource(Self.app), action: .pause, now: base + 10 * 60_000, on: connection)
        }
        #expect(paused.state == .paused)
        #expect(throws: WorkoutSessionTransitionError.self) {
            try nodeA.transaction { connection in
                try PostgresWorkoutSessions.change(id: session.id, owner: AppSource(Self.app), action: .pause, now: base + 11 * 60_000, on: connection)
            }
        }
        _ = try nodeA.transaction { connection in
            try PostgresWorkoutSessions.change(id: session.id, owner: AppSource(Self.app), action: .resume, now: base + 20 * 60_000, on: connection)
        }
        #expect(try nodeA.read { try PostgresWorkoutSessions.activeCounts(on: $0) } == [Self.app.userRowID: 1])

        // Distance: 600 m over 0-10 min (running) and 600 m over 10-20 min (paused): 600 count.
        let distanceCode: Int64 = 3
        _ = try RollupTestWriter.save([StatisticsSample(id: 0, start: base, end: base + 10 * 60_000, value: 600, source: 1),
                                       StatisticsSample(id: 0, start: base + 10 * 60_000, end: base + 20 * 60_000, value: 600, source: 1)],
                                      typeCode: distanceCode, on: writer)
        var savedWorkout: HealthSample?
        let (ended, _) = try nodeB.transaction { connection in
            try PostgresWorkoutSessions.end(id: session.id, app: Self.app, visibility: ReadVisibility(app: Self.app), now: base + 30 * 60_000, workoutUUID: .random(),
                                            typeCode: { $0 == "distanceWalkingRunning" ? distanceCode : nil }, on: connection) {
                savedWorkout = $0
            }
        }
        #expect(ended.state == .ended && ended.timeline.end == base + 30 * 60_000)
        guard case .workout(let details)? = savedWorkout?.content else {
            Issue.record("the workout sample was not saved")
            return
        }
        #expect(details.totalDistance == 600)
        #expect(details.totalEnergyBurned == nil)
        #expect(try nodeA.read { try PostgresWorkoutSessions.activeCounts(on: $0) }.isEmpty)
        #expect(try nodeA.read { try PostgresWorkoutSessions.owned(id: session.id, owner: AppSource(Self.app), on: $0) } == ended)
    }

    @Test func activitySummariesReplaceTheirDay() throws {
        let schema = try TestSchema.migratedToStore()
        let pool = try schema.pool()
        let day = { (text: String) in HealthDate.parseDay(text) }
        guard let first = day("2026-03-01"), let second = day("2026-03-02"), let third = day("2026-03-03") else {
            Issue.record("days do not parse")
            return
        }
        try pool.transaction { connection in
            try PostgresActivitySummaries.save([ActivitySummary(day: first, activeEnergyBurned: 300, activeEnergyBurnedGoal: 500),
                                                ActivitySummary(day: third, appleStandHours: 9)],
                                               userRowID: 5, on: connection)
            try PostgresActivitySummaries.save([ActivitySummary(day: first, activeEnergyBurned: 420)], userRowID: 5, on: connection)
        }
        let loaded = try pool.read { try PostgresActivitySummaries.load(userRowID: 5, from: first, through: second, on: $0) }
        #expect(loaded == [ActivitySummary(day: first, activeEnergyBurned: 420)])
        let all = try pool.read { try PostgresActivitySummaries.load(userRowID: 5, from: first, through: third, on: $0) }
        #expect(all.map(\.day) == [first, third])
        #expect(try pool.read { try PostgresActivitySummaries.load(userRowID: 6, from: first, through: third, on: $0) }.isEmpty)
    }
}
