import Dispatch
import HealthModel
import SQLite
import Statistics

/// The statistics rollup days a transaction's saves and deletes shaped (`RollupDayChanges`); their
/// rows are rewritten before the transaction commits, so rollups and samples never disagree.
struct RollupChanges {
    private var changes = RollupDayChanges()

    /// Notes a saved or deleted sample (see `RollupDayChanges.note`).
    mutating func note(typeCode: Int64, style: AggregationStyle?, start: Int64, end: Int64, value: Double?) {
        changes.note(typeCode: typeCode, style: style, start: start, end: end, value: value)
    }

    /// Rewrites the rollup rows of every noted day.
    func apply(_ db: Database, userRowID: Int64, store: HealthStore) throws {
        guard !changes.isEmpty else { return }
        let began = DispatchTime.now().uptimeNanoseconds
        defer { store.rollupNanoseconds.add(DispatchTime.now().uptimeNanoseconds - began, ordering: .relaxed) }
        for series in changes.series {
            guard let style = store.rollupStyles[series.typeCode] else { continue }
            try StatisticsRollups.refresh(db, userRowID: userRowID, typeCode: series.typeCode, style: style, days: series.days)
        }
    }
}

/// The `statistics_days` rows (Schema.swift): reading and rewriting them inside the writer's transaction.
enum StatisticsRollups {
    static let dayLength = DayRollup.dayLength

    /// Rewrites the rows of `days` from the samples shaping them, reading each run of consecutive
    /// days in one range scan of `samples_by_type_start`.
    static func refresh(_ db: Database, userRowID: Int64, typeCode: Int64, style: AggregationStyle, days: Set<Int64>) throws {
        guard !days.isEmpty else { return }
        let priority = try priority(db, userRowID: userRowID, typeCode: typeCode, style: style)
        // A cumulative day also takes samples that started before it and run into it.
        let reach = style == .cumulative ? try longestDuration(db, userRowID: userRowID, typeCode: typeCode) : 0
        try DayRollup.refresh(days: days, style: style, priority: priority, reach: reach, samples: { from, to in
            try samples(db, userRowID: userRowID, typeCode: typeCode, from: from, to: to)
        }, write: { day, row in
            try upsert(db, userRowID: userRowID, typeCode: typeCode, day: day, row: row)
        })
        try bumpVersion(db, userRowID: userRowID, typeCode: typeCode)
    }

    /// Rewrites every row of one series from all its samples: after a source-priority change, and
    /// when the rollups are first built for an existing database.
    static func rebuild(_ db: Database, userRowID: Int64, typeCode: Int64, style: AggregationStyle) throws {
        let priority = try priority(db, userRowID: userRowID, typeCode: typeCode, style: style)
        try db.execute("DELETE FROM statistics_days WHERE user_id = ? AND type_id = ?", [.integer(userRowID), .integer(typeCode)])
        let samples = try HealthStore.indexableSamples(db, userRowID: userRowID, typeCode: typeCode)
        for (day, row) in DayRollup.rows(of: samples, style: style, priority: priority) {
            try upsert(db, userRowID: userRowID, typeCode: typeCode, day: day, row: row)
        }
        try bumpVersion(db, userRowID: userRowID, typeCode: typeCode)
    }

    /// Builds the rows of every series of every user (an existing database meeting rollups).
    static func rebuildAll(_ db: Database) throws {
        var styles: [Int64: AggregationStyle] = [:]
        let types = try db.cachedStatement("SELECT id, name FROM type_codes")
        try types.forEachRow { row in
            if let type = HealthTypeCatalog.type(try row.string(at: 1)), let style = AggregationStyle(type) {
                styles[try row.int64(at: 0)] = style
            }
        }
        var series: [(user: Int64, type: Int64)] = []
        let pairs = try db.cachedStatement("SELECT DISTINCT user_id, type_id FROM samples")
        try pairs.forEachRow { series.append((try $0.int64(at: 0), try $0.int64(at: 1))) }
        for (user, type) in series {
            guard let style = styles[type] else { continue }
            try rebuild(db, userRowID: user, typeCode: type, style: style)
        }
    }

    /// Bumped by every change to a series' rows, in the same transaction: a cached decoding of the
    /// rows is current exactly while its version is.
    static func version(_ db: Database, userRowID: Int64, typeCode: Int64) throws -> Int64 {
        try db.first("SELECT version FROM statistics_series WHERE user_id = ? AND type_id = ?",
                     [.integer(userRowID), .integer(typeCode)], { try $0.int64(at: 0) }) ?? 0
    }

    /// The rows of `days`, ascending, with their detail for `detailDays` only (a large column
    /// SQLite does not read unless asked).
    static func rows(_ db: Database, userRowID: Int64, typeCode: Int64, days: ClosedRange<Int64>,
                     detailDays: Set<Int64>) throws -> [(day: Int64, body: [UInt8], detail: [UInt8]?)] {
        let statement = try db.cachedStatement("""
            SELECT day, body FROM statistics_days WHERE user_id = ? AND type_id = ? AND day BETWEEN ? AND ? ORDER BY day
            """)
        try statement.bind([.integer(userRowID), .integer(typeCode), .integer(days.lowerBound), .integer(days.upperBound)])
        var rows: [(day: Int64, body: [UInt8], detail: [UInt8]?)] = []
        try statement.forEachRow { rows.append((try $0.int64(at: 0), try $0.blob(at: 1), nil)) }
        guard !detailDays.isEmpty else { return rows }
        let detail = try db.cachedStatement("SELECT detail FROM statistics_days WHERE user_id = ? AND type_id = ? AND day = ?")
        for index in rows.indices where detailDays.contains(rows[index].day) {
            try detail.bind([.integer(userRowID), .integer(typeCode), .integer(rows[index].day)])
            guard let bytes = try detail.first({ $0.blobIfPresent(at: 0) }), let bytes else {
                throw StoreError.invalid("statistics rollup of day \(rows[index].day) has no detail")
            }
            rows[index].detail = bytes
        }
        return rows
    }

    private static func priority(_ db: Database, userRowID: Int64, typeCode: Int64, style: AggregationStyle) throws -> SourcePriority {
        // Discrete rows hold samples, not merges: the order matters only when answering.
        guard style == .cumulative else { return SourcePriority([]) }
        return SourcePriority(try HealthStore.effectiveSourcePriority(db, userRowID: userRowID, typeCode: typeCode).map(\.source))
    }

    private static func longestDuration(_ db: Database, userRowID: Int64, typeCode: Int64) throws -> Int64 {
        try db.first("SELECT max_duration_ms FROM type_extents WHERE user_id = ? AND type_id = ?",
                     [.integer(userRowID), .integer(typeCode)], { try $0.int64(at: 0) }) ?? 0
    }

    /// The samples starting in [from, to), as the statistics take them.
    static func samples(_ db: Database, userRowID: Int64, typeCode: Int64, from: Int64, to: Int64) throws -> [StatisticsSample] {
        let statement = try db.cachedStatement("""
            SELECT seq, start_ms, end_ms, value, source_id FROM samples
            WHERE user_id = ? AND type_id = ? AND start_ms >= ? AND start_ms < ? AND value IS NOT NULL
            """)
        try statement.bind([.integer(userRowID), .integer(typeCode), .integer(from), .integer(to)])
        var samples: [StatisticsSample] = []
        try statement.forEachRow { row in
            if let sample = try HealthStore.indexable(row) { samples.append(sample) }
        }
        return samples
    }

    /// Writes a day's row, or removes it when no sample shapes the day any more.
    private static func upsert(_ db: Database, userRowID: Int64, typeCode: Int64, day: Int64,
                               row: (body: [UInt8], detail: [UInt8]?)?) throws {
        guard let row else {
            try db.execute("DELETE FROM statistics_days WHERE user_id = ? AND type_id = ? AND day = ?",
                           [.integer(userRowID), .integer(typeCode), .integer(day)])
            return
        }
        try db.execute("""
            INSERT INTO statistics_days (user_id, type_id, day, body, detail) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(user_id, type_id, day) DO UPDATE SET body = excluded.body, detail = excluded.detail
            """, [.integer(userRowID), .integer(typeCode), .integer(day), .blob(row.body), row.detail.map { .blob($0) } ?? .null])
    }

    private static func bumpVersion(_ db: Database, userRowID: Int64, typeCode: Int64) throws {
        try db.execute("""
            INSERT INTO statistics_series (user_id, type_id, version) VALUES (?, ?, 1)
            ON CONFLICT(user_id, type_id) DO UPDATE SET version = version + 1
            """, [.integer(userRowID), .integer(typeCode)])
    }
}
