import HealthModel
import JSON
import SQLite
import Statistics
import Synchronization

/// What a statistics query sees of one (user, type): the series decoded from its rollup rows for
/// the days asked about, current as of one SQLite snapshot, and the names of the user's sources so
/// answers can say which app each figure came from.
public struct StatisticsSnapshot: Sendable {
    public let index: RollupSeries
    /// Source row id (as the series' `source`) -> app name.
    public let appNames: [Int32: String]
    /// The series' rollup version the answer reflects (bumped by every commit that changed its rows).
    public let sequence: Int64

    /// The source id of `app` for this user, if it ever wrote or was authorized.
    public func source(ofApp app: String) -> Int32? {
        appNames.first(where: { $0.value == app })?.key
    }
}

/// Decoded rollup rows per (user, type), kept while their series' version is unchanged. The rows
/// are the truth (kept current in the writers' transactions); this cache only saves decoding them
/// again, so dropping an entry costs one cold read of the days a query asks for.
final class StatisticsIndexCache: Sendable {
    struct Key: Hashable, Sendable {
        var userRowID: Int64
        var typeCode: Int64
    }

    /// The per-(user, type) state; its lock serializes loads and queries of one series only.
    final class Entry: Sendable {
        struct State: Sendable {
            var series: RollupSeries?
            var version: Int64 = -1
            var appNames: [Int32: String] = [:]
        }
        let state = Mutex(State())
    }

    private struct Slot {
        let entry: Entry
        var bytes: Int
        var lastUse: UInt64
    }

    private struct Slots {
        var byKey: [Key: Slot] = [:]
        var clock: UInt64 = 0
        var evictions = 0
    }

    private let slots = Mutex(Slots())
    /// Decoded series beyond this many bytes in all are dropped, least recently used first.
    let memoryBudget: Int
    init(memoryBudget: Int) { self.memoryBudget = memoryBudget }

    func entry(_ key: Key) -> Entry {
        slots.withLock { slots in
            slots.clock += 1
            if let existing = slots.byKey[key] {
                slots.byKey[key]?.lastUse = slots.clock
                return existing.entry
            }
            let created = Entry()
            slots.byKey[key] = Slot(entry: created, bytes: 0, lastUse: slots.clock)
            return created
        }
    }

    /// Records a series' size after a query and evicts others while the total is over budget.
    func record(_ key: Key, bytes: Int) {
        slots.withLock { slots in
            slots.byKey[key]?.bytes = bytes
            var total = slots.byKey.values.reduce(0) { $0 + $1.bytes }
            while total > memoryBudget {
                guard let victim = slots.byKey.filter({ $0.key != key }).min(by: { $0.value.lastUse < $1.value.lastUse }) else { break }
                total -= victim.value.bytes
                slots.byKey[victim.key] = nil
                slots.evictions += 1
            }
        }
    }

    /// Bytes held by every cached series, as last recorded.
    var memoryBytes: Int { slots.withLock { $0.byKey.values.reduce(0) { $0 + $1.bytes } } }

    var count: Int { slots.withLock { $0.byKey.count } }

    /// Series dropped to stay within the budget since the start.
    var evictions: Int { slots.withLock { $0.evictions } }

    func removeAll() { slots.withLock { $0.byKey.removeAll() } }
}

extension AggregationStyle {
    init?(_ type: HealthType) {
        guard type.kind == .quantity, let aggregation = type.aggregation else { return nil }
        self = aggregation.isCumulative ? .cumulative : .discrete
    }
}

extension HealthStore {
    // MARK: Statistics indexes

    /// Runs `body` on the user's series for a quantity type, decoded from the rollup rows of the
    /// UTC days the buckets touch, as of one snapshot: a query reads one row per day (and, for a
    /// discrete type, the samples of 15-minute slots a bucket edge cuts), never all samples. The
    /// decoding is cached while the series' version stays the same. Another (user, type) never
    /// waits for this one. `body` must ask only about these buckets.
    public func withStatisticsIndex<Result: Sendable>(userRowID: Int64, type: HealthType, buckets: [CalendarBucket],
                                                      _ body: (StatisticsSnapshot) throws -> Result) throws -> Result {
        guard let style = AggregationStyle(type), let typeCode = typeCode(for: type.id) else {
            throw StoreError.invalid("statistics need a quantity type; \(type.id) is a \(type.kind.rawValue) type")
        }
        let start = buckets.map(\.start).min() ?? 0
        let wanted = DayRollup.days(from: start, to: max(buckets.map(\.end).max() ?? start, start + 1))
        let wantedSlots = DayRollup.edgeSlots(of: buckets, style: style)
        let wantedDetail = DayRollup.detailDays(of: buckets, style: style)
        let key = StatisticsIndexCache.Key(userRowID: userRowID, typeCode: typeCode)
        let entry = statisticsIndexes.entry(key)
        let (result, bytes) = try entry.state.withLock { state throws -> (Result, Int) in
            // Read in one snapshot, decode with the reader returned.
            let cached = state.series
            let cachedVersion = state.version
            let load = try pool.read { db -> RollupLoad? in
                let version = try StatisticsRollups.version(db, userRowID: userRowID, typeCode: typeCode)
                var days = wanted
                var slots = wantedSlots
                var detailDays = wantedDetail
                if let cached, version == cachedVersion {
                    if cached.days.contains(wanted.lowerBound), cached.days.contains(wanted.upperBound),
                       wantedSlots.isSubset(of: cached.edgeSlots), wantedDetail.isSubset(of: cached.detailDays) { return nil }
                    // Same rows, more days: read the span of both so one series keeps answering both.
                    days = min(cached.days.lowerBound, wanted.lowerBound)...max(cached.days.upperBound, wanted.upperBound)
                    slots.formUnion(cached.edgeSlots)
                    detailDays.formUnion(cached.detailDays)
                }
                var edgeSamples: [StatisticsSample] = []
                for range in DayRollup.instants(ofSlots: slots) {
                    edgeSamples += try StatisticsRollups.samples(db, userRowID: userRowID, typeCode: typeCode,
                                                                 from: range.lowerBound, to: range.upperBound)
                }
                let order = try Self.effectiveSourcePriority(db, userRowID: userRowID, typeCode: typeCode)
                return RollupLoad(version: version, priority: SourcePriority(order.map(\.source)),
                                  appNames: try Self.appNames(db, userRowID: userRowID), days: days,
                                  rows: try StatisticsRollups.rows(db, userRowID: userRowID, typeCode: typeCode, days: days,
                                                                   detailDays: detailDays),
                                  detailDays: detailDays, edgeSlots: slots, edgeSamples: edgeSamples)
            }
            if let load {
                state.series = nil  // the old decoding is freed before the new one is made
                state.series = try RollupSeries(style: style, priority: load.priority, days: load.days, rows: load.rows,
                                                detailDays: load.detailDays, edgeSlots: load.edgeSlots,
                                                edgeSamples: load.edgeSamples)
                state.version = load.version
                state.appNames = load.appNames
            }
            guard let series = state.series else { throw StoreError.invalid("statistics series could not be read") }
            let result = try body(StatisticsSnapshot(index: series, appNames: state.appNames, sequence: state.version))
            return (result, series.memoryBytes)
        }
        statisticsIndexes.record(key, bytes: bytes)
        return result
    }

    /// `HealthDataStore.statistics`: the collection from the cached series.
    public func statistics(userRowID: Int64, type: HealthType, buckets: [CalendarBucket], options: StatisticsOptions)
        throws -> StatisticsAnswer {
        try withStatisticsIndex(userRowID: userRowID, type: type, buckets: buckets) { snapshot in
            StatisticsAnswer(buckets: try snapshot.index.statisticsCollection(buckets: buckets, options: options),
                             appNames: snapshot.appNames)
        }
    }

    /// What one snapshot read for a series.
    private struct RollupLoad {
        var version: Int64
        var priority: SourcePriority
        var appNames: [Int32: String]
        var days: ClosedRange<Int64>
        var rows: [(day: Int64, body: [UInt8], detail: [UInt8]?)]
        var detailDays: Set<Int64>
        var edgeSlots: Set<Int64>
        var edgeSamples: [StatisticsSample]
    }

    /// Bytes held by all cached statistics series.
    public var statisticsIndexMemoryBytes: Int { statisticsIndexes.memoryBytes }

    /// Cached series dropped to stay within the memory budget since the store opened.
    public var statisticsIndexEvictions: Int { statisticsIndexes.evictions }

    /// Drops every cached series (the next query reads its rollup rows): for benchmarks of the cold path.
    public func dropStatisticsIndexes() { statisticsIndexes.removeAll() }

    /// Every sample of a quantity type as statistics see them, read straight from SQLite: the direct
    /// path the rollups are checked against.
    public func statisticsSamples(userRowID: Int64, type: HealthType) throws -> [StatisticsSample] {
        guard AggregationStyle(type) != nil, let typeCode = typeCode(for: type.id) else { return [] }
        return try pool.read { db in try Self.indexableSamples(db, userRowID: userRowID, typeCode: typeCode) }
    }

    static func indexableSamples(_ db: Database, userRowID: Int64, typeCode: Int64) throws -> [StatisticsSample] {
        let statement = try db.cachedStatement("""
            SELECT seq, start_ms, end_ms, value, source_id FROM samples
            WHERE user_id = ? AND type_id = ? AND value IS NOT NULL
            """)
        try statement.bind([.integer(userRowID), .integer(typeCode)])
        var samples: [StatisticsSample] = []
        try statement.forEachRow { row in
            if let sample = try indexable(row) { samples.append(sample) }
        }
        return samples
    }

    /// A row (seq, start, end, value, source) as the indexes take it. Samples the indexes cannot hold
    /// (longer than `StatisticsSample.maximumDuration`, possible only for discrete types without a
    /// maximum) are left out, the same way on insert and on delete.
    static func indexable(_ row: Row) throws(RowDecodingError) -> StatisticsSample? {
        guard let source = Int32(exactly: try row.int64(at: 4)) else { return nil }
        let sample = StatisticsSample(id: try row.int64(at: 0), start: try row.int64(at: 1), end: try row.int64(at: 2),
                                      value: try row.double(at: 3), source: source)
        do { try sample.validate() } catch { return nil }
        return sample
    }

    static func appNames(_ db: Database, userRowID: Int64) throws -> [Int32: String] {
        var names: [Int32: String] = [:]
        let statement = try db.cachedStatement("SELECT id, app FROM sources WHERE user_id = ?")
        try statement.bind([.integer(userRowID)])
        try statement.forEachRow { row in
            if let id = Int32(exactly: try row.int64(at: 0)) { names[id] = try row.string(at: 1) }
        }
        return names
    }

    // MARK: Source priority

    /// The user's effective source order for a type: the apps of their chosen order first (as listed),
    /// then every other source that saved the type, the one that saved it first ranking first.
    static func effectiveSourcePriority(_ db: Database, userRowID: Int64, typeCode: Int64) throws -> [(source: Int32, app: String)] {
        var order: [(source: Int32, app: String)] = []
        var listed = Set<Int32>()
        if let text = try db.first("SELECT apps FROM source_priorities WHERE user_id = ? AND type_id = ?",
                                   [.integer(userRowID), .integer(typeCode)], { try $0.string(at: 0) }) {
            let names = Self.decodeAppList(text)
            let statement = try db.cachedStatement("SELECT id FROM sources WHERE user_id = ? AND app = ?")
            for name in names {
                try statement.bind([.integer(userRowID), .text(name)])
                guard let id = try statement.first({ try $0.int64(at: 0) }).flatMap({ Int32(exactly: $0) }),
                      !listed.contains(id) else { continue }
                listed.insert(id)
                order.append((id, name))
            }
        }
        let statement = try db.cachedStatement("""
            SELECT st.source_id, s.app, min(st.first_seq) AS first FROM source_types st JOIN sources s ON s.id = st.source_id
            WHERE st.user_id = ? AND st.type_id = ? GROUP BY st.source_id ORDER BY first, st.source_id
            """)
        try statement.bind([.integer(userRowID), .integer(typeCode)])
        try statement.forEachRow { row in
            guard let id = Int32(exactly: try row.int64(at: 0)), !listed.contains(id) else { return }
            order.append((id, try row.string(at: 1)))
        }
        return order
    }

    /// The effective source order for a type as app names (see `effectiveSourcePriority`).
    public func sourcePriority(userRowID: Int64, type: HealthType) throws -> [String] {
        guard let typeCode = typeCode(for: type.id) else { return [] }
        return try pool.read { db in try Self.effectiveSourcePriority(db, userRowID: userRowID, typeCode: typeCode).map(\.app) }
    }

    /// Stores the user's order for a type. Every app must be one the user has authorized (a source);
    /// an unknown or repeated name is `invalid`, naming it, and nothing is stored.
    public func setSourcePriority(userRowID: Int64, type: HealthType, apps: [String]) throws {
        guard AggregationStyle(type) != nil, let typeCode = typeCode(for: type.id) else {
            throw StoreError.invalid("type: source priority applies to quantity types; \(type.id) is a \(type.kind.rawValue) type")
        }
        try pool.write { db in
            var seen = Set<String>()
            for (position, app) in apps.enumerated() {
                guard seen.insert(app).inserted else {
                    throw StoreError.invalid("order[\(position)]: app '\(app)' is listed twice")
                }
                guard try db.first("SELECT 1 FROM sources WHERE user_id = ? AND app = ?",
                                   [.integer(userRowID), .text(app)], { _ in true }) != nil else {
                    throw StoreError.invalid("order[\(position)]: unknown app '\(app)' (no authorization of this user names it)")
                }
            }
            try db.execute("""
                INSERT INTO source_priorities (user_id, type_id, apps) VALUES (?, ?, ?)
                ON CONFLICT(user_id, type_id) DO UPDATE SET apps = excluded.apps
                """, [.integer(userRowID), .integer(typeCode), .text(Self.encodeAppList(apps))])
            // A new order changes which source wins every overlap: every day of the series is rebuilt.
            if let style = rollupStyles[typeCode] {
                try StatisticsRollups.rebuild(db, userRowID: userRowID, typeCode: typeCode, style: style)
            }
        }
    }

    static func encodeAppList(_ apps: [String]) -> String {
        var writer = JSONWriter()
        writer.beginArray()
        for app in apps { writer.string(app) }
        writer.endArray()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    static func decodeAppList(_ text: String) -> [String] {
        guard let values = (try? JSONParser.parse(text))?.arrayValue else { return [] }
        return values.compactMap(\.stringValue)
    }
}
