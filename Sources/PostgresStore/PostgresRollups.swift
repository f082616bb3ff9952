import HealthModel
import HealthStore
import PostgreSQL
import Statistics

/// The statistics rollups in PostgreSQL (`statistics_days`, `statistics_series`): the same rows as
/// the SQLite store's, written by the same rules (`DayRollup.refresh`, `DayRollup.rows`) and read
/// through the same cache (`StatisticsIndexCache.withSeries`); only the SQL is PostgreSQL's.
///
/// Across nodes: the rows are rewritten inside the transaction that changes the samples or the
/// source order, and each such transaction bumps the series' version there. A node answers from its
/// in-memory decoding only after reading that version in the query's own snapshot, so whatever
/// another node committed before the query began is in the answer.
public enum PostgresRollups {
    /// Brings the rollup rows of every day `changes` noted up to date (`DayRollup.maintain`, the
    /// rules the SQLite store follows too), inside the caller's open write transaction: the one that
    /// saved or deleted the samples, after their `source_types` and `type_extents` rows, so a source
    /// saving a type for the first time has its place in the default order and a long sample saved
    /// now reaches back as far as it must.
    ///
    /// The touched series are locked (their versions bumped) first, in one statement, before any
    /// row or sample is read back: a concurrent transaction changing the same series waits for this
    /// one and then reads what it wrote, so neither overwrites a day with a row that misses the
    /// other's samples. Series are taken in ascending type order, the same in every transaction.
    /// Then one statement reads the current rows of every touched day, saves are folded into them,
    /// only days the rules send back to their samples are read from `samples`, and one statement
    /// writes every changed row (`PostgresRollupRows`). A batch of new samples costs three
    /// statements, whatever its size.
    public static func apply(_ changes: RollupDayChanges, userRowID: Int64, on connection: PostgresConnection) throws {
        let touched = changes.series
        guard !touched.isEmpty else { return }
        try lockSeries(connection, userRowID: userRowID, typeCodes: touched.map(\.typeCode))
        var current: [Int64: [Int64: DayRollup.Row]]?
        var rows = PostgresRollupRows()
        for series in touched {
            let typeCode = series.typeCode
            try DayRollup.maintain(series, rows: { _ in
                // The first series asking reads the rows of every touched day of every series.
                if current == nil { current = try currentRows(connection, userRowID: userRowID, series: touched) }
                return current?[typeCode] ?? [:]
            }, context: {
                let priority = series.style == .cumulative
                    ? try sourcePriority(connection, userRowID: userRowID, typeCode: typeCode) : SourcePriority([])
                let committed = try connection.scalarInt64("SELECT max_duration_ms FROM type_extents WHERE user_id = $1 AND type_id = $2",
                                                           [.int64(userRowID), .int64(typeCode)]) ?? 0
                return (priority, max(committed, series.longestDuration, 0))
            }, samples: { from, to in
                try samples(connection, userRowID: userRowID, typeCode: typeCode, from: from, to: to)
            }, write: { written in
                for (day, row) in written { rows.append(typeCode: typeCode, day: day, row: row) }
            })
        }
        try rows.write(connection, userRowID: userRowID)
    }

    /// The rows (with their detail) of every day the series touched, by type and day, in one read.
    private static func currentRows(_ connection: PostgresConnection, userRowID: Int64,
                                    series: [RollupSeriesChanges]) throws -> [Int64: [Int64: DayRollup.Row]] {
        var types: [Int64] = []
        var days: [Int64] = []
        for entry in series {
            for day in entry.days {
                types.append(entry.typeCode)
                days.append(day)
            }
        }
        let result = try connection.query("""
            SELECT d.type_id, d.day, d.body, d.detail FROM unnest($2::bigint[], $3::bigint[]) AS w(type_id, day)
            JOIN statistics_days d ON d.user_id = $1 AND d.type_id = w.type_id AND d.day = w.day
            """, [.int64(userRowID), PostgresArray.bigints(types), PostgresArray.bigints(days)])
        enum Column: Int, TableColumns {
            case typeID, day, body, detail
            static let table = "statistics_days"
        }
        var rows: [Int64: [Int64: DayRollup.Row]] = [:]
        for index in 0..<result.rowCount {
            let row = result[index]
            rows[try row.int64(Column.typeID), default: [:]][try row.int64(Column.day)] =
                (try row.bytes(Column.body), try row.bytesIfPresent(Column.detail))
        }
        return rows
    }

    /// HKStatisticsCollectionQuery over one series, from the rows of the days its buckets touch,
    /// all read in one snapshot; `cache` keeps the decoding while the series' version (read in the
    /// same snapshot) is unchanged. Every read is one statement, so the answer reflects every commit
    /// before it, whichever node made it.
    ///
    /// A warm query costs one round trip: while this node holds the series, its version is read
    /// by a statement of its own, before and outside the series' lock (`withCurrentSeries`), so
    /// the queries of one series (a dashboard many clients poll) run side by side instead of one
    /// round trip after another. A cold one (or a stale one) costs one more: `SeriesStatement`
    /// reads the version, the source order, the app names, the day rows and the edge samples in
    /// one statement. Only when the cache wants more than the buckets need (more days, to keep one
    /// decoding for both) is a REPEATABLE READ transaction opened and each part read on its own.
    public static func statistics(userRowID: Int64, typeCode: Int64, style: AggregationStyle, buckets: [CalendarBucket],
                                  options: StatisticsOptions, cache: StatisticsIndexCache,
                                  pool: PostgresPool) throws -> StatisticsAnswer {
        let key = StatisticsIndexCache.Key(userRowID: userRowID, typeCode: typeCode)
        let perSource = options.contains(.separateBySource)
        func answer(_ snapshot: StatisticsSnapshot) throws -> StatisticsAnswer {
            StatisticsAnswer(buckets: try snapshot.index.statisticsCollection(buckets: buckets, options: options),
                             appNames: snapshot.appNames)
        }
        let resident = cache.isResident(key)
        if resident {
            let current = try pool.withConnection { try version($0, userRowID: userRowID, typeCode: typeCode) }
            if let answered = try cache.withCurrentSeries(key, version: current, style: style, buckets: buckets,
                                                          perSource: perSource, answer) {
                return answered
            }
        }
        return try cache.withSeries(key, style: style, buckets: buckets, perSource: perSource, inSnapshot: { plan in
            try pool.withConnection { connection in
                // Checked just before unless the series was not resident then: another query may have loaded it meanwhile.
                if !resident, cache.isResident(key) {
                    do {
                        return try plan(VersionProbe(connection: connection, userRowID: userRowID, typeCode: typeCode))
                    } catch is VersionProbe.SnapshotNeeded {}
                }
                do {
                    return try plan(try SeriesStatement(connection: connection, userRowID: userRowID, typeCode: typeCode,
                                                        request: SeriesRequest(buckets: buckets, style: style)))
                } catch is VersionProbe.SnapshotNeeded {}
                return try connection.transaction(.repeatableRead, readOnly: true) { connection in
                    try plan(Snapshot(connection: connection, userRowID: userRowID, typeCode: typeCode))
                }
            }
        }, answer)
    }

    /// Rewrites every row of one series from all its samples, inside the caller's open transaction:
    /// after its source order changed (a new order changes which source wins every overlap).
    public static func rebuild(userRowID: Int64, typeCode: Int64, style: AggregationStyle,
                               on connection: PostgresConnection) throws {
        try lockSeries(connection, userRowID: userRowID, typeCodes: [typeCode])
        let priority = style == .cumulative
            ? try sourcePriority(connection, userRowID: userRowID, typeCode: typeCode) : SourcePriority([])
        try connection.execute("DELETE FROM statistics_days WHERE user_id = $1 AND type_id = $2",
                               [.int64(userRowID), .int64(typeCode)])
        let all = try samples(connection, userRowID: userRowID, typeCode: typeCode, from: Int64.min, to: Int64.max)
        var rows = PostgresRollupRows()
        for (day, row) in DayRollup.rows(of: all, style: style, priority: priority) {
            rows.append(typeCode: typeCode, day: day, row: row)
        }
        try rows.write(connection, userRowID: userRowID)
    }

    /// Bumps the versions of the series `typeCodes` (ascending), taking their row locks until the
    /// transaction ends: what a node's cached decoding of a series is checked against, and what
    /// orders two transactions changing one series.
    private static func lockSeries(_ connection: PostgresConnection, userRowID: Int64, typeCodes: [Int64]) throws {
        try connection.execute("""
            INSERT INTO statistics_series AS s (user_id, type_id, version)
            SELECT $1, t, 1 FROM unnest($2::bigint[]) AS t ORDER BY t
            ON CONFLICT (user_id, type_id) DO UPDATE SET version = s.version + 1
            """, [.int64(userRowID), PostgresArray.bigints(typeCodes)])
    }

    /// The series' samples starting in [from, to), as the statistics take them (see `statisticsSample`).
    static func samples(_ connection: PostgresConnection, userRowID: Int64, typeCode: Int64,
                        from: Int64, to: Int64) throws -> [StatisticsSample] {
        let result = try connection.query("""
            SELECT seq, start_ms, end_ms, value, source_id FROM samples
            WHERE user_id = $1 AND type_id = $2 AND start_ms >= $3 AND start_ms < $4 AND value IS NOT NULL
            """, [.int64(userRowID), .int64(typeCode), .int64(from), .int64(to)])
        var samples: [StatisticsSample] = []
        samples.reserveCapacity(result.rowCount)
        for index in 0..<result.rowCount {
            if let sample = try statisticsSample(result[index]) { samples.append(sample) }
        }
        return samples
    }

    /// A row (`StatisticsSampleColumn`) as the statistics take it; nil for a sample they cannot
    /// hold (see `statisticsSample(seq:start:end:value:source:)`).
    static func statisticsSample(_ row: PostgresRow) throws -> StatisticsSample? {
        try statisticsSample(seq: row.int64(StatisticsSampleColumn.seq), start: row.int64(StatisticsSampleColumn.start),
                             end: row.int64(StatisticsSampleColumn.end), value: row.double(StatisticsSampleColumn.value),
                             source: row.int64(StatisticsSampleColumn.source))
    }

    /// A sample as the statistics take it; nil for one they cannot hold (see
    /// `StatisticsSample.validate`), left out the same way on save and delete.
    static func statisticsSample(seq: Int64, start: Int64, end: Int64, value: Double, source: Int64) -> StatisticsSample? {
        guard let source = Int32(exactly: source) else { return nil }
        let sample = StatisticsSample(id: seq, start: start, end: end, value: value, source: source)
        do { try sample.validate() } catch { return nil }
        return sample
    }

    /// The version a query's snapshot sees (0 before the series' first row).
    static func version(_ connection: PostgresConnection, userRowID: Int64, typeCode: Int64) throws -> Int64 {
        try connection.scalarInt64("SELECT version FROM statistics_series WHERE user_id = $1 AND type_id = $2",
                                   [.int64(userRowID), .int64(typeCode)]) ?? 0
    }

    /// The rows of `days`, ascending, with their detail for `detailDays` only: one statement, in
    /// which the server reads (de-TOASTs) and sends the detail of those days alone.
    static func rows(_ connection: PostgresConnection, userRowID: Int64, typeCode: Int64, days: ClosedRange<Int64>,
                     detailDays: Set<Int64>) throws -> [RollupRow] {
        enum Column: Int, TableColumns {
            case day, body, detail
            static let table = "statistics_days"
        }
        let result = try connection.query("""
            SELECT day, body, CASE WHEN day = ANY($5::bigint[]) THEN detail END FROM statistics_days
            WHERE user_id = $1 AND type_id = $2 AND day BETWEEN $3 AND $4 ORDER BY day
            """, [.int64(userRowID), .int64(typeCode), .int64(days.lowerBound), .int64(days.upperBound),
                  PostgresArray.bigints(detailDays.sorted())])
        var rows: [RollupRow] = []
        rows.reserveCapacity(result.rowCount)
        for index in 0..<result.rowCount {
            let row = result[index]
            let day = try row.int64(Column.day)
            let detail = try row.bytesIfPresent(Column.detail)
            if detail == nil, detailDays.contains(day) {
                throw StoreError.invalid("statistics rollup of day \(day) has no detail")
            }
            rows.append((day, try row.bytes(Column.body), detail))
        }
        return rows
    }

    /// The first step of a warm query, outside any transaction: reads the version alone, and asks
    /// for a snapshot (`SnapshotNeeded`) as soon as the plan wants anything more.
    struct VersionProbe: RollupSnapshotReading {
        struct SnapshotNeeded: Error {}

        let connection: PostgresConnection
        let userRowID: Int64
        let typeCode: Int64

        func rollupVersion() throws -> Int64 { try version(connection, userRowID: userRowID, typeCode: typeCode) }
        func rollupRows(days: ClosedRange<Int64>, detailDays: Set<Int64>) throws -> [RollupRow] { throw SnapshotNeeded() }
        func statisticsSamples(from: Int64, to: Int64) throws -> [StatisticsSample] { throw SnapshotNeeded() }
        func sourcePriority() throws -> SourcePriority { throw SnapshotNeeded() }
        func appNames() throws -> [Int32: String] { throw SnapshotNeeded() }
    }

    /// One series as `StatisticsIndexCache` reads it, inside one REPEATABLE READ snapshot.
    struct Snapshot: RollupSnapshotReading {
        let connection: PostgresConnection
        let userRowID: Int64
        let typeCode: Int64

        func rollupVersion() throws -> Int64 { try version(connection, userRowID: userRowID, typeCode: typeCode) }

        func rollupRows(days: ClosedRange<Int64>, detailDays: Set<Int64>) throws -> [RollupRow] {
            try rows(connection, userRowID: userRowID, typeCode: typeCode, days: days, detailDays: detailDays)
        }

        func statisticsSamples(from: Int64, to: Int64) throws -> [StatisticsSample] {
            try samples(connection, userRowID: userRowID, typeCode: typeCode, from: from, to: to)
        }

        func sourcePriority() throws -> SourcePriority {
            try PostgresRollups.sourcePriority(connection, userRowID: userRowID, typeCode: typeCode)
        }

        func appNames() throws -> [Int32: String] {
            let result = try connection.query("SELECT id, app FROM sources WHERE user_id = $1", [.int64(userRowID)])
            var names: [Int32: String] = [:]
            for index in 0..<result.rowCount {
                let row = result[index]
                if let id = Int32(exactly: try row.int64(SourceColumn.id)) { names[id] = try row.string(SourceColumn.app) }
            }
            return names
        }
    }

    /// The user's effective source order for a type, as source ids.
    static func sourcePriority(_ connection: PostgresConnection, userRowID: Int64, typeCode: Int64) throws -> SourcePriority {
        SourcePriority(try PostgresSourcePriority.effective(connection, userRowID: userRowID, typeCode: typeCode).map(\.source))
    }
}

/// The user's effective source order for a type, as the statistics merge by it: the apps of their
/// chosen order (`source_priorities`) first, as listed (unknown apps skipped, repeats counted once),
/// then every other source that saved the type, the one that saved it first ranking first.
enum PostgresSourcePriority {
    /// Common table expressions ending in `ranked(id, rank)`: each source id of the order, ranked
    /// from 1 ($1 the user, $2 the type). Shared by `effective` and the statistics read
    /// (`PostgresRollups.SeriesStatement`), so both order sources by the same rules.
    static let rankedSources = """
        listed AS (
            SELECT s.id, min(l.position) AS position
            FROM source_priorities p
            CROSS JOIN LATERAL jsonb_array_elements_text(p.apps::jsonb) WITH ORDINALITY AS l(app, position)
            JOIN sources s ON s.user_id = p.user_id AND s.app = l.app
            WHERE p.user_id = $1 AND p.type_id = $2
            GROUP BY s.id
        ), savers AS (
            SELECT source_id AS id, min(first_seq) AS first FROM source_types
            WHERE user_id = $1 AND type_id = $2
            GROUP BY source_id
        ), ranked AS (
            SELECT id, row_number() OVER (ORDER BY listed_first, position, tie) AS rank FROM (
                SELECT id, 0 AS listed_first, position, 0::bigint AS tie FROM listed
                UNION ALL
                SELECT id, 1, first, id FROM savers WHERE id NOT IN (SELECT id FROM listed)
            ) candidates
        )
        """

    /// The order as (source id, app), in one statement.
    static func effective(_ connection: PostgresConnection, userRowID: Int64,
                          typeCode: Int64) throws -> [(source: Int32, app: String)] {
        let result = try readingList { () throws(PostgresError) in try connection.query("""
            WITH \(rankedSources)
            SELECT r.id, s.app FROM ranked r JOIN sources s ON s.user_id = $1 AND s.id = r.id ORDER BY r.rank
            """, [.int64(userRowID), .int64(typeCode)]) }
        var order: [(source: Int32, app: String)] = []
        for index in 0..<result.rowCount {
            let row = result[index]
            guard let id = Int32(exactly: try row.int64(SourceColumn.id)) else { continue }
            order.append((id, try row.string(SourceColumn.app)))
        }
        return order
    }
}

extension PostgresSourcePriority {
    /// Runs a statement that reads `rankedSources`. The server parses the stored list
    /// (`apps::jsonb`); a list that is not a JSON array of app names fails that parse, and is a
    /// damaged row like any other, not a failure of the statement: `RowDecodingError`, as the
    /// SQLite store reports it.
    static func readingList<T>(_ body: () throws(PostgresError) -> T) throws -> T {
        do {
            return try body()
        } catch let error where error.isDamagedJSON {
            throw RowDecodingError(table: "source_priorities", column: "apps", problem: "is not a JSON array of app names")
        }
    }
}

extension PostgresError {
    /// In a statement whose parameters are numbers (and arrays of numbers this store writes),
    /// these states can only come from reading a stored text as JSON: 22P02 (invalid text representation) from the cast, 22023 (a
    /// value of another shape than the function takes, e.g. elements of an object) from
    /// `jsonb_array_elements_text`.
    fileprivate var isDamagedJSON: Bool { sqlState == "22P02" || sqlState == "22023" }
}

/// The rollup rows a transaction changed, across its series, written together: one statement per
/// 1,000 rows (a batch usually changes a few), removals folded into the first.
struct PostgresRollupRows {
    private var kept: [(typeCode: Int64, day: Int64, row: (body: [UInt8], detail: [UInt8]?))] = []
    private var removed: [(typeCode: Int64, day: Int64)] = []

    /// Notes a day's new row, or its removal (nil: no sample shapes the day any more).
    mutating func append(typeCode: Int64, day: Int64, row: DayRollup.Row?) {
        if let row { kept.append((typeCode, day, row)) } else { removed.append((typeCode, day)) }
    }

    /// Rows per statement: 4 parameters each, far below PostgreSQL's 65,535.
    static let chunk = 1_000

    func write(_ connection: PostgresConnection, userRowID: Int64) throws {
        var values: [PostgresValue] = [.int64(userRowID)]
        // A removal and an upsert of the same (type, day) cannot both be noted: a day gets one row or none.
        var prefix = ""
        if !removed.isEmpty {
            values.append(PostgresArray.bigints(removed.map(\.typeCode)))
            values.append(PostgresArray.bigints(removed.map(\.day)))
            prefix = """
                WITH removed AS (
                    DELETE FROM statistics_days d USING unnest($2::bigint[], $3::bigint[]) AS r(type_id, day)
                    WHERE d.user_id = $1 AND d.type_id = r.type_id AND d.day = r.day
                )
                """
            guard !kept.isEmpty else {
                try connection.execute(prefix + " SELECT 1", values)
                return
            }
        }
        var start = 0
        while start < kept.count {
            let part = kept[start..<min(kept.count, start + Self.chunk)]
            var tuples: [String] = []
            tuples.reserveCapacity(part.count)
            for entry in part {
                let first = values.count + 1
                tuples.append("($1, $\(first), $\(first + 1), $\(first + 2), $\(first + 3))")
                values += [.int64(entry.typeCode), .int64(entry.day), .bytes(entry.row.body), PostgresValue(entry.row.detail)]
            }
            let sql = prefix + """
                INSERT INTO statistics_days (user_id, type_id, day, body, detail) VALUES \(tuples.joined(separator: ", "))
                ON CONFLICT (user_id, type_id, day) DO UPDATE SET body = excluded.body, detail = excluded.detail
                """
            // The common shapes (one or two days) stay prepared; others are sent once.
            if part.count <= 2 { _ = try connection.execute(sql, values) } else { _ = try connection.queryOnce(sql, values) }
            prefix = ""
            values = [.int64(userRowID)]
            start += Self.chunk
        }
    }
}

/// Array parameters in PostgreSQL's text form (numbers need no quoting).
enum PostgresArray {
    static func bigints(_ values: some Sequence<Int64>) -> PostgresValue {
        .text("{" + values.map(String.init).joined(separator: ",") + "}")
    }

    /// Doubles exactly (Swift prints the shortest text that reads back to the same bits); nil as NULL.
    static func doubles(_ values: some Sequence<Double?>) -> PostgresValue {
        .text("{" + values.map { value in
            guard let value else { return "NULL" }
            if value.isNaN { return "NaN" }
            if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
            return "\(value)"
        }.joined(separator: ",") + "}")
    }
}
