import Foundation
import HealthStore
import PostgreSQL
@testable import PostgresStore
import Statistics
import Synchronization
import TimeZoneDatabase
import PostgresTestSupport
import Testing
import Primitives
import ClientThreads

/// Writes samples the way the store's write path does (rows, `source_types`, `type_extents`, the
/// user's change counter) and keeps the rollups with `PostgresRollups.apply` in the same
/// transaction (saves folded into the rows, deletes and overlaps of sources read back); the
/// statistics tests drive it with random writes and deletes.
struct RollupTestWriter {
    static let user: Int64 = 77
    static let steps: Int64 = 1  // cumulative
    static let heartRate: Int64 = 2  // discrete
    static let styles: [Int64: AggregationStyle] = [steps: .cumulative, heartRate: .discrete]

    static func prepare(_ connection: PostgresConnection, sources: Int) throws {
        try connection.execute("INSERT INTO change_counters (user_id, seq) VALUES ($1, 0)", [.int64(user)])
        for source in 1...sources {
            try connection.execute("INSERT INTO sources (user_id, id, app) VALUES ($1, $2, $3)",
                                   [.int64(user), .int64(Int64(source)), .text("app-\(source)")])
        }
    }

    /// Saves samples (ids are ignored: the user's change numbers become them) and returns them as stored.
    static func save(_ samples: [StatisticsSample], typeCode: Int64, on connection: PostgresConnection) throws -> [StatisticsSample] {
        try connection.transaction { connection in
            var changes = RollupDayChanges()
            var saved: [StatisticsSample] = []
            for var sample in samples {
                sample.id = try connection.scalarInt64(
                    "UPDATE change_counters SET seq = seq + 1 WHERE user_id = $1 RETURNING seq", [.int64(user)]) ?? 0
                try connection.execute("""
                    INSERT INTO samples (user_id, uuid, seq, type_id, source_id, start_ms, end_ms, value, created_ms)
                    VALUES ($1, gen_random_uuid(), $2, $3, $4, $5, $6, $7, 0)
                    """, [.int64(user), .int64(sample.id), .int64(typeCode), .int64(Int64(sample.source)), .int64(sample.start),
                          .int64(sample.end), .double(sample.value)])
                try connection.execute("""
                    INSERT INTO source_types (user_id, type_id, source_id, first_seq) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING
                    """, [.int64(user), .int64(typeCode), .int64(Int64(sample.source)), .int64(sample.id)])
                try connection.execute("""
                    INSERT INTO type_extents AS t (user_id, type_id, max_duration_ms) VALUES ($1, $2, $3)
                    ON CONFLICT (user_id, type_id) DO UPDATE SET max_duration_ms = greatest(t.max_duration_ms, excluded.max_duration_ms)
                    """, [.int64(user), .int64(typeCode), .int64(sample.end - sample.start)])
                changes.noteSaved(typeCode: typeCode, style: styles[typeCode], sample: sample)
                saved.append(sample)
            }
            try PostgresRollups.apply(changes, userRowID: user, on: connection)
            return saved
        }
    }

    static func delete(_ samples: [StatisticsSample], typeCode: Int64, on connection: PostgresConnection) throws {
        try connection.transaction { connection in
            var changes = RollupDayChanges()
            for sample in samples {
                try connection.execute("DELETE FROM samples WHERE user_id = $1 AND seq = $2", [.int64(user), .int64(sample.id)])
                changes.noteDeleted(typeCode: typeCode, style: styles[typeCode], sample: sample)
            }
            try PostgresRollups.apply(changes, userRowID: user, on: connection)
        }
    }

    /// Stores the user's order for the cumulative type and rebuilds its rows, as a priority change does.
    static func setPriority(_ sources: [Int32], on connection: PostgresConnection) throws {
        let apps = "[" + sources.map { "\"app-\($0)\"" }.joined(separator: ",") + "]"
        try connection.transaction { connection in
            try connection.execute("""
                INSERT INTO source_priorities (user_id, type_id, apps) VALUES ($1, $2, $3)
                ON CONFLICT (user_id, type_id) DO UPDATE SET apps = excluded.apps
                """, [.int64(user), .int64(steps), .text(apps)])
            try PostgresRollups.rebuild(userRowID: user, typeCode: steps, style: .cumulative, on: connection)
        }
    }
}

/// A small seeded generator, so a failing seed replays.
typealias SplitMix = SplitMix64

extension SplitMix64 {
    mutating func integer(_ range: ClosedRange<Int64>) -> Int64 {
        range.lowerBound + Int64(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }
}

@Suite(.enabled(if: TestPostgres.isAvailable, "set HEALTHD_TEST_POSTGRES_URL to run the PostgreSQL store's tests"))
struct PostgresStatisticsTests {
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000
    /// 2026-03-01T00:00Z: New York's DST change (2026-03-08) falls inside the ranges below.
    static let base: Int64 = 1_772_323_200_000

    static let cumulativeOptions: StatisticsOptions = [.cumulativeSum, .separateBySource]
    static let discreteOptions: StatisticsOptions = [.discreteAverage, .discreteMin, .discreteMax, .mostRecent, .separateBySource]

    /// Daily buckets in New York (a 23-hour day among them) and 40-minute buckets on an anchor off
    /// every 15-minute slot (edges inside slots: detail and edge-sample reads).
    static func bucketSets() throws -> [[CalendarBucket]] {
        let newYork = try BucketCalendar(timeZoneIdentifier: "America/New_York")
        let utc = try BucketCalendar(timeZoneIdentifier: "UTC")
        return [
            try newYork.buckets(start: base - 2 * day, end: base + 14 * day, anchor: base + 5 * hour,
                                interval: CalendarInterval(unit: .day, count: 1)),
            try utc.buckets(start: base + 6 * day, end: base + 9 * day, anchor: base + 7 * 60_000,
                            interval: CalendarInterval(unit: .minute, count: 40)),
        ]
    }

    static func randomSamples(_ random: inout SplitMix, count: Int, style: AggregationStyle) -> [StatisticsSample] {
        (0..<count).map { _ in
            let start = base + random.integer(-day...(12 * day))
            let length = style == .cumulative ? random.integer(0...(3 * hour)) * (random.integer(0...9) == 0 ? 20 : 1) : 0
            return StatisticsSample(id: 0, start: start, end: start + length, value: Double(random.integer(0...500)),
                                    source: Int32(random.integer(1...3)))
        }
    }

    /// Answers equal up to floating-point noise (the direct path sums in another order).
    static func same(_ a: [BucketStatistics], _ b: [BucketStatistics]) -> Bool {
        func close(_ x: Double?, _ y: Double?) -> Bool {
            switch (x, y) {
            case (nil, nil): true
            case let (x?, y?): abs(x - y) <= 1e-6 * max(1, abs(x), abs(y))
            default: false
            }
        }
        func close(_ x: StatisticsFigures, _ y: StatisticsFigures) -> Bool {
            close(x.sum, y.sum) && close(x.average, y.average) && close(x.minimum, y.minimum)
                && close(x.maximum, y.maximum) && x.mostRecent?.value == y.mostRecent?.value
        }
        return a.count == b.count && zip(a, b).allSatisfy { x, y in
            x.bucket == y.bucket && close(x.figures, y.figures) && x.sources.count == y.sources.count
                && zip(x.sources, y.sources).allSatisfy { $0.source == $1.source && close($0.figures, $1.figures) }
        }
    }

    /// Random saves, deletes and source-priority changes written through node A, with queries
    /// alternating between node A's and node B's caches (two pools, two caches: two healthd nodes on
    /// one database): every answer equals the direct computation over the samples present, so the
    /// rollups are exact (pro-rating, merging by priority, DST days, edges inside slots, discrete
    /// figures, separateBySource) and a node's cache never answers from before another's write.
    @Test(arguments: 1...4)
    func rollupsMatchDirectStatisticsAcrossTwoNodes(seed: Int) throws {
        let schema = try TestSchema.migratedToStore()
        let writer = try schema.connect()
        try RollupTestWriter.prepare(writer, sources: 3)
        let nodes = [(try schema.pool(), StatisticsIndexCache(memoryBudget: 64 << 20)),
                     (try schema.pool(), StatisticsIndexCache(memoryBudget: 64 << 20))]
        var random = SplitMix(seed: UInt64(seed) &* 7_919)
        var present: [Int64: [StatisticsSample]] = [RollupTestWriter.steps: [], RollupTestWriter.heartRate: []]
        var order: [Int32] = []
        let bucketSets = try Self.bucketSets()
        for step in 0..<12 {
            let typeCode = random.integer(0...1) == 0 ? RollupTestWriter.steps : RollupTestWriter.heartRate
            let style = RollupTestWriter.styles[typeCode] ?? .cumulative
            switch random.integer(0...9) {
            case 0...5:
                let saved = try RollupTestWriter.save(Self.randomSamples(&random, count: Int(random.integer(1...30)), style: style),
                                                      typeCode: typeCode, on: writer)
                present[typeCode, default: []] += saved
            case 6...7:
                var kept = present[typeCode] ?? []
                guard !kept.isEmpty else { continue }
                var removed: [StatisticsSample] = []
                for _ in 0..<min(kept.count, Int(random.integer(1...6))) {
                    removed.append(kept.remove(at: Int(random.integer(0...Int64(kept.count - 1)))))
                }
                try RollupTestWriter.delete(removed, typeCode: typeCode, on: writer)
                present[typeCode] = kept
            default:
                order = [Int32(random.integer(1...3)), Int32(random.integer(1...3))]
                try RollupTestWriter.setPriority(order, on: writer)
            }
            for (index, buckets) in bucketSets.enumerated() {
                // Merged-only and per-source queries alternate, so a merged-only decoding is found
                // too narrow and read again, and a per-source one answers merged-only queries.
                for typeCode in [RollupTestWriter.steps, RollupTestWriter.heartRate] {
                    let style = RollupTestWriter.styles[typeCode] ?? .cumulative
                    var options = style == .cumulative ? Self.cumulativeOptions : Self.discreteOptions
                    if (step + index) % 3 == 1 { options.remove(.separateBySource) }
                    let node = nodes[(step + index + Int(typeCode)) % 2]
                    let answer = try PostgresRollups.statistics(userRowID: RollupTestWriter.user, typeCode: typeCode, style: style,
                                                                buckets: buckets, options: options, cache: node.1, pool: node.0)
                    let priority = try writer.transaction { connection in
                        try PostgresRollups.sourcePriority(connection, userRowID: RollupTestWriter.user, typeCode: typeCode)
                    }
                    let expected = try statisticsCollection(of: present[typeCode] ?? [], buckets: buckets, style: style,
                                                            options: options, priority: priority)
                    let same = Self.same(answer.buckets, expected)
                    #expect(same, "seed \(seed) step \(step) type \(typeCode) buckets \(index)")
                }
            }
        }
        #expect(Set(present.values.joined().map(\.source)).count > 1, "several sources overlapped")
    }

    /// Many queries of one resident series at once on node B (they read its version side by side,
    /// outside the series' lock) while node A saves one sample at a time: every answer holds at
    /// least every sample committed before the query began and at most those committed before it
    /// returned, so no query is answered from before another node's write.
    @Test func concurrentQueriesOfOneSeriesSeeEveryEarlierCommitOfAnotherNode() throws {
        let schema = try TestSchema.migratedToStore()
        try RollupTestWriter.prepare(try schema.connect(), sources: 1)
        let writer = try schema.pool(maxConnections: 1)  // node A
        let pool = try schema.pool(maxConnections: 6)  // node B
        let cache = StatisticsIndexCache(memoryBudget: 64 << 20)
        let buckets = try BucketCalendar(timeZoneIdentifier: "UTC").buckets(start: Self.base, end: Self.base + 7 * Self.day,
                                                                          anchor: Self.base, interval: CalendarInterval(unit: .day, count: 1))
        @Sendable func total() throws -> Double {
            let answer = try PostgresRollups.statistics(userRowID: RollupTestWriter.user, typeCode: RollupTestWriter.steps, style: .cumulative,
                                                        buckets: buckets, options: .cumulativeSum, cache: cache, pool: pool)
            return answer.buckets.reduce(0) { $0 + ($1.figures.sum ?? 0) }
        }
        _ = try total()  // resident from here on
        // Committed sums: each save of 1 step is acknowledged before `committed` counts it.
        let committed = Atomic<Int>(0)
        let writing = Atomic<Bool>(true)
        let violations = Mutex<[String]>([])
        let saves = 60
        // A thread per worker, so the readers query side by side, not in turns of one per core.
        onThreads(5) { worker in
            do {
                if worker == 0 {
                    defer { writing.store(false, ordering: .sequentiallyConsistent) }
                    for index in 0..<saves {
                        let start = Self.base + Int64(index % 7) * Self.day + Int64(index) * 60_000
                        _ = try writer.withConnection { connection in
                            try RollupTestWriter.save([StatisticsSample(id: 0, start: start, end: start + 30_000, value: 1, source: 1)],
                                                      typeCode: RollupTestWriter.steps, on: connection)
                        }
                        committed.add(1, ordering: .sequentiallyConsistent)
                    }
                    return
                }
                while writing.load(ordering: .sequentiallyConsistent) {
                    let before = committed.load(ordering: .sequentiallyConsistent)
                    let seen = Int(try total())
                    let after = committed.load(ordering: .sequentiallyConsistent) + 1  // one save may be committed, not yet counted
                    if seen < before || seen > after { violations.withLock { $0.append("saw \(seen), committed \(before)...\(after)") } }
                }
            } catch {
                violations.withLock { $0.append("\(error)") }
            }
        }
        #expect(violations.withLock { $0 }.isEmpty, "\(violations.withLock { $0.prefix(5) })")
        #expect(Int(try total()) == saves)
        // While node A writes, every query may meet a new version (a miss each time, depending on
        // timing); once it stops, a query at the unchanged version must use the resident decoding.
        let hitsBefore = cache.figures.hits
        #expect(Int(try total()) == saves)
        #expect(cache.figures.hits > hitsBefore, "a query at an unchanged version is answered from the resident decoding")
    }

    /// The effective order: the user's listed apps first (unknown ones skipped, repeats once),
    /// then the others in the order they first saved the type.
    @Test func sourcePriorityListsChosenAppsThenFirstSavers() throws {
        let schema = try TestSchema.migratedToStore()
        let connection = try schema.connect()
        try RollupTestWriter.prepare(connection, sources: 3)
        let sample = { (source: Int32) in StatisticsSample(id: 0, start: Self.base, end: Self.base + 60_000, value: 1, source: source) }
        _ = try RollupTestWriter.save([sample(2)], typeCode: RollupTestWriter.steps, on: connection)
        _ = try RollupTestWriter.save([sample(3), sample(1)], typeCode: RollupTestWriter.steps, on: connection)
        func order() throws -> [String] {
            try PostgresSourcePriority.effective(connection, userRowID: RollupTestWriter.user, typeCode: RollupTestWriter.steps).map(\.app)
        }
        #expect(try order() == ["app-2", "app-3", "app-1"])
        try connection.execute("""
            INSERT INTO source_priorities (user_id, type_id, apps) VALUES ($1, $2, '["app-1","nobody","app-1"]')
            """, [.int64(RollupTestWriter.user), .int64(RollupTestWriter.steps)])
        #expect(try order() == ["app-1", "app-2", "app-3"])
    }
}
