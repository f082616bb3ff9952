import HealthModel
import HealthStore
import PostgreSQL
import Statistics

// Statistics on PostgreSQL, the reading side: what a query that cannot answer from this node's
// memory reads, in as few round trips as possible. On a busy machine every round trip to the
// database costs two wake-ups (the server process, then this thread) more than its work, so a
// series not in memory is read with one statement, not one per table inside a transaction.

extension PostgresRollups {
    /// What a query over `buckets` reads of a series: the UTC days they touch, the days whose
    /// detail a bucket edge inside a 15-minute slot needs (cumulative), and the 15-minute slots
    /// whose samples it needs (discrete); the same rules `StatisticsIndexCache.withSeries` plans by.
    struct SeriesRequest {
        let days: ClosedRange<Int64>
        let detailDays: Set<Int64>
        let slots: [Range<Int64>]

        init(buckets: [CalendarBucket], style: AggregationStyle) {
            let start = buckets.map(\.start).min() ?? 0
            days = DayRollup.days(from: start, to: max(buckets.map(\.end).max() ?? start, start + 1))
            detailDays = DayRollup.detailDays(of: buckets, style: style)
            slots = DayRollup.instants(ofSlots: DayRollup.edgeSlots(of: buckets, style: style))
        }
    }

    /// A series read with one statement, outside any transaction: a statement sees one snapshot,
    /// so the version, the source order, the app names, the day rows and the edge samples agree,
    /// as they do in the REPEATABLE READ transaction this replaces for the common case. When the
    /// cache's plan asks for more than `request` (more days, because this node still holds an
    /// older decoding with the same version), it throws `SnapshotNeeded` and the caller reads in
    /// a transaction instead.
    struct SeriesStatement: RollupSnapshotReading {
        let request: SeriesRequest
        private let version: Int64
        private let priority: SourcePriority
        private let names: [Int32: String]
        private let rows: [RollupRow]
        private let samples: [StatisticsSample]

        /// One statement in parts (`kind`): 0 the version, 1 every source of the user with its rank
        /// in the effective order (NULL for a source that never saved the type and is not listed),
        /// 2 the day rows (detail only for the days asked), and with `edgeSamples` 3 the samples of
        /// the cut slots. Columns (`Column`): kind, a, b, c, v, d, t, body, detail; a sample is
        /// seq, start, end, value, source in a, b, c, v, d.
        ///
        /// The samples part is a statement of its own text, sent only when a bucket edge cuts a
        /// slot (rare: every zone's midnights and hours fall on slot boundaries): its join on the
        /// slot arrays makes PostgreSQL plan every execution afresh (its generic plan's estimate
        /// is far above the custom plans'), which cost more CPU than executing the statement.
        /// Without it the prepared statement keeps its generic plan.
        static func sql(edgeSamples: Bool) -> String {
            edgeSamples ? rowsAndSamples : rowsOnly
        }

        /// The statement's columns (see `sql`): what `a` to `t` hold depends on `kind`.
        enum Column: Int, TableColumns {
            case kind, a, b, c, v, d, t, body, detail

            static let table = "statistics series read"
        }

        private static let rowsOnly = """
            WITH \(PostgresSourcePriority.rankedSources)
            SELECT 0 AS kind, version AS a, NULL::bigint AS b, NULL::bigint AS c, NULL::float8 AS v, NULL::bigint AS d,
                   NULL::text AS t, NULL::bytea AS body, NULL::bytea AS detail
            FROM statistics_series WHERE user_id = $1 AND type_id = $2
            UNION ALL
            SELECT 1, s.id, r.rank, NULL, NULL, NULL, s.app, NULL, NULL
            FROM sources s LEFT JOIN ranked r ON r.id = s.id WHERE s.user_id = $1
            UNION ALL
            SELECT 2, day, NULL, NULL, NULL, NULL, NULL, body, CASE WHEN day = ANY($5::bigint[]) THEN detail END
            FROM statistics_days WHERE user_id = $1 AND type_id = $2 AND day BETWEEN $3 AND $4
            """

        private static let rowsAndSamples = rowsOnly + """

            UNION ALL
            SELECT 3, s.seq, s.start_ms, s.end_ms, s.value, s.source_id, NULL, NULL, NULL
            FROM unnest($6::bigint[], $7::bigint[]) AS r(low, high)
            JOIN samples s ON s.user_id = $1 AND s.type_id = $2 AND s.start_ms >= r.low AND s.start_ms < r.high
                AND s.value IS NOT NULL
            """

        init(connection: PostgresConnection, userRowID: Int64, typeCode: Int64, request: SeriesRequest) throws {
            self.request = request
            var parameters: [PostgresValue] = [
                .int64(userRowID), .int64(typeCode), .int64(request.days.lowerBound), .int64(request.days.upperBound),
                PostgresArray.bigints(request.detailDays.sorted()),
            ]
            if !request.slots.isEmpty {
                parameters += [PostgresArray.bigints(request.slots.map(\.lowerBound)), PostgresArray.bigints(request.slots.map(\.upperBound))]
            }
            let result = try PostgresSourcePriority.readingList { () throws(PostgresError) in
                try connection.query(Self.sql(edgeSamples: !request.slots.isEmpty), parameters)
            }
            var version: Int64 = 0  // no row before the series' first write
            var ranked: [(rank: Int64, source: Int32)] = []
            var names: [Int32: String] = [:]
            var rows: [RollupRow] = []
            var samples: [StatisticsSample] = []
            rows.reserveCapacity(Int(clamping: request.days.upperBound - request.days.lowerBound + 1))
            for index in 0..<result.rowCount {
                let row = result[index]
                switch try row.int64(Column.kind) {
                case 0:
                    version = try row.int64(Column.a)
                case 1:
                    // Source ids past Int32 hold no statistics (see `statisticsSample`).
                    guard let id = Int32(exactly: try row.int64(Column.a)) else { continue }
                    names[id] = try row.string(Column.t)
                    if let rank = try row.int64IfPresent(Column.b) { ranked.append((rank, id)) }
                case 2:
                    let day = try row.int64(Column.a)
                    let detail = try row.bytesIfPresent(Column.detail)
                    if detail == nil, request.detailDays.contains(day) {
                        throw StoreError.invalid("statistics rollup of day \(day) has no detail")
                    }
                    rows.append((day, try row.bytes(Column.body), detail))
                default:
                    if let sample = statisticsSample(seq: try row.int64(Column.a), start: try row.int64(Column.b),
                                                     end: try row.int64(Column.c), value: try row.double(Column.v),
                                                     source: try row.int64(Column.d)) {
                        samples.append(sample)
                    }
                }
            }
            // UNION ALL promises no order: the rows and the ranks are put in order here.
            rows.sort { $0.day < $1.day }
            self.version = version
            self.priority = SourcePriority(ranked.sorted { $0.rank < $1.rank }.map(\.source))
            self.names = names
            self.rows = rows
            self.samples = samples
        }

        func rollupVersion() throws -> Int64 { version }

        func rollupRows(days: ClosedRange<Int64>, detailDays: Set<Int64>) throws -> [RollupRow] {
            guard request.days.contains(days.lowerBound), request.days.contains(days.upperBound),
                  detailDays.isSubset(of: request.detailDays) else { throw VersionProbe.SnapshotNeeded() }
            guard days != request.days || detailDays != request.detailDays else { return rows }
            return rows.filter { days.contains($0.day) }.map { ($0.day, $0.body, detailDays.contains($0.day) ? $0.detail : nil) }
        }

        func statisticsSamples(from: Int64, to: Int64) throws -> [StatisticsSample] {
            guard request.slots.contains(where: { $0.lowerBound <= from && to <= $0.upperBound }) else {
                throw VersionProbe.SnapshotNeeded()
            }
            return samples.filter { $0.start >= from && $0.start < to }
        }

        func sourcePriority() throws -> SourcePriority { priority }

        func appNames() throws -> [Int32: String] { names }
    }
}
