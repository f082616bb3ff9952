import Foundation
import HealthModel
import HealthStore
import PostgreSQL
import PostgresStore
import Statistics
import PostgresTestSupport
import Testing

/// The PostgreSQL write path (one COPY per batch, the batch's rollup rows in one statement) beside
/// SQLite: the same saves, re-sent batches, deletes and source-order changes go through both
/// stores, and every statistics answer is the same (sources compared by app name, as ids differ).
@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresIngestTests {
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000
    /// 2026-03-01T00:00Z: New York's DST change (2026-03-08) falls inside the ranges below.
    static let base: Int64 = 1_772_323_200_000

    /// One backend's store, user and two apps.
    struct Side {
        let test: TestStore
        let user: User
        let phone: AppAuthorization
        let watch: AppAuthorization

        init(_ backend: TestStore.Backend) throws {
            test = try TestStore(backend)
            user = try test.store.userCreatingIfNeeded(name: "dana")
            let types: Set<String> = ["stepCount", "heartRate"]
            phone = try test.store.createAuthorization(user: user, app: "phone", read: types, share: types).authorization
            watch = try test.store.createAuthorization(user: user, app: "watch", read: types, share: types).authorization
        }

        func app(_ name: String) -> AppAuthorization { name == "phone" ? phone : watch }
    }

    let sides: [Side]

    init() throws {
        sides = [try Side(.sqlite), try Side(.postgres)]
    }

    var postgres: Side { sides[1] }

    /// Runs `body` on both stores.
    func both(_ body: (Side) throws -> Void) rethrows {
        for side in sides { try body(side) }
    }

    /// Daily buckets in New York over `days` days from `base` (a 23-hour day among them) and
    /// 40-minute buckets off every 15-minute slot over the first three days: the same answers on both.
    func expectSameStatistics(days: Int64, _ comment: Comment) throws {
        let newYork = try BucketCalendar(timeZoneIdentifier: "America/New_York")
        let utc = try BucketCalendar(timeZoneIdentifier: "UTC")
        let bucketSets = [
            try newYork.buckets(start: Self.base - Self.day, end: Self.base + (days + 1) * Self.day, anchor: Self.base + 5 * Self.hour,
                                interval: CalendarInterval(unit: .day, count: 1)),
            try utc.buckets(start: Self.base, end: Self.base + 3 * Self.day, anchor: Self.base + 7 * 60_000,
                            interval: CalendarInterval(unit: .minute, count: 40)),
        ]
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        let heartType = try #require(HealthTypeCatalog.type("heartRate"))
        for (index, buckets) in bucketSets.enumerated() {
            for (type, options) in [(stepType, StatisticsOptions([.cumulativeSum, .separateBySource])),
                                    (heartType, StatisticsOptions([.discreteAverage, .discreteMin, .discreteMax, .mostRecent,
                                                                   .separateBySource]))] {
                let answers = try sides.map { side in
                    Self.named(try side.test.store.statistics(userRowID: side.user.rowID, type: type, buckets: buckets, options: options))
                }
                #expect(answers[0].count == answers[1].count)
                for (sqlite, postgres) in zip(answers[0], answers[1]) {
                    #expect(Self.close(sqlite.figures, postgres.figures) && Set(sqlite.sources.keys) == Set(postgres.sources.keys)
                            && sqlite.sources.allSatisfy { Self.close($0.value, postgres.sources[$0.key] ?? StatisticsFigures()) },
                            "\(comment) \(type.id) buckets \(index) at \(sqlite.start)")
                }
            }
        }
    }

    /// A bucket's figures, its sources' keyed by app name.
    static func named(_ answer: StatisticsAnswer) -> [(start: Int64, figures: StatisticsFigures, sources: [String: StatisticsFigures])] {
        answer.buckets.map { bucket in
            (bucket.bucket.start, bucket.figures,
             Dictionary(bucket.sources.map { (answer.appNames[$0.source] ?? "?\($0.source)", $0.figures) }, uniquingKeysWith: { a, _ in a }))
        }
    }

    /// Equal up to floating-point noise (the stores may sum in another order).
    static func close(_ x: StatisticsFigures, _ y: StatisticsFigures) -> Bool {
        func close(_ x: Double?, _ y: Double?) -> Bool {
            switch (x, y) {
            case (nil, nil): true
            case let (x?, y?): abs(x - y) <= 1e-6 * max(1, abs(x), abs(y))
            default: false
            }
        }
        return close(x.sum, y.sum) && close(x.average, y.average) && close(x.minimum, y.minimum) && close(x.maximum, y.maximum)
            && x.mostRecent?.value == y.mostRecent?.value
    }

    /// The PostgreSQL store's rollup rows: (type, day) -> body and detail.
    func rollupRows() throws -> [String: [UInt8]] {
        try postgres.test.postgres { connection in
            var rows: [String: [UInt8]] = [:]
            let result = try connection.query("SELECT type_id, day, body, coalesce(detail, ''::bytea) FROM statistics_days")
            for index in 0..<result.rowCount {
                let row = result[index]
                rows["\(try row.int64(at: 0))/\(try row.int64(at: 1))"] = try row.bytes(at: 2) + [0xFF] + row.bytes(at: 3)
            }
            return rows
        }
    }

    func sampleCount() throws -> Int64 {
        try postgres.test.postgres { try $0.scalarInt64("SELECT count(*) FROM samples") ?? -1 }
    }

    /// A day of steps every 10 minutes (20-minute samples: they overlap each other and run past
    /// midnight) and heart rate every 7 minutes, from `start`.
    static func dayOfSamples(from start: Int64, hours: Int64 = 24) -> [HealthSample] {
        var samples: [HealthSample] = []
        for minute in stride(from: Int64(0), to: hours * 60, by: 10) {
            samples.append(steps(Double(minute % 97), start: start + minute * 60_000, seconds: 1_200))
        }
        for minute in stride(from: Int64(3), to: hours * 60, by: 7) {
            samples.append(heartRate(Double(50 + minute % 90), at: start + minute * 60_000))
        }
        return samples
    }

    /// The rollup rows every write rewrites are compressed with lz4 where the server has it.
    @Test func rollupRowsAreCompressedWithLZ4() throws {
        let schema = try TestSchema(prefix: "hd_lz4_")
        let store = try PostgresHealthStore(configuration: schema.configuration, maxConnections: 2, listen: false)
        defer { store.close() }
        let connection = try schema.connect()
        defer { connection.close() }
        let version = try #require(try connection.scalarInt64("SELECT current_setting('server_version_num')::bigint"))
        // Before PostgreSQL 14 there is no choice of method (and no attcompression column).
        guard version >= 140_000 else { return }
        let methods = try connection.map("""
            SELECT attname::text, attcompression::text FROM pg_attribute
            WHERE attrelid = 'statistics_days'::regclass AND attname IN ('body', 'detail') ORDER BY attname
            """, [], { "\(try $0.string(at: 0))=\(try $0.string(at: 1))" })
        #expect(methods == ["body=l", "detail=l"])
    }

    @Test func resentBatchIsAnIdempotentSuccessThatLeavesTheRollupsAlone() throws {
        let batch = Self.dayOfSamples(from: Self.base + 20 * Self.hour, hours: 30)
        try both { side in _ = try side.test.store.save(batch, by: side.phone) }
        let rows = try rollupRows()
        let count = try sampleCount()
        #expect(rows.count >= 4, "two days of two types")
        for side in sides { #expect(try side.test.store.save(batch, by: side.phone) == batch.map(\.uuid)) }
        #expect(try sampleCount() == count)
        #expect(try rollupRows() == rows, "a re-sent batch stores nothing, so no rollup row changes")
        try expectSameStatistics(days: 3, "after the re-send")

        // Half re-sent, half new (from the watch, overlapping the phone): only the new half is stored.
        let mixed = Array(batch.prefix(batch.count / 2)) + Self.dayOfSamples(from: Self.base + 30 * Self.hour, hours: 6)
        #expect(throws: (any Error).self, "the phone's samples re-sent by the watch are another app's uuids") {
            try postgres.test.store.save(mixed, by: postgres.watch)
        }
        #expect(try sampleCount() == count, "a refused batch stores nothing")
        try both { side in _ = try side.test.store.save(mixed, by: side.phone) }
        #expect(try sampleCount() == count + Int64(mixed.count - batch.count / 2))
        try expectSameStatistics(days: 3, "after a partly re-sent batch")
    }

    @Test func oneBatchTouchingManyDaysWritesEveryDayRow() throws {
        // 45 days in one batch, from both apps, with a few samples spanning several days.
        var batch: [HealthSample] = []
        for day in 0..<45 {
            batch += Self.dayOfSamples(from: Self.base + Int64(day) * Self.day + 9 * Self.hour, hours: 2)
        }
        let long = [steps(5_000, start: Self.base + 10 * Self.day - Self.hour, seconds: 3 * 86_400 + 600),
                    steps(700, start: Self.base + 30 * Self.day + 12 * Self.hour, seconds: 86_400)]
        try both { side in
            _ = try side.test.store.save(batch, by: side.phone)
            _ = try side.test.store.save(long + Self.dayOfSamples(from: Self.base + 9 * Self.hour, hours: 72), by: side.watch)
        }
        let rows = try rollupRows()
        let stepCode = try #require(try typeCode("stepCount"))
        let heartCode = try #require(try typeCode("heartRate"))
        #expect(rows.keys.filter { $0.hasPrefix("\(stepCode)/") }.count == 45)
        #expect(rows.keys.filter { $0.hasPrefix("\(heartCode)/") }.count == 45)
        try expectSameStatistics(days: 46, "a batch over 45 days")
        let stepType = try #require(HealthTypeCatalog.type("stepCount"))
        try both { side in try side.test.store.setSourcePriority(userRowID: side.user.rowID, type: stepType, apps: ["watch", "phone"]) }
        try expectSameStatistics(days: 46, "after the watch was ranked first")
    }

    @Test func deletesThenStatisticsEqualSQLite() throws {
        let phoneBatch = (0..<4).flatMap { Self.dayOfSamples(from: Self.base + Int64($0) * Self.day + 6 * Self.hour, hours: 12) }
        let watchBatch = (0..<4).flatMap { Self.dayOfSamples(from: Self.base + Int64($0) * Self.day + 11 * Self.hour, hours: 6) }
        try both { side in
            _ = try side.test.store.save(phoneBatch, by: side.phone)
            _ = try side.test.store.save(watchBatch, by: side.watch)
        }
        try expectSameStatistics(days: 4, "saved")
        // Single deletes: a heart-rate slot's minimum and most recent, a step sample under the watch's.
        let heart = phoneBatch.filter { $0.type == "heartRate" }
        let chosen = [heart[3], heart[heart.count - 1], phoneBatch[40], phoneBatch[41], watchBatch[5]]
        try both { side in
            for sample in chosen {
                try side.test.store.deleteSample(sample.uuid, by: watchBatch.contains(sample) ? side.watch : side.phone)
            }
        }
        try expectSameStatistics(days: 4, "after single deletes")
        // A range delete across midnight, of each type.
        try both { side in
            for type in ["stepCount", "heartRate"] {
                _ = try side.test.store.deleteSamples(type: type, start: Self.base + Self.day + 15 * Self.hour,
                                                      end: Self.base + 2 * Self.day + 9 * Self.hour, by: side.phone)
            }
        }
        try expectSameStatistics(days: 4, "after range deletes")
        // Every sample of a day, from both apps: the day's rows go.
        let before = try rollupRows().count
        try both { side in
            for app in [side.phone, side.watch] {
                for type in ["stepCount", "heartRate"] {
                    _ = try side.test.store.deleteSamples(type: type, start: Self.base + 3 * Self.day, end: Self.base + 4 * Self.day, by: app)
                }
            }
        }
        #expect(try rollupRows().count == before - 2, "day 3 of both types has no sample left")
        try expectSameStatistics(days: 4, "after emptying a day")
        // Saves after the deletes fold into the rows the deletes left.
        try both { side in _ = try side.test.store.save(Self.dayOfSamples(from: Self.base + Self.day + 16 * Self.hour, hours: 3),
                                                        by: side.phone) }
        try expectSameStatistics(days: 4, "after saving into the deleted range")
    }

    func typeCode(_ type: String) throws -> Int64? {
        try postgres.test.postgres { try $0.scalarInt64("SELECT id FROM type_codes WHERE name = $1", [.text(type)]) }
    }
}
