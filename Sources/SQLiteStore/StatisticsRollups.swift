import HealthStore
import Dispatch
import HealthModel
import SQLite
import Statistics

/// The statistics rollup days a transaction's saves and deletes shaped (`RollupDayChanges`); their
/// rows are brought up to date before the transaction commits, so rollups and samples never disagree.
struct RollupChanges {
    private var changes = RollupDayChanges()

    /// Notes a saved sample: `seq` is its row's sequence, `source` its `sources` row.
    mutating func noteSaved(typeCode: Int64, style: AggregationStyle?, seq: Int64, source: Int64, start: Int64, end: Int64,
                            value: Double?) {
        guard let value, let source = Int32(exactly: source) else { return }
        changes.noteSaved(typeCode: typeCode, style: style,
                          sample: StatisticsSample(id: seq, start: start, end: end, value: value, source: source))
    }

    /// Notes a deleted sample.
    mutating func noteDeleted(_ row: SampleRow, style: AggregationStyle?) {
        guard let value = row.value, let source = Int32(exactly: row.sourceRowID) else { return }
        changes.noteDeleted(typeCode: row.typeCode, style: style,
                            sample: StatisticsSample(id: row.seq, start: row.start, end: row.end, value: value, source: source))
    }

    /// Brings the rollup rows of every noted day up to date (`DayRollup.maintain`).
    func apply(_ db: Database, userRowID: Int64, store: SQLiteHealthStore) throws {
        let mode = RollupMaintenanceMode(rawValue: store.rollupMaintenance.load(ordering: .relaxed)) ?? .incremental
        guard !changes.isEmpty, mode != .off else { return }
        let began = DispatchTime.now().uptimeNanoseconds
        defer { store.rollupNanoseconds.add(DispatchTime.now().uptimeNanoseconds - began, ordering: .relaxed) }
        for series in changes.series {
            if mode == .rereadDays {
                try StatisticsRollups.rereadDays(db, userRowID: userRowID, changes: series)
            } else {
                try StatisticsRollups.maintain(db, userRowID: userRowID, changes: series)
            }
        }
    }
}

/// How a write keeps the rollups: the store always folds its changes in (`incremental`); the
/// other two exist so `healthd-bench ingest` can put figures beside it in one run: every touched
/// day rewritten from all its samples (the simple way), and no maintenance at all
/// (the rows then disagree with the samples, so statistics answer wrongly).
package enum RollupMaintenanceMode: UInt8, Sendable {
    case incremental, rereadDays, off
}

/// Where a series' day rows live. `clustered` is the table written now (migration
/// `016-statistics-days-clustered`): `statistics_days` keyed by one integer packing (user, type,
/// day), so the table's own B-tree keeps a series' days in consecutive rows, holding the body only,
/// and `statistics_day_details` beside it keyed the same way. `columns` is the table migrations
/// 009-015 ran on: (user_id, type_id, day, body, detail) with the key in its columns; only those
/// migrations write it.
enum RollupTableLayout {
    case columns, clustered
}

/// A day row's key in the clustered tables: the user's row id in the high 31 bits, the type code in
/// the next 12, the day (from 1970-01-01, offset by 2^19) in the low 20. Integer order is (user,
/// type, day) order, so a series' days are one key range and, in a rowid table, neighbouring rows.
struct RollupDayKey {
    static let dayBits: Int64 = 20
    static let typeBits: Int64 = 12
    static let dayOffset: Int64 = 1 << (dayBits - 1)
    /// Days -2^19..<2^19 (1435 years either side of 1970) cover every instant a sample may carry.
    static let days = -dayOffset ... dayOffset - 1
    static let typeCodes: ClosedRange<Int64> = 0 ... (1 << typeBits) - 1
    static let users: ClosedRange<Int64> = 0 ... (1 << (63 - dayBits - typeBits)) - 1

    /// The key of (user, type, day); `invalid` outside the packed ranges.
    static func key(user: Int64, type: Int64, day: Int64) throws -> Int64 {
        guard users.contains(user), typeCodes.contains(type), days.contains(day) else {
            throw StoreError.invalid("statistics rollup key out of range: user \(user), type \(type), day \(day)")
        }
        return user << (dayBits + typeBits) | type << dayBits | (day + dayOffset)
    }

    /// The day a key holds (its low bits).
    static func day(of key: Int64) -> Int64 { (key & ((1 << dayBits) - 1)) - dayOffset }

    /// The keys of every day of one series.
    static func series(user: Int64, type: Int64) throws -> ClosedRange<Int64> {
        try key(user: user, type: type, day: days.lowerBound) ... key(user: user, type: type, day: days.upperBound)
    }

    /// The same packing in SQL over columns named user_id, type_id and day (the migration's).
    static let sql = "(user_id << \(dayBits + typeBits)) | (type_id << \(dayBits)) | (day + \(dayOffset))"
}

/// The `statistics_days` rows (Schema.swift): reading and rewriting them inside the writer's transaction.
enum StatisticsRollups {
    static let dayLength = DayRollup.dayLength

    /// Brings the rows of one series' changed days up to date: saves folded into the rows read
    /// back, days the rules say must be rebuilt read from `samples_by_type_start`, and every
    /// changed row written in as few statements as the rows allow.
    static func maintain(_ db: Database, userRowID: Int64, changes: RollupSeriesChanges) throws {
        let typeCode = changes.typeCode
        let style = changes.style
        try DayRollup.maintain(changes, rows: { days in
            try rowsForUpdate(db, userRowID: userRowID, typeCode: typeCode, days: days)
        }, context: {
            // A cumulative day also takes samples that started before it and run into it.
            (try priority(db, userRowID: userRowID, typeCode: typeCode, style: style),
             style == .cumulative ? try longestDuration(db, userRowID: userRowID, typeCode: typeCode) : 0)
        }, samples: { from, to in
            try samples(db, userRowID: userRowID, typeCode: typeCode, from: from, to: to)
        }, write: { rows in
            try write(db, userRowID: userRowID, typeCode: typeCode, rows: rows)
        })
        try bumpVersion(db, userRowID: userRowID, typeCode: typeCode)
    }

    /// Rewrites every changed day from all its samples (`RollupMaintenanceMode.rereadDays`).
    static func rereadDays(_ db: Database, userRowID: Int64, changes: RollupSeriesChanges) throws {
        let typeCode = changes.typeCode
        let priority = try priority(db, userRowID: userRowID, typeCode: typeCode, style: changes.style)
        let reach = changes.style == .cumulative ? try longestDuration(db, userRowID: userRowID, typeCode: typeCode) : 0
        var rows: [(day: Int64, row: DayRollup.Row?)] = []
        try DayRollup.refresh(days: changes.days, style: changes.style, priority: priority, reach: reach, samples: { from, to in
            try samples(db, userRowID: userRowID, typeCode: typeCode, from: from, to: to)
        }, write: { day, row in rows.append((day, row)) })
        try write(db, userRowID: userRowID, typeCode: typeCode, rows: rows)
        try bumpVersion(db, userRowID: userRowID, typeCode: typeCode)
    }

    /// The rows of `days` (ascending) with their detail, in one range read.
    private static func rowsForUpdate(_ db: Database, userRowID: Int64, typeCode: Int64,
                                      days: [Int64]) throws -> [Int64: DayRollup.Row] {
        guard let first = days.first, let last = days.last else { return [:] }
        let wanted = Set(days)
        let statement = try db.cachedStatement("""
            SELECT d.key, d.body, x.detail FROM statistics_days d LEFT JOIN statistics_day_details x ON x.key = d.key
            WHERE d.key BETWEEN ? AND ?
            """)
        try statement.bind([.integer(try RollupDayKey.key(user: userRowID, type: typeCode, day: first)),
                            .integer(try RollupDayKey.key(user: userRowID, type: typeCode, day: last))])
        var rows: [Int64: DayRollup.Row] = [:]
        try statement.forEachRow { row in
            let day = RollupDayKey.day(of: try row.int64(DayRowColumn.key))
            if wanted.contains(day) { rows[day] = (try row.blob(DayRowColumn.body), row.blobIfPresent(DayRowColumn.detail)) }
        }
        return rows
    }

    /// Writes changed rows: one multi-row upsert per 64 rows kept (and one for their details), one
    /// delete per 64 rows removed.
    private static func write(_ db: Database, userRowID: Int64, typeCode: Int64, rows: [(day: Int64, row: DayRollup.Row?)],
                              layout: RollupTableLayout = .clustered) throws {
        if layout == .columns { return try writeColumns(db, userRowID: userRowID, typeCode: typeCode, rows: rows) }
        var kept: [(key: Int64, row: DayRollup.Row)] = []
        var removed: [Int64] = []
        for (day, row) in rows {
            let key = try RollupDayKey.key(user: userRowID, type: typeCode, day: day)
            if let row { kept.append((key, row)) } else { removed.append(key) }
        }
        // A type's rows all have a detail (cumulative) or none (discrete); a kept row without one
        // still clears any it had, so the two tables never disagree.
        let details = kept.compactMap { key, row in row.detail.map { (key, $0) } }
        let withoutDetail = kept.filter { $0.row.detail == nil }.map(\.key)
        for part in chunks(kept) {
            try upsert(db, table: "statistics_days", column: "body", part.map { ($0.key, $0.row.body) })
        }
        for part in chunks(details) {
            try upsert(db, table: "statistics_day_details", column: "detail", Array(part))
        }
        for part in chunks(withoutDetail) { try delete(db, from: "statistics_day_details", keys: part) }
        for part in chunks(removed) {
            try delete(db, from: "statistics_days", keys: part)
            try delete(db, from: "statistics_day_details", keys: part)
        }
    }

    /// `items` in slices of at most 64 (one statement each).
    private static func chunks<T>(_ items: [T]) -> [ArraySlice<T>] {
        stride(from: 0, to: items.count, by: 64).map { items[$0..<min(items.count, $0 + 64)] }
    }

    private static func upsert(_ db: Database, table: String, column: String, _ rows: [(Int64, [UInt8])]) throws {
        var values: [SQLValue] = []
        values.reserveCapacity(rows.count * 2)
        for (key, blob) in rows { values += [.integer(key), .blob(blob)] }
        let tuples = Array(repeating: "(?, ?)", count: rows.count).joined(separator: ", ")
        let sql = """
            INSERT INTO \(table) (key, \(column)) VALUES \(tuples) ON CONFLICT(key) DO UPDATE SET \(column) = excluded.\(column)
            """
        // The common shapes (a batch touching one or two days) stay prepared.
        if rows.count <= 2 { try db.cachedStatement(sql).execute(values) } else { try db.execute(sql, values) }
    }

    private static func delete(_ db: Database, from table: String, keys: ArraySlice<Int64>) throws {
        let marks = Array(repeating: "?", count: keys.count).joined(separator: ", ")
        let sql = "DELETE FROM \(table) WHERE key IN (\(marks))"
        if keys.count <= 2 { try db.cachedStatement(sql).execute(keys.map { .integer($0) }) } else { try db.execute(sql, keys.map { .integer($0) }) }
    }

    /// `write` on the table of migrations 009-015 (`RollupTableLayout.columns`).
    private static func writeColumns(_ db: Database, userRowID: Int64, typeCode: Int64,
                                     rows: [(day: Int64, row: DayRollup.Row?)]) throws {
        let kept = rows.compactMap { day, row in row.map { (day, $0) } }
        for part in chunks(kept) {
            var values: [SQLValue] = []
            for (day, row) in part {
                values += [.integer(userRowID), .integer(typeCode), .integer(day), .blob(row.body), row.detail.map { .blob($0) } ?? .null]
            }
            let tuples = Array(repeating: "(?, ?, ?, ?, ?)", count: part.count).joined(separator: ", ")
            try db.execute("""
                INSERT INTO statistics_days (user_id, type_id, day, body, detail) VALUES \(tuples)
                ON CONFLICT(user_id, type_id, day) DO UPDATE SET body = excluded.body, detail = excluded.detail
                """, values)
        }
        for part in chunks(rows.filter { $0.row == nil }.map(\.day)) {
            let marks = Array(repeating: "?", count: part.count).joined(separator: ", ")
            try db.execute("DELETE FROM statistics_days WHERE user_id = ? AND type_id = ? AND day IN (\(marks))",
                           [.integer(userRowID), .integer(typeCode)] + part.map { .integer($0) })
        }
    }

    /// Rewrites every row of one series from all its samples: after a source-priority change, and
    /// when the rollups are first built for an existing database (`layout` `.columns`, in its migration).
    static func rebuild(_ db: Database, userRowID: Int64, typeCode: Int64, style: AggregationStyle,
                        layout: RollupTableLayout = .clustered) throws {
        let priority = try priority(db, userRowID: userRowID, typeCode: typeCode, style: style)
        switch layout {
        case .columns:
            try db.execute("DELETE FROM statistics_days WHERE user_id = ? AND type_id = ?", [.integer(userRowID), .integer(typeCode)])
        case .clustered:
            let keys = try RollupDayKey.series(user: userRowID, type: typeCode)
            for table in ["statistics_days", "statistics_day_details"] {
                try db.execute("DELETE FROM \(table) WHERE key BETWEEN ? AND ?", [.integer(keys.lowerBound), .integer(keys.upperBound)])
            }
        }
        let samples = try SQLiteHealthStore.indexableSamples(db, userRowID: userRowID, typeCode: typeCode)
        try write(db, userRowID: userRowID, typeCode: typeCode,
                  rows: DayRollup.rows(of: samples, style: style, priority: priority).map { ($0.day, $0.row) }, layout: layout)
        try bumpVersion(db, userRowID: userRowID, typeCode: typeCode)
    }

    /// Type code -> style for every quantity type the database has a code for.
    private static func styles(_ db: Database) throws -> [Int64: AggregationStyle] {
        var codes: [String: Int64] = [:]
        let types = try db.cachedStatement("SELECT id, name FROM type_codes")
        enum Column: Int, TableColumns {
            case id, name
            static let table = "type_codes"
        }
        try types.forEachRow { row in codes[try row.string(Column.name)] = try row.int64(Column.id) }
        return AggregationStyle.styles(ofTypeCodes: codes)
    }

    /// Builds the rows of every series of every user (an existing database meeting rollups).
    static func rebuildAll(_ db: Database, layout: RollupTableLayout = .clustered) throws {
        let styles = try styles(db)
        var series: [(user: Int64, type: Int64)] = []
        let pairs = try db.cachedStatement("SELECT DISTINCT user_id, type_id FROM samples")
        try pairs.forEachRow { series.append((try $0.int64(SeriesColumn.userID), try $0.int64(SeriesColumn.typeID))) }
        for (user, type) in series {
            guard let style = styles[type] else { continue }
            try rebuild(db, userRowID: user, typeCode: type, style: style, layout: layout)
        }
    }

    /// Rewrites every discrete series' rows in the layout written now (`DayRollup.currentDiscreteBody`:
    /// the same figures, from the rows alone), one series at a time and in day order. Migration
    /// 013 runs it, on the table of that time (`RollupTableLayout.columns`).
    static func rewriteDiscreteRows(_ db: Database) throws {
        let discrete = try styles(db).filter { $0.value == .discrete }.keys.sorted()
        guard !discrete.isEmpty else { return }
        let codes = discrete.map(String.init).joined(separator: ", ")
        let series = try db.map("SELECT DISTINCT user_id, type_id FROM statistics_days WHERE type_id IN (\(codes)) ORDER BY 1, 2") {
            (user: try $0.int64(SeriesColumn.userID), type: try $0.int64(SeriesColumn.typeID))
        }
        enum Stored: Int, TableColumns {
            case day, body
            static let table = "statistics_days"
        }
        for (user, type) in series {
            let stored = try db.map("SELECT day, body FROM statistics_days WHERE user_id = ? AND type_id = ? ORDER BY day",
                                    [.integer(user), .integer(type)]) { (day: try $0.int64(Stored.day), body: try $0.blob(Stored.body)) }
            var rows: [(day: Int64, row: DayRollup.Row?)] = []
            rows.reserveCapacity(stored.count)
            for (day, body) in stored {
                let row: DayRollup.Row = (try DayRollup.currentDiscreteBody(body, day: day), nil)
                rows.append((day, row))
            }
            try db.execute("DELETE FROM statistics_days WHERE user_id = ? AND type_id = ?", [.integer(user), .integer(type)])
            try write(db, userRowID: user, typeCode: type, rows: rows, layout: .columns)
        }
    }

    /// Moves the rows of the `columns` table to the clustered tables (migration 016), in key order,
    /// as they are: a series' days end up in consecutive rows, bodies apart from details.
    static func clusterRows(_ db: Database) throws {
        enum Outside: Int, TableColumns {
            case userID, typeID, day
            static let table = "statistics_days"
        }
        let outside = try db.first("""
            SELECT user_id, type_id, day FROM statistics_days
            WHERE user_id NOT BETWEEN \(RollupDayKey.users.lowerBound) AND \(RollupDayKey.users.upperBound)
               OR type_id NOT BETWEEN \(RollupDayKey.typeCodes.lowerBound) AND \(RollupDayKey.typeCodes.upperBound)
               OR day NOT BETWEEN \(RollupDayKey.days.lowerBound) AND \(RollupDayKey.days.upperBound)
            LIMIT 1
            """, [], { (try $0.int64(Outside.userID), try $0.int64(Outside.typeID), try $0.int64(Outside.day)) })
        if let (user, type, day) = outside {
            throw StoreError.invalid("statistics rollup key out of range: user \(user), type \(type), day \(day)")
        }
        try db.execute("""
            CREATE TABLE statistics_days_clustered (
                key INTEGER PRIMARY KEY,
                body BLOB NOT NULL,
                -- The key's parts, for inspection (computed when read, not stored); queries go by key.
                user_id INTEGER AS (key >> \(RollupDayKey.dayBits + RollupDayKey.typeBits)),
                type_id INTEGER AS ((key >> \(RollupDayKey.dayBits)) & \(RollupDayKey.typeCodes.upperBound)),
                day INTEGER AS ((key & \((1 << RollupDayKey.dayBits) - 1)) - \(RollupDayKey.dayOffset))
            );
            CREATE TABLE statistics_day_details (
                key INTEGER PRIMARY KEY,
                detail BLOB NOT NULL
            );
            INSERT INTO statistics_days_clustered (key, body)
                SELECT \(RollupDayKey.sql), body FROM statistics_days ORDER BY user_id, type_id, day;
            INSERT INTO statistics_day_details (key, detail)
                SELECT \(RollupDayKey.sql), detail FROM statistics_days WHERE detail IS NOT NULL ORDER BY user_id, type_id, day;
            DROP TABLE statistics_days;
            ALTER TABLE statistics_days_clustered RENAME TO statistics_days;
            """)
    }

    /// Bumped by every change to a series' rows, in the same transaction: a cached decoding of the
    /// rows is current exactly while its version is.
    static func version(_ db: Database, userRowID: Int64, typeCode: Int64) throws -> Int64 {
        try db.firstInt64("SELECT version FROM statistics_series WHERE user_id = ? AND type_id = ?",
                          [.integer(userRowID), .integer(typeCode)]) ?? 0
    }

    /// The rows of `days`, ascending, with their detail for `detailDays` only (in a table of its
    /// own, looked up for those days alone), in one statement: a mask of the days (one character
    /// a day of `days`, '1' where the detail is wanted) picks the rows whose detail is read.
    static func rows(_ db: Database, userRowID: Int64, typeCode: Int64, days: ClosedRange<Int64>,
                     detailDays: Set<Int64>) throws -> [(day: Int64, body: [UInt8], detail: [UInt8]?)] {
        let statement = try db.cachedStatement("""
            SELECT d.key, d.body,
                   CASE WHEN substr(?3, d.key - ?1 + 1, 1) = '1' THEN (SELECT x.detail FROM statistics_day_details x WHERE x.key = d.key) END
            FROM statistics_days d WHERE d.key BETWEEN ?1 AND ?2 ORDER BY d.key
            """)
        // Days outside the keys' range hold no rows (no sample can shape them).
        guard days.overlaps(RollupDayKey.days) else { return [] }
        let days = days.clamped(to: RollupDayKey.days)
        let wanted = detailDays.filter { days.contains($0) }
        var mask = ""
        if let last = wanted.max() {
            var characters = [UInt8](repeating: UInt8(ascii: "0"), count: Int(last - days.lowerBound) + 1)
            for day in wanted { characters[Int(day - days.lowerBound)] = UInt8(ascii: "1") }
            mask = String(decoding: characters, as: UTF8.self)
        }
        try statement.bind([.integer(try RollupDayKey.key(user: userRowID, type: typeCode, day: days.lowerBound)),
                            .integer(try RollupDayKey.key(user: userRowID, type: typeCode, day: days.upperBound)), .text(mask)])
        var rows: [(day: Int64, body: [UInt8], detail: [UInt8]?)] = []
        try statement.forEachRow { row in
            let day = RollupDayKey.day(of: try row.int64(DayRowColumn.key))
            let detail = row.blobIfPresent(DayRowColumn.detail)
            guard (detail != nil) == wanted.contains(day) else {
                throw StoreError.invalid("statistics rollup of day \(day) has no detail")
            }
            rows.append((day, try row.blob(DayRowColumn.body), detail))
        }
        return rows
    }

    private static func priority(_ db: Database, userRowID: Int64, typeCode: Int64, style: AggregationStyle) throws -> SourcePriority {
        // Discrete rows hold samples, not merges: the order matters only when answering.
        guard style == .cumulative else { return SourcePriority([]) }
        return SourcePriority(try SQLiteHealthStore.effectiveSourcePriority(db, userRowID: userRowID, typeCode: typeCode).map(\.source))
    }

    private static func longestDuration(_ db: Database, userRowID: Int64, typeCode: Int64) throws -> Int64 {
        try db.firstInt64("SELECT max_duration_ms FROM type_extents WHERE user_id = ? AND type_id = ?",
                          [.integer(userRowID), .integer(typeCode)]) ?? 0
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
            if let sample = try SQLiteHealthStore.indexable(row) { samples.append(sample) }
        }
        return samples
    }

    private static func bumpVersion(_ db: Database, userRowID: Int64, typeCode: Int64) throws {
        try db.execute("""
            INSERT INTO statistics_series (user_id, type_id, version) VALUES (?, ?, 1)
            ON CONFLICT(user_id, type_id) DO UPDATE SET version = version + 1
            """, [.integer(userRowID), .integer(typeCode)])
    }
}

/// A day's rollup as the clustered tables give it: its key, its body and (when read) its detail.
enum DayRowColumn: Int, TableColumns {
    case key, body, detail

    static let table = "statistics_days"
}

/// A series: `SELECT DISTINCT user_id, type_id`.
enum SeriesColumn: Int, TableColumns {
    case userID, typeID

    static let table = "statistics_days"

    var name: String {
        switch self {
        case .userID: "user_id"
        case .typeID: "type_id"
        }
    }
}
