import Foundation
import Testing
import HealthModel
import SQLite
import Statistics
@testable import HealthStore
@testable import SQLiteStore

@Suite struct StatisticsRollupTests {
    static let day0 = StatisticsIndexTests.day0

    static func dailySums(_ store: SQLiteHealthStore, user: User, type: HealthType, days: Int) throws -> [Double?] {
        let buckets = (0..<days).map { day in
            CalendarBucket(start: day0 + Int64(day) * 86_400_000, end: day0 + Int64(day + 1) * 86_400_000,
                           startOffsetSeconds: 0, endOffsetSeconds: 0)
        }
        return try store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: buckets) { snapshot in
            try snapshot.index.statisticsCollection(buckets: buckets, options: .cumulativeSum).map(\.figures.sum)
        }
    }

    /// The migrations registered after the last one these tests know by name, and how each is
    /// undone (newest last): a test that carries an older database forward undoes them first.
    static let laterMigrations: [(name: String, undo: String)] = [
        ("010-people-accounts", """
            DROP TABLE sign_in_failures; DROP TABLE sessions; DROP TABLE invitations; ALTER TABLE users DROP COLUMN password_hash
            """),
        ("011-people-grants", undoPeopleGrants),
        ("012-people-access", "DROP TABLE access_log"),
        ("013-webhooks", "DROP TABLE webhook_deliveries; DROP TABLE webhook_subscriptions"),
    ]

    static func undoLaterMigrations(_ database: Database) throws {
        for migration in laterMigrations.reversed() { try database.execute(migration.undo) }
    }

    /// The schema before `014-sample-key-runs`: the unique uuid index instead of the key runs
    /// (and the deletions list of `015-sample-key-deletions`).
    static let undoSampleKeyRuns = """
        DROP TABLE sample_key_compactions; DROP TABLE sample_key_deletions; DROP TABLE sample_key_users;
        DROP TABLE sample_key_chunks; DROP TABLE sample_key_runs;
        CREATE UNIQUE INDEX samples_by_uuid ON samples(user_id, uuid);
        """

    /// The schema before `011-people-grants`: no grants, no permission requests, no last use.
    static let undoPeopleGrants = """
        DROP TABLE authorization_requests; DROP TABLE app_grants; ALTER TABLE authorizations DROP COLUMN last_used_ms;
        """

    /// The rollup table before `016-statistics-days-clustered`: one rowid table with the key in
    /// its columns and the detail beside the body, its rows in `order` (SQL over d.*: the order
    /// they were written in, as far as the test cares).
    static func undoClusteredDays(order: String = "d.key") -> String {
        """
        CREATE TABLE statistics_days_columns (user_id INTEGER NOT NULL, type_id INTEGER NOT NULL, day INTEGER NOT NULL,
            body BLOB NOT NULL, detail BLOB, PRIMARY KEY (user_id, type_id, day));
        INSERT INTO statistics_days_columns (user_id, type_id, day, body, detail)
            SELECT d.user_id, d.type_id, d.day, d.body, x.detail FROM statistics_days d
            LEFT JOIN statistics_day_details x ON x.key = d.key ORDER BY \(order);
        DROP TABLE statistics_days; DROP TABLE statistics_day_details;
        ALTER TABLE statistics_days_columns RENAME TO statistics_days;
        """
    }

    /// Every rollup row as (user, type, day, body, detail) text, in the clustered layout.
    static let everyClusteredRow = """
        SELECT d.user_id, d.type_id, d.day, d.body, x.detail FROM statistics_days d
        LEFT JOIN statistics_day_details x ON x.key = d.key ORDER BY d.key
        """

    static func rowText(_ row: Row) throws -> String {
        "\(try row.int64(at: 0)),\(try row.int64(at: 1)),\(try row.int64(at: 2)),\(try row.blob(at: 3)),\(String(describing: row.blobIfPresent(at: 4)))"
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
        let rollupMigration = try database.first("SELECT id FROM schema_migrations WHERE name = '009-statistics-rollups'", [],
                                                 { try $0.int64(at: 0) }) ?? 0
        let names = try database.map("SELECT name FROM schema_migrations WHERE id >= ? ORDER BY id", [.integer(rollupMigration)]) {
            try $0.string(at: 0)
        }
        // Back to the schema before rollups: the rollup migrations and the one between them are undone.
        #expect(names == ["009-statistics-rollups", "010-authorization-read-disclosure", "011-statistics-rollup-slots",
                          "012-statistics-days-rowid", "013-statistics-discrete-compact", "014-sample-key-runs",
                          "015-sample-key-deletions", "016-statistics-days-clustered", "017-sample-key-compaction"]
                    + Self.laterMigrations.map(\.name),
                "this test undoes every migration from the rollups' on")
        try Self.undoLaterMigrations(database)
        try database.execute(Self.undoSampleKeyRuns)
        try database.execute("DROP TABLE statistics_days; DROP TABLE statistics_day_details; DROP TABLE statistics_series")
        try database.execute("ALTER TABLE authorizations DROP COLUMN discloses_read")
        try database.execute("DELETE FROM schema_migrations WHERE id >= \(rollupMigration); PRAGMA user_version = \(rollupMigration - 1)")
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

    /// A database whose `statistics_days` is the earlier `WITHOUT ROWID` table keeps its rows:
    /// they move to the rowid table as they were (not rebuilt), and answer the same.
    @Test func rowidMigrationCarriesTheRowsForward() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
        let (watch, _) = try t.store.createAuthorization(user: user, app: "watch", read: [], share: ["stepCount"])
        guard let type = HealthTypeCatalog.type("stepCount") else { return }
        _ = try t.store.save((0..<80).map { steps(10, start: Self.day0 + Int64($0) * 2_400_000, seconds: 900) }, by: phone)
        _ = try t.store.save((0..<80).map { steps(4, start: Self.day0 + Int64($0) * 2_400_000 + 300_000, seconds: 900) }, by: watch)
        let before = try Self.dailySums(t.store, user: user, type: type, days: 3)
        t.store.close()
        let database = try Database(path: t.directory + "/healthd.sqlite")
        let migration = try #require(try database.first("SELECT id FROM schema_migrations WHERE name = '012-statistics-days-rowid'", [],
                                                        { try $0.int64(at: 0) }))
        let later = try database.map("SELECT name FROM schema_migrations WHERE id > ? ORDER BY id", [.integer(migration)]) {
            try $0.string(at: 0)
        }
        #expect(later == ["013-statistics-discrete-compact", "014-sample-key-runs", "015-sample-key-deletions",
                          "016-statistics-days-clustered", "017-sample-key-compaction"] + Self.laterMigrations.map(\.name),
                "this test undoes the migrations from the rowid table's on")
        try Self.undoLaterMigrations(database)
        try database.execute(Self.undoClusteredDays())
        try database.execute(Self.undoSampleKeyRuns)
        // The table as the previous schema wrote it, holding the same rows.
        try database.execute("""
            CREATE TABLE statistics_days_before (user_id INTEGER NOT NULL, type_id INTEGER NOT NULL, day INTEGER NOT NULL,
                body BLOB NOT NULL, detail BLOB, PRIMARY KEY (user_id, type_id, day)) WITHOUT ROWID;
            INSERT INTO statistics_days_before SELECT user_id, type_id, day, body, detail FROM statistics_days;
            DROP TABLE statistics_days;
            ALTER TABLE statistics_days_before RENAME TO statistics_days;
            DELETE FROM schema_migrations WHERE id >= \(migration); PRAGMA user_version = \(migration - 1);
            """)
        let rowsBefore = try database.map("SELECT user_id, type_id, day, body, detail FROM statistics_days ORDER BY 1, 2, 3", [], Self.rowText)
        database.close()
        try t.reopen()
        let (table, rowsAfter) = try t.store.pool.read { db in
            (try db.first("SELECT sql FROM sqlite_master WHERE name = 'statistics_days'", [], { try $0.string(at: 0) }),
             try db.map(Self.everyClusteredRow, [], Self.rowText))
        }
        #expect(!(table ?? "").uppercased().contains("WITHOUT ROWID"))
        #expect(rowsBefore.count == 3 && rowsAfter == rowsBefore)
        #expect(try Self.dailySums(t.store, user: user, type: type, days: 3) == before)
        // Saves keep maintaining the moved rows.
        _ = try t.store.save([steps(1, start: Self.day0 + 3 * 86_400_000)], by: phone)
        #expect(try Self.dailySums(t.store, user: user, type: type, days: 4) == before + [1])
    }

    /// A database whose rollup rows are in the rowid table of migrations 012-014 (written in
    /// arrival order, details beside the bodies) is carried forward: the rows move to the clustered
    /// tables as they are, each series' days in consecutive keys, the details apart; every answer
    /// (daily, a bucket edge inside a slot that reads details, per source, discrete) is the same,
    /// and saves, deletes and a priority change keep maintaining the moved rows.
    @Test func clusteredMigrationCarriesTheRowsForward() throws {
        let t = try TemporaryStore()
        let types = ["stepCount", "heartRate"]
        var authorizations: [(user: User, phone: AppAuthorization, watch: AppAuthorization)] = []
        for name in ["alice", "bob"] {
            let user = try t.store.createUser(name: name)
            let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: Set(types), share: Set(types))
            let (watch, _) = try t.store.createAuthorization(user: user, app: "watch", read: Set(types), share: Set(types))
            authorizations.append((user, phone, watch))
        }
        // Users and types interleaved batch by batch, as arrival order writes them.
        for day in 0..<4 {
            for (index, (_, phone, watch)) in authorizations.enumerated() {
                let base = Self.day0 + Int64(day) * 86_400_000 + Int64(index) * 60_000
                _ = try t.store.save((0..<24).map { steps(Double(10 + $0), start: base + Int64($0) * 3_600_000, seconds: 1_500) }, by: phone)
                _ = try t.store.save((0..<24).map { steps(4, start: base + Int64($0) * 3_600_000 + 600_000, seconds: 1_500) }, by: watch)
                _ = try t.store.save((0..<48).map { half in
                    HealthSample(uuid: .random(), type: "heartRate", start: base + Int64(half) * 1_800_000 + 7_000,
                                 end: base + Int64(half) * 1_800_000 + 7_000, content: .quantity(Double(55 + (half * 7 + day) % 90)))
                }, by: watch)
            }
        }
        // Daily buckets, and hourly ones whose edges fall inside 15-minute slots (those read the details).
        let daily = (0..<4).map { day in
            CalendarBucket(start: Self.day0 + Int64(day) * 86_400_000, end: Self.day0 + Int64(day + 1) * 86_400_000,
                           startOffsetSeconds: 0, endOffsetSeconds: 0)
        }
        let cut = (0..<Int64(4 * 24 - 1)).map { (hour: Int64) -> CalendarBucket in
            let start: Int64 = Self.day0 + 433_000 + hour * 3_600_000
            return CalendarBucket(start: start, end: start + 3_600_000, startOffsetSeconds: 0, endOffsetSeconds: 0)
        }
        func answers() throws -> [[BucketStatistics]] {
            try authorizations.flatMap { user, _, _ in
                try types.flatMap { typeID -> [[BucketStatistics]] in
                    let type = try #require(HealthTypeCatalog.type(typeID))
                    let options: StatisticsOptions = type.isCumulative ? [.cumulativeSum, .separateBySource]
                        : [.discreteAverage, .discreteMin, .discreteMax, .mostRecent, .separateBySource]
                    return try [daily, cut].map { buckets in
                        try t.store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: buckets) { snapshot in
                            try snapshot.index.statisticsCollection(buckets: buckets, options: options)
                        }
                    }
                }
            }
        }
        func same(_ mine: [[BucketStatistics]], _ theirs: [[BucketStatistics]]) {
            #expect(mine.map(\.count) == theirs.map(\.count))
            for (x, y) in zip(mine.joined(), theirs.joined()) {
                #expect(StatisticsIndexTests.same(x.figures, y.figures), "bucket \(x.bucket.start)")
                #expect(x.sources.map(\.source) == y.sources.map(\.source))
                for (a, b) in zip(x.sources, y.sources) { #expect(StatisticsIndexTests.same(a.figures, b.figures)) }
            }
        }
        let before = try answers()
        #expect(before.joined().contains { $0.figures.sum != nil } && before.joined().contains { $0.figures.average != nil })
        let rowsBefore = try t.store.pool.read { db in try db.map(Self.everyClusteredRow, [], Self.rowText) }
        t.store.close()

        let database = try Database(path: t.directory + "/healthd.sqlite")
        let migration = try #require(try database.first("SELECT id FROM schema_migrations WHERE name = '016-statistics-days-clustered'", [],
                                                        { try $0.int64(at: 0) }))
        #expect(try database.map("SELECT name FROM schema_migrations WHERE id > ? ORDER BY id", [.integer(migration)], { try $0.string(at: 0) })
                    == ["017-sample-key-compaction"] + Self.laterMigrations.map(\.name),
                "this test undoes the clustered days and the migrations after them")
        try Self.undoLaterMigrations(database)
        try database.execute("""
            DROP TABLE sample_key_compactions;
            ALTER TABLE sample_key_deletions DROP COLUMN generation; ALTER TABLE sample_key_users DROP COLUMN generation;
            """)
        // The earlier table, its rows in the order arrival would have left them: day by day across users and types.
        try database.execute(Self.undoClusteredDays(order: "d.day, d.user_id, d.type_id"))
        try database.execute("DELETE FROM schema_migrations WHERE id >= \(migration); PRAGMA user_version = \(migration - 1)")
        #expect(try database.first("SELECT count(*) FROM statistics_days WHERE detail IS NOT NULL", [], { try $0.int64(at: 0) }) == 8)
        database.close()
        try t.reopen()

        let (rowsAfter, keysInRowOrder, detailKeys) = try t.store.pool.read { db in
            (try db.map(Self.everyClusteredRow, [], Self.rowText),
             try db.map("SELECT key FROM statistics_days ORDER BY rowid", []) { try $0.int64(at: 0) },
             try db.map("SELECT key FROM statistics_day_details ORDER BY key", []) { try $0.int64(at: 0) })
        }
        #expect(rowsAfter.count == 16 && rowsAfter == rowsBefore, "the rows move as they are")
        #expect(keysInRowOrder == keysInRowOrder.sorted())
        let stepCode = try #require(t.store.typeCode(for: "stepCount"))
        #expect(try detailKeys == authorizations.flatMap { user, _, _ in
            try (0..<Int64(4)).map { try RollupDayKey.key(user: user.rowID, type: stepCode, day: Self.day0 / 86_400_000 + $0) }
        }.sorted(), "a detail for every cumulative day, under its row's key")
        same(try answers(), before)

        // The moved rows keep being maintained: a save, a delete and a new source order.
        let (alice, _, watch) = authorizations[0]
        _ = try t.store.save([steps(1_000, start: Self.day0 + 2 * 86_400_000 + 30 * 60_000, seconds: 600)], by: watch)
        _ = try t.store.deleteSamples(type: "heartRate", start: Self.day0, end: Self.day0 + 3_600_000, by: watch)
        let stepCount = try #require(HealthTypeCatalog.type("stepCount"))
        try t.store.setSourcePriority(userRowID: alice.rowID, type: stepCount, apps: ["watch", "phone"])
        let maintained = try answers()
        try t.store.pool.write { db in try StatisticsRollups.rebuildAll(db) }
        same(maintained, try answers())
        #expect(maintained.map { $0.map(\.figures.sum) } != before.map { $0.map(\.figures.sum) })
        // Days beyond what the keys hold (year 0100) have no rows and no figures.
        let ancient = CalendarBucket(start: -58_000_000_000_000, end: -58_000_000_000_000 + 86_400_000, startOffsetSeconds: 0, endOffsetSeconds: 0)
        #expect(try t.store.withStatisticsIndex(userRowID: alice.rowID, type: stepCount, buckets: [ancient]) { snapshot in
            try snapshot.index.statisticsCollection(buckets: [ancient], options: .cumulativeSum).map(\.figures.sum)
        } == [nil])
    }

    /// A database written before the compact discrete layout, by the build before it (`healthd seed
    /// --days 2`, Tests/Fixtures/sqlite), is carried forward: its heart-rate rows are rewritten in
    /// the compact layout (a third of the bytes or less), answer exactly as the rows they replace and
    /// as the samples, and keep being maintained by saves.
    @Test func compactDiscreteMigrationCarriesAnExistingDatabaseForward() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/sqlite/seed-before-compact-discrete.sqlite").path
        let directory = NSTemporaryDirectory() + "healthd-compact-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.copyItem(atPath: fixture, toPath: directory + "/healthd.sqlite")
        guard let heart = HealthTypeCatalog.type("heartRate") else { return }
        let everyHeartRow = """
            SELECT d.user_id, d.day, d.body FROM statistics_days d JOIN type_codes t ON t.id = d.type_id
            WHERE t.name = 'heartRate' ORDER BY 1, 2
            """
        func row(_ row: Row) throws -> (user: Int64, day: Int64, body: [UInt8]) { (try row.int64(at: 0), try row.int64(at: 1), try row.blob(at: 2)) }
        let database = try Database(path: directory + "/healthd.sqlite")
        #expect(try database.first("SELECT count(*) FROM schema_migrations WHERE name = '013-statistics-discrete-compact'", [],
                                   { try $0.int64(at: 0) }) == 0, "the fixture predates the compact layout")
        let before = try database.map(everyHeartRow, [], row)
        database.close()
        #expect(before.count >= 2 && before.allSatisfy { $0.body.first == 2 }, "fixed-width rows of several days")
        let store = try SQLiteHealthStore(directory: directory, readers: 1)
        defer { store.close() }
        let after = try store.pool.read { db in try db.map(everyHeartRow, [], row) }
        #expect(after.map { [$0.user, $0.day] } == before.map { [$0.user, $0.day] })
        #expect(after.allSatisfy { $0.body.first == 3 })
        let bytesAfter: Int = after.reduce(0) { $0 + $1.body.count }
        let bytesBefore: Int = before.reduce(0) { $0 + $1.body.count }
        #expect(bytesAfter * 3 < bytesBefore, "\(bytesAfter) bytes after, \(bytesBefore) before")
        let user = try #require(before.first?.user)
        let days = before.filter { $0.user == user }.map(\.day)
        let first = try #require(days.first)
        let last = try #require(days.last)
        // Quarter-hour buckets over the days, so every slot is asked about on its own.
        let buckets = (0..<Int((last - first + 1) * 96)).map { quarter in
            CalendarBucket(start: first * 86_400_000 + Int64(quarter) * 900_000, end: first * 86_400_000 + Int64(quarter + 1) * 900_000,
                           startOffsetSeconds: 0, endOffsetSeconds: 0)
        }
        let options: StatisticsOptions = [.discreteAverage, .discreteMin, .discreteMax, .mostRecent, .separateBySource]
        func answers(_ rows: [(user: Int64, day: Int64, body: [UInt8])]) throws -> [BucketStatistics] {
            try RollupSeries(style: .discrete, priority: SourcePriority([]), days: first...last,
                             rows: rows.filter { $0.user == user }.map { ($0.day, $0.body, nil) })
                .statisticsCollection(buckets: buckets, options: options)
        }
        #expect(try answers(after) == answers(before), "the compact rows answer bit for bit as the rows they replace")
        let stored = try store.withStatisticsIndex(userRowID: user, type: heart, buckets: buckets) { snapshot in
            try snapshot.index.statisticsCollection(buckets: buckets, options: options)
        }
        let direct = try statisticsCollection(of: try store.statisticsSamples(userRowID: user, type: heart), buckets: buckets,
                                              style: .discrete, options: options, priority: SourcePriority([]))
        #expect(stored.count == direct.count && stored.contains { $0.figures.average != nil })
        for (mine, theirs) in zip(stored, direct) {
            #expect(StatisticsIndexTests.same(mine.figures, theirs.figures), "bucket \(mine.bucket.start)")
        }
        // A save folds into a migrated row.
        let name = try #require(try store.pool.read { db in
            try db.first("SELECT name FROM users WHERE id = ?", [.integer(user)], { try $0.string(at: 0) })
        })
        let (writer, _) = try store.createAuthorization(user: try #require(try store.user(named: name)), app: "another-watch",
                                                        read: [], share: ["heartRate"])
        let instant = first * 86_400_000 + 3 * 900_000 + 1
        _ = try store.save([HealthSample(uuid: .random(), type: "heartRate", start: instant, end: instant, content: .quantity(250))], by: writer)
        let maximum = try store.withStatisticsIndex(userRowID: user, type: heart, buckets: span(first * 86_400_000, (last + 1) * 86_400_000)) {
            try $0.index.statistics(start: first * 86_400_000, end: (last + 1) * 86_400_000, options: .discreteMax).figures.maximum
        }
        #expect(maximum == 250)
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

    /// The rows the writer keeps up to date (saves folded in, deletes and overlaps read back) answer
    /// like rows rebuilt from every sample, for a cumulative and a discrete type, with buckets that
    /// cut 15-minute slots; and the same days have rows.
    @Test func maintainedRowsEqualRebuiltRows() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let types = ["stepCount", "heartRate"]
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: Set(types), share: Set(types))
        let (watch, _) = try t.store.createAuthorization(user: user, app: "watch", read: Set(types), share: Set(types))
        var random = SeededGenerator(seed: 23)
        for _ in 0..<40 {
            let app = Bool.random(using: &random) ? phone : watch
            let typeID = types[Int.random(in: 0...1, using: &random)]
            // Most batches stay in one app's own hours of the day, some stray into the other's.
            let own: Int64 = app.appName == "phone" ? 0 : 12
            let batch = (0..<Int.random(in: 1...30, using: &random)).map { _ -> HealthSample in
                let hour = Int.random(in: 0..<10, using: &random) == 0 ? Int64.random(in: 0..<24, using: &random)
                                                                          : own + Int64.random(in: 0..<12, using: &random)
                let start = Self.day0 + Int64.random(in: 0..<3, using: &random) * 86_400_000 + hour * 3_600_000
                    + Int64.random(in: 0..<3_600_000, using: &random)
                let length = typeID == "heartRate" ? 0 : Int64.random(in: 0...1_800_000, using: &random)
                return HealthSample(uuid: .random(), type: typeID, start: start, end: start + length,
                                    content: .quantity(Double(Int.random(in: 40...180, using: &random))))
            }
            _ = try t.store.save(batch, by: app)
            if Int.random(in: 0..<5, using: &random) == 0 {
                let start = Self.day0 + Int64.random(in: 0..<(72 * 3_600_000), using: &random)
                _ = try t.store.deleteSamples(type: typeID, start: start, end: start + 1_800_000, by: app)
            }
        }
        let buckets = (0..<(3 * 24)).map { hour in
            CalendarBucket(start: Self.day0 + 433_000 + Int64(hour) * 3_600_000, end: Self.day0 + 433_000 + Int64(hour + 1) * 3_600_000,
                           startOffsetSeconds: 0, endOffsetSeconds: 0)
        }
        func answers() throws -> [[BucketStatistics]] {
            try types.map { typeID in
                guard let type = HealthTypeCatalog.type(typeID) else { return [] }
                let options: StatisticsOptions = type.isCumulative ? [.cumulativeSum, .separateBySource]
                    : [.discreteAverage, .discreteMin, .discreteMax, .mostRecent, .separateBySource]
                return try t.store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: buckets) { snapshot in
                    try snapshot.index.statisticsCollection(buckets: buckets, options: options)
                }
            }
        }
        func days() throws -> [Int64] {
            try t.store.pool.read { db in try db.map("SELECT type_id * 100000 + day FROM statistics_days ORDER BY 1", []) { try $0.int64(at: 0) } }
        }
        let maintained = try answers()
        let maintainedDays = try days()
        try t.store.pool.write { db in try StatisticsRollups.rebuildAll(db) }
        let rebuilt = try answers()
        #expect(try days() == maintainedDays)
        #expect(maintained.map(\.count) == rebuilt.map(\.count))
        for (mine, theirs) in zip(maintained.joined(), rebuilt.joined()) {
            #expect(StatisticsIndexTests.same(mine.figures, theirs.figures), "bucket \(mine.bucket.start)")
            #expect(mine.sources.map(\.source) == theirs.sources.map(\.source))
            for (x, y) in zip(mine.sources, theirs.sources) { #expect(StatisticsIndexTests.same(x.figures, y.figures)) }
        }
        #expect(maintained.joined().contains { $0.figures.sum != nil || $0.figures.average != nil })
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
    /// Polling users in turn when only two of three series fit: the two that fit stay and keep
    /// answering warm, the third is read each time and not kept (LRU would read all three every
    /// time); asked for more often than the others, it takes the least recently used one's place.
    @Test func roundRobinPollsKeepWhatFitsAndFrequentSeriesWin() throws {
        let directory = NSTemporaryDirectory() + "healthd-budget-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let type = HealthTypeCatalog.type("stepCount") else { return }
        var users: [User] = []
        var size = 0
        do {
            let store = try SQLiteHealthStore(directory: directory, readers: 1)
            defer { store.close() }
            for name in ["a", "b", "c"] {
                let user = try store.createUser(name: name)
                let (app, _) = try store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
                _ = try store.save((0..<10).map { steps(2, start: StatisticsRollupTests.day0 + Int64($0) * 60_000) }, by: app)
                users.append(user)
            }
            _ = try StatisticsRollupTests.dailySums(store, user: users[0], type: type, days: 1)
            size = store.statisticsIndexMemoryBytes
        }
        #expect(size > 0)
        let budget = 2 * size + size / 2
        let store = try SQLiteHealthStore(directory: directory, readers: 1, statisticsMemoryBudget: budget)
        defer { store.close() }
        for _ in 0..<3 {
            for user in users {
                #expect(try StatisticsRollupTests.dailySums(store, user: user, type: type, days: 1) == [20])
            }
        }
        var figures = store.statisticsCacheFigures
        #expect(figures.hits == 4 && figures.misses == 5, "\(figures)")
        #expect(figures.evictions == 0 && figures.rejections == 3, "\(figures)")
        #expect(figures.residentBytes == 2 * size && figures.residentBytes <= budget)
        // c asked for once more than a and b: it displaces a, the least recently used.
        #expect(try StatisticsRollupTests.dailySums(store, user: users[2], type: type, days: 1) == [20])
        figures = store.statisticsCacheFigures
        #expect(figures.evictions == 1 && figures.residentSeries == 2, "\(figures)")
        #expect(try StatisticsRollupTests.dailySums(store, user: users[2], type: type, days: 1) == [20])
        #expect(store.statisticsCacheFigures.hits == figures.hits + 1)
    }

    /// A budget smaller than any series keeps nothing, and every query still answers from the rows.
    @Test func aBudgetBelowOneSeriesKeepsNothing() throws {
        let directory = NSTemporaryDirectory() + "healthd-budget-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteHealthStore(directory: directory, readers: 1, statisticsMemoryBudget: 1)
        defer { store.close() }
        guard let type = HealthTypeCatalog.type("stepCount") else { return }
        let user = try store.createUser(name: "a")
        let (app, _) = try store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
        _ = try store.save((0..<10).map { steps(2, start: StatisticsRollupTests.day0 + Int64($0) * 60_000) }, by: app)
        for _ in 0..<3 { #expect(try StatisticsRollupTests.dailySums(store, user: user, type: type, days: 1) == [20]) }
        let figures = store.statisticsCacheFigures
        #expect(figures.misses == 3 && figures.hits == 0 && figures.rejections == 3 && figures.residentBytes == 0, "\(figures)")
    }
}

/// One bucket over [start, end).
func span(_ start: Int64, _ end: Int64) -> [CalendarBucket] {
    [CalendarBucket(start: start, end: end, startOffsetSeconds: 0, endOffsetSeconds: 0)]
}
