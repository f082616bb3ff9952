import Foundation
import Testing
import HealthModel
import SQLite
import Statistics
@testable import HealthStore

@Suite struct StatisticsRollupTests {
    static let day0 = StatisticsIndexTests.day0

    static func dailySums(_ store: HealthStore, user: User, type: HealthType, days: Int) throws -> [Double?] {
        let buckets = (0..<days).map { day in
            CalendarBucket(start: day0 + Int64(day) * 86_400_000, end: day0 + Int64(day + 1) * 86_400_000,
                           startOffsetSeconds: 0, endOffsetSeconds: 0)
        }
        return try store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: buckets) { snapshot in
            try snapshot.index.statisticsCollection(buckets: buckets, options: .cumulativeSum).map(\.figures.sum)
        }
    }

    /// A database written before rollups existed (the rollup tables and their migration record
    /// removed, as that schema had them) is carried forward: opening it builds every series' rows,
    /// and the answers equal the direct computation over its samples.
    @Test func migrationBuildsRollupsForAnExistingDatabase() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount", "heartRate"])
        let (watch, _) = try t.store.createAuthorization(user: user, app: "watch", read: [], share: ["stepCount"])
        guard let type = HealthTypeCatalog.type("stepCount"), let heart = HealthTypeCatalog.type("heartRate") else { return }
        // Overlapping sources, a sample across midnight, and heart rate.
        _ = try t.store.save((0..<30).map { steps(10, start: Self.day0 + Int64($0) * 3_600_000, seconds: 600) }, by: phone)
        _ = try t.store.save([steps(100, start: Self.day0 + 23 * 3_600_000, seconds: 7_200)], by: watch)
        _ = try t.store.save([HealthSample(uuid: .random(), type: "heartRate", start: Self.day0 + 5_000, end: Self.day0 + 5_000,
                                           content: .quantity(61))], by: phone)
        let before = try Self.dailySums(t.store, user: user, type: type, days: 3)
        t.store.close()
        let database = try Database(path: t.directory + "/healthd.sqlite")
        let version = try database.first("SELECT max(id) FROM schema_migrations", [], { try $0.int64(at: 0) }) ?? 0
        let rollupMigration = try database.first("SELECT id FROM schema_migrations WHERE name = '009-statistics-rollups'", [],
                                                 { try $0.int64(at: 0) })
        let rollupID = try #require(rollupMigration)
        // Back to the schema before rollups: the rollup migration and the ones after it are undone.
        #expect(version == rollupID + 1, "this test undoes every migration after the rollups' (the read disclosure flag)")
        try database.execute("DROP TABLE statistics_days; DROP TABLE statistics_series")
        try database.execute("ALTER TABLE authorizations DROP COLUMN discloses_read")
        try database.execute("DELETE FROM schema_migrations WHERE id >= \(rollupID); PRAGMA user_version = \(rollupID - 1)")
        database.close()
        try t.reopen()
        let rows = try t.store.pool.read { db in try db.first("SELECT count(*) FROM statistics_days", [], { try $0.int64(at: 0) }) }
        #expect((rows ?? 0) == 3)  // steps on days 0 and 1 (the watch's sample runs past midnight), heart rate on day 0
        let after = try Self.dailySums(t.store, user: user, type: type, days: 3)
        #expect(after == before)
        let all = try t.store.statisticsSamples(userRowID: user.rowID, type: type)
        let priority = SourcePriority(try t.store.sourcePriority(userRowID: user.rowID, type: type).compactMap { app in
            try t.store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: span(Self.day0, Self.day0 + 1)) { $0.source(ofApp: app) }
        })
        let direct = try statisticsCollection(of: all, buckets: (0..<3).map { day in
            CalendarBucket(start: Self.day0 + Int64(day) * 86_400_000, end: Self.day0 + Int64(day + 1) * 86_400_000,
                           startOffsetSeconds: 0, endOffsetSeconds: 0)
        }, style: .cumulative, options: .cumulativeSum, priority: priority)
        #expect(after == direct.map(\.figures.sum))
        let average = try t.store.withStatisticsIndex(userRowID: user.rowID, type: heart, buckets: span(Self.day0, Self.day0 + 86_400_000)) {
            try $0.index.statistics(start: Self.day0, end: Self.day0 + 86_400_000, options: .discreteAverage).figures.average
        }
        #expect(average == 61)
    }

    /// A query reads rollup rows, not samples: with the rows in place and the samples gone behind the
    /// store's back, a fresh store still answers from the rows.
    @Test func coldQueriesReadRollupRowsNotSamples() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
        guard let type = HealthTypeCatalog.type("stepCount") else { return }
        _ = try t.store.save((0..<48).map { steps(5, start: Self.day0 + Int64($0) * 1_800_000) }, by: phone)
        try t.reopen()
        try t.store.pool.write { db in try db.execute("DELETE FROM samples") }
        #expect(try Self.dailySums(t.store, user: user, type: type, days: 2) == [240, nil])
    }

    /// Rows follow saves and deletes, and a day whose last sample goes loses its row.
    @Test func rowsFollowSavesAndDeletes() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
        guard let type = HealthTypeCatalog.type("stepCount") else { return }
        let late = steps(7, start: Self.day0 + 86_400_000 + 60_000)
        _ = try t.store.save([steps(3, start: Self.day0), late], by: phone)
        #expect(try Self.dailySums(t.store, user: user, type: type, days: 2) == [3, 7])
        try t.store.deleteSample(late.uuid, by: phone)
        #expect(try Self.dailySums(t.store, user: user, type: type, days: 2) == [3, nil])
        let rows = try t.store.pool.read { db in try db.first("SELECT count(*) FROM statistics_days", [], { try $0.int64(at: 0) }) }
        #expect((rows ?? 0) == 1)
    }
}

@Suite struct StatisticsMemoryBudgetTests {
    /// Past the budget the least recently asked series are dropped, and asking again reads their rows.
    @Test func seriesOverTheBudgetAreDroppedAndReadAgain() throws {
        let directory = NSTemporaryDirectory() + "healthd-budget-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try HealthStore(directory: directory, readers: 1, statisticsMemoryBudget: 1)
        defer { store.close() }
        guard let type = HealthTypeCatalog.type("stepCount") else { return }
        var users: [User] = []
        for name in ["a", "b", "c"] {
            let user = try store.createUser(name: name)
            let (app, _) = try store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
            _ = try store.save((0..<10).map { steps(2, start: StatisticsRollupTests.day0 + Int64($0) * 60_000) }, by: app)
            users.append(user)
        }
        for _ in 0..<2 {
            for user in users {
                #expect(try StatisticsRollupTests.dailySums(store, user: user, type: type, days: 1) == [20])
            }
        }
        #expect(store.statisticsIndexEvictions == 5, "each query but the first drops the one before")
        #expect(store.statisticsIndexMemoryBytes > 0)
    }
}

/// One bucket over [start, end).
func span(_ start: Int64, _ end: Int64) -> [CalendarBucket] {
    [CalendarBucket(start: start, end: end, startOffsetSeconds: 0, endOffsetSeconds: 0)]
}
