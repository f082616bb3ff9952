import Dispatch
import Foundation
import HealthModel
import HealthStore
import PostgresStore
import Statistics
import TimeZoneDatabase
import Synchronization
import PostgresTestSupport
import Testing

/// Statistics, IMU sessions, workout sessions and activity summaries through `HealthDataStore`,
/// the same checks on both backends; on PostgreSQL, every read also goes to a second node.
enum StatisticsBehaviour {
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000
    /// 2026-03-01T00:00Z: New York's DST change falls inside the ranges below.
    static let base: Int64 = 1_772_323_200_000

    /// Random saves (phone and watch overlapping), deletes and priority changes through the store's
    /// own write path; after each, the daily buckets in New York (a 23-hour day among them) and
    /// 40-minute buckets off every 15-minute slot equal the direct computation over the samples
    /// present, merged by the store's effective priority, on every node.
    static func statisticsFollowWrites(_ t: TestStore, nodes: [any HealthDataStore]) throws {
        let user = try t.store.userCreatingIfNeeded(name: "alice")
        let types: Set<String> = ["stepCount", "heartRate"]
        let phone = try t.store.createAuthorization(user: user, app: "phone", read: types, share: types).authorization
        let watch = try t.store.createAuthorization(user: user, app: "watch", read: types, share: types).authorization
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        let heartType = try #require(HealthTypeCatalog.type("heartRate"))
        let newYork = try BucketCalendar(timeZoneIdentifier: "America/New_York")
        let utc = try BucketCalendar(timeZoneIdentifier: "UTC")
        let bucketSets = [
            try newYork.buckets(start: base - 2 * day, end: base + 12 * day, anchor: base + 5 * hour,
                                interval: CalendarInterval(unit: .day, count: 1)),
            try utc.buckets(start: base + 6 * day, end: base + 8 * day, anchor: base + 7 * 60_000,
                            interval: CalendarInterval(unit: .minute, count: 40)),
        ]
        var random = SplitMix(seed: 4_242)
        var present: [HealthUUID: (sample: HealthSample, app: String)] = [:]
        for step in 0..<10 {
            switch random.integer(0...9) {
            case 0...5:
                let app = random.integer(0...1) == 0 ? phone : watch
                let batch = (0..<Int(random.integer(1...40))).map { _ -> HealthSample in
                    let start = base + random.integer(-day...(10 * day))
                    if random.integer(0...2) == 0 { return heartRate(Double(random.integer(40...180)), at: start) }
                    return steps(Double(random.integer(0...300)), start: start, seconds: random.integer(0...7_200))
                }
                _ = try t.store.save(batch, by: app)
                for sample in batch { present[sample.uuid] = (sample, app.appName) }
            case 6...7:
                for uuid in present.keys.shuffled(using: &random).prefix(Int(random.integer(1...5))) {
                    guard let owner = present[uuid] else { continue }
                    try t.store.deleteSample(uuid, by: owner.app == "phone" ? phone : watch)
                    present[uuid] = nil
                }
            default:
                let order = random.integer(0...1) == 0 ? ["phone", "watch"] : ["watch"]
                try t.store.setSourcePriority(userRowID: user.rowID, type: stepType, apps: order)
            }
            for (index, buckets) in bucketSets.enumerated() {
                for (type, options) in [(stepType, StatisticsOptions([.cumulativeSum, .separateBySource])),
                                        (heartType, StatisticsOptions([.discreteAverage, .discreteMin, .discreteMax, .mostRecent,
                                                                       .separateBySource]))] {
                    for (number, node) in nodes.enumerated() {
                        let answer = try node.statistics(userRowID: user.rowID, type: type, buckets: buckets, options: options)
                        let ids = Dictionary(answer.appNames.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
                        let order = try node.sourcePriority(userRowID: user.rowID, type: type).compactMap { ids[$0] }
                        let samples = present.values.filter { $0.sample.type == type.id }.compactMap { entry -> StatisticsSample? in
                            guard let source = ids[entry.app], case .quantity(let value) = entry.sample.content else { return nil }
                            return StatisticsSample(id: 0, start: entry.sample.start, end: entry.sample.end, value: value, source: source)
                        }
                        let style: AggregationStyle = type.id == "stepCount" ? .cumulative : .discrete
                        let expected = try statisticsCollection(of: samples, buckets: buckets, style: style, options: options,
                                                                priority: SourcePriority(order))
                        let same = PostgresStatisticsTests.same(answer.buckets, expected)
                        #expect(same, "step \(step) \(type.id) buckets \(index) node \(number)")
                    }
                }
            }
        }
    }

    /// An IMU session's batches alternate between the nodes; its samples reach the statistics.
    static func imuBatchesAlternateNodes(_ t: TestStore, nodes: [any HealthDataStore]) throws {
        let user = try t.store.userCreatingIfNeeded(name: "bob")
        let app = try t.store.createAuthorization(user: user, app: "pedometer", read: ["stepCount"], share: ["stepCount"]).authorization
        for seq in 0..<4 {
            let node = nodes[seq % nodes.count]
            guard case .ready(let basis) = try node.imuSession(app: app, session: "walk", seq: seq) else {
                Issue.record("seq \(seq) should be ready")
                return
            }
            let start = base + Int64(seq) * 30_000
            let result = IMUBatchResult(state: [UInt8(seq)], samples: [steps(10, start: start, seconds: 30)], start: start,
                                        end: start + 30_000, steps: 10, distance: 7, floorsAscended: 0, floorsDescended: 0,
                                        cadence: 1.8, pace: 0.8, ended: false, response: Array("batch \(seq)".utf8))
            let answer = try commit(node, app: app, seq: seq, basis: basis, result: result)
            #expect(answer == Array("batch \(seq)".utf8))
            // The other node replays it.
            #expect(try nodes[(seq + 1) % nodes.count].imuSession(app: app, session: "walk", seq: seq) == .replay(answer))
        }
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        let bucket = CalendarBucket(start: base, end: base + day, startOffsetSeconds: 0, endOffsetSeconds: 0)
        for node in nodes {
            let answer = try node.statistics(userRowID: user.rowID, type: stepType, buckets: [bucket], options: .cumulativeSum)
            #expect(answer.buckets.first?.figures.sum == 40)
            #expect(try node.pedometerTotals(app: app, start: base, end: base + day).steps == 40)
        }
    }

    static func commit(_ store: any HealthDataStore, app: AppAuthorization, seq: Int, basis: IMUSessionState,
                       result: IMUBatchResult) throws -> [UInt8] {
        let outcome = Mutex<Result<[UInt8], any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        store.commitIMU(app: app, session: "walk", seq: seq, device: nil, basis: basis, result: result) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw StoreError.invalid("no outcome") }
        return try result.get()
    }

    /// A session started on one node is seen, paused and ended on the other; ending saves the workout.
    static func workoutSessionsAndSummaries(_ t: TestStore, nodes: [any HealthDataStore]) throws {
        let user = try t.store.userCreatingIfNeeded(name: "carol")
        let app = try t.store.createAuthorization(user: user, app: "coach", read: ["heartRate"],
                                                  share: ["workout", "heartRate", "distanceWalkingRunning"]).authorization
        let first = nodes[0], second = nodes[nodes.count - 1]
        let session = try first.startWorkoutSession(app: app, activityType: "running", zone: HeartRateZoneBounds(low: 120, high: 150),
                                                    at: base)
        #expect(throws: StoreError.self) { try second.startWorkoutSession(app: app, activityType: "walking", zone: nil, at: base) }
        #expect(try second.workoutSession(id: session.id, app: app) == session)
        _ = try t.store.save([heartRate(130, at: base + 60_000),
                              HealthSample(uuid: .random(), type: "distanceWalkingRunning", start: base, end: base + 600_000,
                                           content: .quantity(1_000))], by: app)
        let changes = try nodes.flatMap { try $0.advanceWorkoutZones(userRowID: user.rowID) }
        #expect(changes.map(\.state) == [.inZone], "judged once across nodes")
        _ = try second.changeWorkoutSession(id: session.id, app: app, action: .pause, now: base + 300_000)
        #expect(try first.activeWorkoutSessionCounts()[user.rowID] == 1)
        let ended = try first.endWorkoutSession(id: session.id, app: app, now: base + 900_000)
        #expect(ended.state == .ended)
        let workoutUUID = try #require(ended.workoutUUID)
        let stored = try #require(try second.sample(workoutUUID, for: app, userExternalID: user.id))
        guard case .workout(let details) = stored.sample.content else {
            Issue.record("the session's workout was not saved")
            return
        }
        #expect(abs((details.totalDistance ?? 0) - 500) < 1e-9, "the first 5 of 10 minutes ran")
        #expect(try second.activeWorkoutSessionCounts()[user.rowID] == nil)

        let march1 = try #require(HealthDate.parseDay("2026-03-01"))
        try first.saveActivitySummaries([ActivitySummary(day: march1, activeEnergyBurned: 300)], userRowID: user.rowID)
        try second.saveActivitySummaries([ActivitySummary(day: march1, activeEnergyBurned: 450)], userRowID: user.rowID)
        #expect(try first.activitySummaries(userRowID: user.rowID, from: march1, through: march1)
                == [ActivitySummary(day: march1, activeEnergyBurned: 450)])
    }
}

@Suite struct SQLiteStatisticsBehaviourTests {
    @Test func statisticsFollowWrites() throws {
        let t = try TestStore(.sqlite)
        try StatisticsBehaviour.statisticsFollowWrites(t, nodes: [t.store])
    }
    @Test func imuBatches() throws {
        let t = try TestStore(.sqlite)
        try StatisticsBehaviour.imuBatchesAlternateNodes(t, nodes: [t.store])
    }
    @Test func workoutSessionsAndSummaries() throws {
        let t = try TestStore(.sqlite)
        try StatisticsBehaviour.workoutSessionsAndSummaries(t, nodes: [t.store])
    }
}

@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresStatisticsBehaviourTests {
    @Test func statisticsFollowWritesOnTwoNodes() throws {
        let t = try TestStore(.postgres)
        try StatisticsBehaviour.statisticsFollowWrites(t, nodes: [t.store, try t.secondNode()])
    }
    @Test func imuBatchesAlternateNodes() throws {
        let t = try TestStore(.postgres)
        try StatisticsBehaviour.imuBatchesAlternateNodes(t, nodes: [t.store, try t.secondNode()])
    }
    @Test func workoutSessionsAndSummariesOnTwoNodes() throws {
        let t = try TestStore(.postgres)
        try StatisticsBehaviour.workoutSessionsAndSummaries(t, nodes: [t.store, try t.secondNode()])
    }
}
