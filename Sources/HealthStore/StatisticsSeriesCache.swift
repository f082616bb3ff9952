import HealthModel
import Statistics
import Synchronization

// The statistics read path every store shares: which rollup rows a query needs, when a cached
// decoding of them may answer, and the memory budget over all cached series. A backend supplies
// only a snapshot reader (`RollupSnapshotReading`) for its own SQL.

/// What a statistics query sees of one (user, type): the series decoded from its rollup rows for
/// the days asked about, current as of one snapshot of the store, and the names of the user's sources so
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

extension AggregationStyle {
    /// The style of a quantity type's statistics; nil for types statistics do not apply to.
    public init?(_ type: HealthType) {
        guard type.kind == .quantity, let aggregation = type.aggregation else { return nil }
        self = aggregation.isCumulative ? .cumulative : .discrete
    }

    /// Type code -> style for every quantity type among a store's codes (name -> code): the series
    /// whose statistics have rollups.
    public static func styles(ofTypeCodes codes: [String: Int64]) -> [Int64: AggregationStyle] {
        codes.reduce(into: [:]) { styles, entry in
            if let type = HealthTypeCatalog.type(entry.key), let style = AggregationStyle(type) { styles[entry.value] = style }
        }
    }
}

/// One day's rollup row as a store keeps it (see `DayRollup`); `detail` only when it was asked for.
public typealias RollupRow = (day: Int64, body: [UInt8], detail: [UInt8]?)

/// What a store reads of one series (one user's quantity type), every call inside the same
/// snapshot of its database, so the version, the rows and the edge samples agree.
public protocol RollupSnapshotReading {
    /// Bumped by every commit that changed the series' rows (0 before the first): a cached
    /// decoding may answer exactly while its version is the one read here. A store shared by
    /// several nodes keeps it in the database, so another node's commit makes this node's
    /// cache stale on its next query.
    func rollupVersion() throws -> Int64
    /// The rows of `days`, ascending, with their detail for `detailDays` only.
    func rollupRows(days: ClosedRange<Int64>, detailDays: Set<Int64>) throws -> [RollupRow]
    /// The series' samples starting in [from, to), as the statistics take them.
    func statisticsSamples(from: Int64, to: Int64) throws -> [StatisticsSample]
    /// The user's effective source order for the type (source ids as in the samples).
    func sourcePriority() throws -> SourcePriority
    /// Source id -> app name, for every source of the user.
    func appNames() throws -> [Int32: String]
}

/// What one snapshot read for a series; made by `StatisticsIndexCache.withSeries` only.
public struct RollupLoad {
    var version: Int64
    var priority: SourcePriority
    var appNames: [Int32: String]
    var days: ClosedRange<Int64>
    var rows: [RollupRow]
    var detailDays: Set<Int64>
    var edgeSlots: Set<Int64>
    var edgeSamples: [StatisticsSample]
    var perSource: Bool
}

/// Decoded rollup rows per (user, type), kept while their series' version is unchanged. The rows
/// are the truth (kept current in the writers' transactions); this cache only saves decoding them
/// again, so dropping an entry costs one cold read of the days a query asks for.
public final class StatisticsIndexCache: Sendable {
    public struct Key: Hashable, Sendable {
        public var userRowID: Int64
        public var typeCode: Int64

        public init(userRowID: Int64, typeCode: Int64) {
            self.userRowID = userRowID
            self.typeCode = typeCode
        }
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

    private struct Slots {
        /// Every series being queried or resident; its lock is what concurrent queries of it share.
        var entries: [Key: Entry] = [:]
        var policy: SeriesCachePolicy<Key>
        /// Queries, and those that had to read rows (a cold series, or a stale or too short one).
        var queries = 0
        var reads = 0
    }

    private let slots: Mutex<Slots>
    /// Decoded series beyond this many bytes in all are not kept (see `SeriesCachePolicy`).
    public let memoryBudget: Int
    public init(memoryBudget: Int) {
        self.memoryBudget = memoryBudget
        slots = Mutex(Slots(policy: SeriesCachePolicy(budget: memoryBudget)))
    }

    /// The entry to query `key` through, counting the ask as a hit or a miss.
    func entry(_ key: Key) -> Entry {
        slots.withLock { slots in
            _ = slots.policy.ask(key)
            if let existing = slots.entries[key] { return existing }
            let created = Entry()
            slots.entries[key] = created
            return created
        }
    }

    /// Records a series' size after a query (`read`: it read rows): the policy keeps it (dropping
    /// others) or lets it go.
    func record(_ key: Key, bytes: Int, read: Bool = true) {
        slots.withLock { slots in
            slots.queries += 1
            if read { slots.reads += 1 }
            let decision = slots.policy.store(key, bytes: bytes)
            for victim in decision.evicted { slots.entries[victim] = nil }
            if !decision.keep { slots.entries[key] = nil }
        }
    }

    /// Bytes held by every cached series, as last recorded.
    public var memoryBytes: Int { slots.withLock { $0.policy.bytes } }

    public var count: Int { slots.withLock { $0.policy.residentCount } }

    /// Whether a decoding of `key` is being kept: a store may then first check its version alone,
    /// before opening a snapshot to read rows (a hint; `withSeries` decides what to read).
    public func isResident(_ key: Key) -> Bool { slots.withLock { $0.policy.isResident(key) } }

    /// Series dropped to stay within the budget since the start.
    public var evictions: Int { slots.withLock { $0.policy.evictions } }

    /// The cache's counters since the start, for `/metrics` and benchmarks.
    public var figures: StatisticsCacheFigures {
        slots.withLock { slots in
            StatisticsCacheFigures(budgetBytes: memoryBudget, residentBytes: slots.policy.bytes, residentSeries: slots.policy.residentCount,
                                   hits: slots.queries - slots.reads, misses: slots.reads, evictions: slots.policy.evictions,
                                   rejections: slots.policy.rejections)
        }
    }

    public func removeAll() {
        slots.withLock { slots in
            slots.entries.removeAll()
            slots.policy.removeAll()
        }
    }
}

/// What the statistics series cache did since the store opened.
public struct StatisticsCacheFigures: Sendable, Equatable {
    public var budgetBytes = 0
    public var residentBytes = 0
    public var residentSeries = 0
    /// Queries answered from a decoding in memory, reading nothing but the series' version.
    public var hits = 0
    /// Queries that read and decoded rollup rows (cold, or the rows changed, or more days were asked).
    public var misses = 0
    /// Resident series dropped to make room for another.
    public var evictions = 0
    /// Series decoded for one query and not kept (they did not outrank what they would displace).
    public var rejections = 0

    public init(budgetBytes: Int = 0, residentBytes: Int = 0, residentSeries: Int = 0, hits: Int = 0, misses: Int = 0,
                evictions: Int = 0, rejections: Int = 0) {
        self.budgetBytes = budgetBytes
        self.residentBytes = residentBytes
        self.residentSeries = residentSeries
        self.hits = hits
        self.misses = misses
        self.evictions = evictions
        self.rejections = rejections
    }

    /// Hits over all queries (0 before the first).
    public var hitRatio: Double { hits + misses == 0 ? 0 : Double(hits) / Double(hits + misses) }
}

extension StatisticsIndexCache {
    /// 64 MiB: a year of per-minute steps from two sources decodes to a few MiB (BENCHMARKS.md), and
    /// a series dropped from memory costs only a cold read of its rollup rows (one per day asked about).
    public static let defaultMemoryBudget = 64 << 20
}

extension StatisticsIndexCache {
    /// Runs `body` on a series decoded from the rollup rows of the UTC days the buckets touch, as
    /// of one snapshot: a query reads one row per day (and, for a discrete type, the samples of
    /// 15-minute slots a bucket edge cuts), never all samples. `inSnapshot` opens one snapshot of
    /// the store and calls the given reader function with it; that function first reads the
    /// version and reads nothing more when the cached decoding is current and covers the buckets.
    /// Another (user, type) never waits for this one. `body` must ask only about these buckets.
    public func withSeries<Result: Sendable>(
        _ key: Key, style: AggregationStyle, buckets: [CalendarBucket], perSource: Bool = true,
        inSnapshot: (_ read: (any RollupSnapshotReading) throws -> RollupLoad?) throws -> RollupLoad?,
        _ body: (StatisticsSnapshot) throws -> Result
    ) throws -> Result {
        let want = SeriesWant(buckets: buckets, style: style, perSource: perSource)
        let entry = entry(key)
        let (result, bytes, read) = try entry.state.withLock { state throws -> (Result, Int, Bool) in
            let cached = state.series
            let cachedVersion = state.version
            let load = try inSnapshot { reader -> RollupLoad? in
                let version = try reader.rollupVersion()
                var days = want.days
                var slots = want.slots
                var detailDays = want.detailDays
                var sources = perSource
                if let cached, version == cachedVersion {
                    if want.isAnswered(by: cached) { return nil }
                    // Same rows, more days: read the span of both so one series keeps answering both.
                    days = min(cached.days.lowerBound, want.days.lowerBound)...max(cached.days.upperBound, want.days.upperBound)
                    slots.formUnion(cached.edgeSlots)
                    detailDays.formUnion(cached.detailDays)
                    sources = sources || cached.perSource
                }
                var edgeSamples: [StatisticsSample] = []
                for range in DayRollup.instants(ofSlots: slots) {
                    edgeSamples += try reader.statisticsSamples(from: range.lowerBound, to: range.upperBound)
                }
                return RollupLoad(version: version, priority: try reader.sourcePriority(), appNames: try reader.appNames(),
                                  days: days, rows: try reader.rollupRows(days: days, detailDays: detailDays),
                                  detailDays: detailDays, edgeSlots: slots, edgeSamples: edgeSamples, perSource: sources)
            }
            if let load {
                state.series = nil  // the old decoding is freed before the new one is made
                state.series = try RollupSeries(style: style, priority: load.priority, days: load.days, rows: load.rows,
                                                detailDays: load.detailDays, edgeSlots: load.edgeSlots,
                                                edgeSamples: load.edgeSamples, perSource: load.perSource)
                state.version = load.version
                state.appNames = load.appNames
            }
            guard let series = state.series else { throw StoreError.invalid("statistics series could not be read") }
            let result = try body(StatisticsSnapshot(index: series, appNames: state.appNames, sequence: state.version))
            return (result, series.memoryBytes, load != nil)
        }
        record(key, bytes: bytes, read: read)
        return result
    }
}

/// What a query over some buckets needs of a series' decoding: the days, the edge slots and the
/// detail days its buckets touch, and whether it separates by source.
private struct SeriesWant {
    let days: ClosedRange<Int64>
    let slots: Set<Int64>
    let detailDays: Set<Int64>
    let perSource: Bool

    init(buckets: [CalendarBucket], style: AggregationStyle, perSource: Bool) {
        let start = buckets.map(\.start).min() ?? 0
        days = DayRollup.days(from: start, to: max(buckets.map(\.end).max() ?? start, start + 1))
        slots = DayRollup.edgeSlots(of: buckets, style: style)
        detailDays = DayRollup.detailDays(of: buckets, style: style)
        self.perSource = perSource
    }

    /// Whether `series` holds everything the query needs.
    func isAnswered(by series: RollupSeries) -> Bool {
        series.days.contains(days.lowerBound) && series.days.contains(days.upperBound)
            && slots.isSubset(of: series.edgeSlots) && detailDays.isSubset(of: series.detailDays)
            && (series.perSource || !perSource)
    }
}

extension StatisticsIndexCache {
    /// Runs `body` on this node's decoding of `key` if it is at `version` and covers the buckets;
    /// nil (nothing run, nothing counted) otherwise, and the caller takes `withSeries`.
    ///
    /// For a store whose version read is a round trip to a database server (PostgreSQL): the
    /// caller reads the version first, outside the series' lock, so concurrent queries of one
    /// series do not queue behind each other's round trips, and `body` runs outside the lock too
    /// (the decoding is an immutable value). As strict as `withSeries`: the answer comes from a
    /// decoding made at exactly the version read after the query began.
    public func withCurrentSeries<Result: Sendable>(
        _ key: Key, version: Int64, style: AggregationStyle, buckets: [CalendarBucket], perSource: Bool = true,
        _ body: (StatisticsSnapshot) throws -> Result
    ) throws -> Result? {
        guard let entry = slots.withLock({ $0.entries[key] }) else { return nil }
        let want = SeriesWant(buckets: buckets, style: style, perSource: perSource)
        let current: StatisticsSnapshot? = entry.state.withLock { state in
            guard let series = state.series, state.version == version, want.isAnswered(by: series) else { return nil }
            return StatisticsSnapshot(index: series, appNames: state.appNames, sequence: version)
        }
        guard let current else { return nil }
        let result = try body(current)
        slots.withLock { _ = $0.policy.ask(key) }
        record(key, bytes: current.index.memoryBytes, read: false)
        return result
    }
}
