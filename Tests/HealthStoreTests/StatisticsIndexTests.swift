import Foundation
import Synchronization
import Testing
import HealthModel
import Statistics
@testable import HealthStore
@testable import SQLiteStore
import Primitives
import ClientThreads

/// A small deterministic generator (SplitMix64), so failures replay.
typealias SeededGenerator = SplitMix64

@Suite struct StatisticsIndexTests {
    static let day0: Int64 = 1_704_067_200_000  // 2024-01-01T00:00:00Z

    static func close(_ a: Double?, _ b: Double?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?): return abs(x - y) <= 1e-6 * max(1, abs(x), abs(y))
        default: return false
        }
    }

    static func same(_ a: StatisticsFigures, _ b: StatisticsFigures) -> Bool {
        close(a.sum, b.sum) && close(a.average, b.average) && close(a.minimum, b.minimum) && close(a.maximum, b.maximum)
            && a.mostRecent == b.mostRecent
    }

    /// Index answers equal the direct computation over every sample SQLite holds, for hourly buckets
    /// over the whole span, after every step of a random interleaving of saves, deletes, priority
    /// changes and queries (some steps skip the query, so catch-up applies several commits at once).
    @Test(arguments: ["stepCount", "heartRate"])
    func indexMatchesDirectPathUnderInterleavedWrites(typeID: String) throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [typeID], share: [typeID])
        let (watch, _) = try t.store.createAuthorization(user: user, app: "watch", read: [typeID], share: [typeID])
        guard let type = HealthTypeCatalog.type(typeID) else { Issue.record("no type"); return }
        let style: AggregationStyle = type.isCumulative ? .cumulative : .discrete
        let options: StatisticsOptions = type.isCumulative
            ? [.cumulativeSum, .separateBySource]
            : [.discreteAverage, .discreteMin, .discreteMax, .mostRecent, .separateBySource]
        var random = SeededGenerator(seed: typeID == "stepCount" ? 7 : 11)
        var saved: [(uuid: HealthUUID, app: AppAuthorization)] = []
        // Hourly buckets on the hour, and every other query shifted by 7 min 13 s so bucket edges
        // cut the rollups' 15-minute slots (answered from those slots' samples).
        let hourly = { (shift: Int64) in
            (0..<72).map { hour in
                CalendarBucket(start: Self.day0 + shift + Int64(hour) * 3_600_000, end: Self.day0 + shift + Int64(hour + 1) * 3_600_000,
                               startOffsetSeconds: 0, endOffsetSeconds: 0)
            }
        }
        for step in 0..<60 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                let app = Bool.random(using: &random) ? phone : watch
                let batch = (0..<Int.random(in: 1...20, using: &random)).map { _ -> HealthSample in
                    let start = Self.day0 + Int64.random(in: 0..<(70 * 3_600_000), using: &random)
                    let length = Int64.random(in: 0...7_200_000, using: &random)
                    let value = type.isCumulative ? Double(Int.random(in: 0...500, using: &random))
                                                  : Double(Int.random(in: 40...180, using: &random))
                    return HealthSample(uuid: .random(), type: typeID, start: start, end: start + length, content: .quantity(value))
                }
                _ = try t.store.save(batch, by: app)
                saved += batch.map { ($0.uuid, app) }
            case 6..<8 where !saved.isEmpty:
                let victim = saved.remove(at: Int.random(in: 0..<saved.count, using: &random))
                try t.store.deleteSample(victim.uuid, by: victim.app)
            case 8:
                let order = Bool.random(using: &random) ? ["watch", "phone"] : ["phone"]
                try t.store.setSourcePriority(userRowID: user.rowID, type: type, apps: order)
            default:
                break
            }
            guard step % 3 != 1 else { continue }
            let buckets = hourly(step % 2 == 0 ? 0 : 433_000)
            let (indexed, priority) = try t.store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: buckets) { snapshot in
                (try snapshot.index.statisticsCollection(buckets: buckets, options: options), snapshot.index.priority)
            }
            let all = try t.store.statisticsSamples(userRowID: user.rowID, type: type)
            #expect(all.count == saved.count)
            let direct = try statisticsCollection(of: all, buckets: buckets, style: style, options: options, priority: priority)
            for (a, b) in zip(indexed, direct) {
                #expect(Self.same(a.figures, b.figures), "step \(step), bucket \(a.bucket.start)")
                #expect(a.sources.map(\.source) == b.sources.map(\.source))
                for (x, y) in zip(a.sources, b.sources) { #expect(Self.same(x.figures, y.figures)) }
            }
        }
    }

    @Test func defaultPriorityIsFirstSaverAndUserOrderWins() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        // The watch is authorized first (lower source id) but the phone saves first: the phone ranks first.
        let (watch, _) = try t.store.createAuthorization(user: user, app: "watch", read: [], share: ["stepCount"])
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
        guard let type = HealthTypeCatalog.type("stepCount") else { Issue.record("no type"); return }
        _ = try t.store.save([steps(10, start: Self.day0)], by: phone)
        _ = try t.store.save([steps(20, start: Self.day0)], by: watch)
        #expect(try t.store.sourcePriority(userRowID: user.rowID, type: type) == ["phone", "watch"])
        let merged = { () throws -> Double? in
            try t.store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: span(Self.day0, Self.day0 + 60_000)) { snapshot in
                try snapshot.index.statistics(start: Self.day0, end: Self.day0 + 60_000, options: .cumulativeSum).figures.sum
            }
        }
        #expect(try merged() == 10)
        try t.store.setSourcePriority(userRowID: user.rowID, type: type, apps: ["watch"])
        #expect(try t.store.sourcePriority(userRowID: user.rowID, type: type) == ["watch", "phone"])
        #expect(try merged() == 20)
        #expect(throws: StoreError.self) { try t.store.setSourcePriority(userRowID: user.rowID, type: type, apps: ["nope"]) }
        #expect(throws: StoreError.self) { try t.store.setSourcePriority(userRowID: user.rowID, type: type, apps: ["watch", "watch"]) }
        #expect(try t.store.sourcePriority(userRowID: user.rowID, type: type) == ["watch", "phone"])
    }

    @Test func tombstonesCarryTheDeletedSample() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
        let sample = steps(42, start: Self.day0, seconds: 90)
        _ = try t.store.save([sample], by: phone)
        try t.store.deleteSample(sample.uuid, by: phone)
        let row = try t.store.pool.read { db in
            try db.first("SELECT sample_seq, start_ms, end_ms, value FROM deleted_samples", []) { row in
                [try row.int64(at: 0), try row.int64(at: 1), try row.int64(at: 2), Int64(try row.double(at: 3))]
            }
        }
        #expect(row == [1, Self.day0, Self.day0 + 90_000, 42])
    }

    @Test func indexIsRebuiltAfterReopeningAndCategoryTypesAreRefused() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
        guard let type = HealthTypeCatalog.type("stepCount"), let sleep = HealthTypeCatalog.type("sleepAnalysis") else { return }
        _ = try t.store.save((0..<10).map { steps(5, start: Self.day0 + Int64($0) * 60_000) }, by: phone)
        let sum = { (store: SQLiteHealthStore) throws -> Double? in
            try store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: span(Self.day0, Self.day0 + 86_400_000)) { snapshot in
                try snapshot.index.statistics(start: Self.day0, end: Self.day0 + 86_400_000, options: .cumulativeSum).figures.sum
            }
        }
        #expect(try sum(t.store) == 50)
        try t.reopen()
        _ = try t.store.save([steps(7, start: Self.day0 + 3_600_000)], by: phone)
        #expect(try sum(t.store) == 57)
        #expect(throws: StoreError.self) {
            try t.store.withStatisticsIndex(userRowID: user.rowID, type: sleep, buckets: span(Self.day0, Self.day0 + 1)) { _ in 0 }
        }
    }

    @Test func cacheKeepsEntriesThePolicyKeeps() {
        let cache = StatisticsIndexCache(memoryBudget: 100)
        let a = StatisticsIndexCache.Key(userRowID: 1, typeCode: 1)
        let b = StatisticsIndexCache.Key(userRowID: 1, typeCode: 2)
        let c = StatisticsIndexCache.Key(userRowID: 2, typeCode: 1)
        let first = cache.entry(a)
        cache.record(a, bytes: 40)
        _ = cache.entry(b)
        cache.record(b, bytes: 40)
        #expect(cache.count == 2)
        #expect(cache.entry(a) === first)  // resident: the same entry (and its decoding)
        let once = cache.entry(c)
        cache.record(c, bytes: 40)  // asked once, as often as b: not kept
        #expect(cache.count == 2 && cache.memoryBytes == 80)
        #expect(cache.entry(c) !== once)
        cache.record(c, bytes: 40)  // asked twice now, more than b (the least recently used): b goes
        #expect(cache.count == 2 && cache.evictions == 1)
        #expect(cache.entry(a) === first)
        cache.record(a, bytes: 90)  // a resident series that grows pushes the others out
        #expect(cache.count == 1 && cache.memoryBytes == 90)
    }

    /// A series' rollup rows in memory, at a version the test sets: what a store's snapshot reads.
    final class MemoryRollups: RollupSnapshotReading, @unchecked Sendable {
        var version: Int64 = 1
        var samples: [StatisticsSample] = []
        var reads = 0

        func rollupVersion() throws -> Int64 { version }
        func rollupRows(days: ClosedRange<Int64>, detailDays: Set<Int64>) throws -> [RollupRow] {
            reads += 1
            return DayRollup.rows(of: samples, style: .cumulative, priority: SourcePriority([1])).filter { days.contains($0.day) }
                .map { ($0.day, $0.row.body, detailDays.contains($0.day) ? $0.row.detail : nil) }
        }
        func statisticsSamples(from: Int64, to: Int64) throws -> [StatisticsSample] { samples.filter { $0.start >= from && $0.start < to } }
        func sourcePriority() throws -> SourcePriority { SourcePriority([1]) }
        func appNames() throws -> [Int32: String] { [1: "phone"] }
    }

    /// `withCurrentSeries` (a version read before the series' lock) answers only from a decoding
    /// made at exactly the version given and covering the buckets, and otherwise runs nothing.
    @Test func currentSeriesAnswersOnlyAtItsOwnVersion() throws {
        let cache = StatisticsIndexCache(memoryBudget: 1 << 20)
        let key = StatisticsIndexCache.Key(userRowID: 1, typeCode: 1)
        let rollups = MemoryRollups()
        rollups.samples = [StatisticsSample(id: 1, start: Self.day0 + 60_000, end: Self.day0 + 120_000, value: 30, source: 1)]
        let week = span(Self.day0, Self.day0 + 7 * 86_400_000)
        func sum(_ snapshot: StatisticsSnapshot) throws -> Double? {
            try snapshot.index.statistics(start: Self.day0, end: Self.day0 + 86_400_000, options: .cumulativeSum).figures.sum
        }
        func current(_ version: Int64, _ buckets: [CalendarBucket] = span(Self.day0, Self.day0 + 86_400_000)) throws -> Double?? {
            try cache.withCurrentSeries(key, version: version, style: .cumulative, buckets: buckets, perSource: false, sum)
        }
        #expect(try current(1) == nil)  // nothing decoded yet
        #expect(try cache.withSeries(key, style: .cumulative, buckets: week, perSource: false, inSnapshot: { try $0(rollups) }, sum) == 30)
        #expect(try current(1) == .some(30))
        #expect(cache.figures.hits == 1 && cache.figures.misses == 1)
        // Another node's commit: the version read now is newer than the decoding, which must not answer.
        rollups.samples.append(StatisticsSample(id: 2, start: Self.day0 + 600_000, end: Self.day0 + 660_000, value: 12, source: 1))
        rollups.version = 2
        #expect(try current(2) == nil)
        #expect(try current(0) == nil)
        #expect(try current(1, span(Self.day0, Self.day0 + 8 * 86_400_000)) == nil)  // a day the decoding does not hold
        #expect(cache.figures.hits == 1)
        #expect(try cache.withSeries(key, style: .cumulative, buckets: week, perSource: false, inSnapshot: { try $0(rollups) }, sum) == 42)
        #expect(try current(2) == .some(42))
        #expect(rollups.reads == 2)
    }

    /// A sample saved and deleted between two queries never reached the index: its tombstone must not
    /// remove an identical sample that did.
    @Test func sampleSavedAndDeletedBetweenQueriesLeavesItsTwinAlone() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
        guard let type = HealthTypeCatalog.type("stepCount") else { return }
        let sum = { () throws -> Double? in
            try t.store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: span(Self.day0, Self.day0 + 86_400_000)) { snapshot in
                try snapshot.index.statistics(start: Self.day0, end: Self.day0 + 86_400_000, options: .cumulativeSum).figures.sum
            }
        }
        _ = try t.store.save([steps(30, start: Self.day0)], by: phone)
        #expect(try sum() == 30)
        let twin = steps(30, start: Self.day0)
        _ = try t.store.save([twin], by: phone)
        try t.store.deleteSample(twin.uuid, by: phone)
        #expect(try sum() == 30)
    }

    /// Tombstones purged before an idle index caught up: the index is rebuilt rather than left
    /// holding the deleted sample.
    @Test func purgedTombstonesForceARebuild() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: [], share: ["stepCount"])
        guard let type = HealthTypeCatalog.type("stepCount") else { return }
        let sum = { () throws -> Double? in
            try t.store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: span(Self.day0, Self.day0 + 86_400_000)) { snapshot in
                try snapshot.index.statistics(start: Self.day0, end: Self.day0 + 86_400_000, options: .cumulativeSum).figures.sum
            }
        }
        let first = steps(30, start: Self.day0)
        _ = try t.store.save([first, steps(12, start: Self.day0 + 60_000)], by: phone)
        #expect(try sum() == 42)
        try t.store.deleteSample(first.uuid, by: phone)
        #expect(try t.store.purgeTombstones(deletedBefore: Int64.max) == 1)
        #expect(try sum() == 12)
    }

    /// Queries of two types and saves run at once: no deadlock, and once writes stop every index
    /// equals the direct path.
    @Test func concurrentQueriesAndSavesEndExact() throws {
        let t = try TemporaryStore()
        let user = try t.store.createUser(name: "alice")
        let types = ["stepCount", "heartRate"]
        let (phone, _) = try t.store.createAuthorization(user: user, app: "phone", read: Set(types), share: Set(types))
        guard let steps = HealthTypeCatalog.type("stepCount"), let heart = HealthTypeCatalog.type("heartRate") else { return }
        let store = t.store
        let day0 = Self.day0
        let failures = Mutex(0)
        onThreads(8) { worker in
            do {
                for round in 0..<10 {
                    if worker % 2 == 0 {
                        let type = worker % 4 == 0 ? "stepCount" : "heartRate"
                        let start = day0 + Int64(worker * 1_000 + round) * 60_000
                        let sample = HealthSample(uuid: .random(), type: type, start: start, end: start + 60_000, content: .quantity(70))
                        _ = try store.save([sample], by: phone)
                    } else {
                        let type = worker % 4 == 1 ? steps : heart
                        let options: StatisticsOptions = type.isCumulative ? .cumulativeSum : .discreteAverage
                        _ = try store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: span(day0, day0 + 86_400_000)) { snapshot in
                            try snapshot.index.statistics(start: day0, end: day0 + 86_400_000, options: options).figures
                        }
                    }
                }
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        for type in [steps, heart] {
            let style: AggregationStyle = type.isCumulative ? .cumulative : .discrete
            let options: StatisticsOptions = type.isCumulative ? .cumulativeSum : [.discreteAverage, .discreteMax]
            let bucket = [CalendarBucket(start: day0, end: day0 + 86_400_000, startOffsetSeconds: 0, endOffsetSeconds: 0)]
            let (indexed, priority) = try store.withStatisticsIndex(userRowID: user.rowID, type: type, buckets: span(day0, day0 + 86_400_000)) { snapshot in
                (try snapshot.index.statisticsCollection(buckets: bucket, options: options), snapshot.index.priority)
            }
            let all = try store.statisticsSamples(userRowID: user.rowID, type: type)
            #expect(all.count == 20)
            let direct = try statisticsCollection(of: all, buckets: bucket, style: style, options: options, priority: priority)
            #expect(Self.same(indexed[0].figures, direct[0].figures))
        }
    }
}
