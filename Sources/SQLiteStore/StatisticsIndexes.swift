import HealthStore
import HealthModel
import JSON
import SQLite
import Statistics

extension SQLiteHealthStore {
    // MARK: Statistics indexes

    /// Runs `body` on the user's series for a quantity type, decoded from the rollup rows of the
    /// UTC days the buckets touch, as of one snapshot: a query reads one row per day (and, for a
    /// discrete type, the samples of 15-minute slots a bucket edge cuts), never all samples. The
    /// decoding is cached while the series' version stays the same. Another (user, type) never
    /// waits for this one. `body` must ask only about these buckets, and about each source apart
    /// only with `perSource`.
    public func withStatisticsIndex<Result: Sendable>(userRowID: Int64, type: HealthType, buckets: [CalendarBucket],
                                                      perSource: Bool = true,
                                                      _ body: (StatisticsSnapshot) throws -> Result) throws -> Result {
        guard let style = AggregationStyle(type), let typeCode = typeCode(for: type.id) else {
            throw StoreError.invalid("statistics need a quantity type; \(type.id) is a \(type.kind.rawValue) type")
        }
        let key = StatisticsIndexCache.Key(userRowID: userRowID, typeCode: typeCode)
        return try statisticsIndexes.withSeries(key, style: style, buckets: buckets, perSource: perSource, inSnapshot: { plan in
            try pool.read { db in
                try plan(SQLiteRollupSnapshot(db: db, userRowID: userRowID, typeCode: typeCode))
            }
        }, body)
    }

    /// `HealthDataStore.statistics`: the collection from the cached series.
    public func statistics(userRowID: Int64, type: HealthType, buckets: [CalendarBucket], options: StatisticsOptions)
        throws -> StatisticsAnswer {
        try withStatisticsIndex(userRowID: userRowID, type: type, buckets: buckets,
                                perSource: options.contains(.separateBySource)) { snapshot in
            StatisticsAnswer(buckets: try snapshot.index.statisticsCollection(buckets: buckets, options: options),
                             appNames: snapshot.appNames)
        }
    }

    /// One series as `StatisticsIndexCache` reads it, inside one reader's snapshot.
    private struct SQLiteRollupSnapshot: RollupSnapshotReading {
        let db: Database
        let userRowID: Int64
        let typeCode: Int64

        func rollupVersion() throws -> Int64 {
            try StatisticsRollups.version(db, userRowID: userRowID, typeCode: typeCode)
        }

        func rollupRows(days: ClosedRange<Int64>, detailDays: Set<Int64>) throws -> [RollupRow] {
            try StatisticsRollups.rows(db, userRowID: userRowID, typeCode: typeCode, days: days, detailDays: detailDays)
        }

        func statisticsSamples(from: Int64, to: Int64) throws -> [StatisticsSample] {
            try StatisticsRollups.samples(db, userRowID: userRowID, typeCode: typeCode, from: from, to: to)
        }

        func sourcePriority() throws -> SourcePriority {
            SourcePriority(try SQLiteHealthStore.effectiveSourcePriority(db, userRowID: userRowID, typeCode: typeCode).map(\.source))
        }

        func appNames() throws -> [Int32: String] { try SQLiteHealthStore.appNames(db, userRowID: userRowID) }
    }

    /// Bytes held by all cached statistics series.
    public var statisticsIndexMemoryBytes: Int { statisticsIndexes.memoryBytes }

    /// Cached series dropped to stay within the memory budget since the store opened.
    public var statisticsIndexEvictions: Int { statisticsIndexes.evictions }

    /// What the statistics series cache did since the store opened.
    public var statisticsCacheFigures: StatisticsCacheFigures { statisticsIndexes.figures }

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

    /// A row (`StatisticsSampleColumn`) as the indexes take it. Samples the indexes cannot hold
    /// (longer than `StatisticsSample.maximumDuration`, possible only for discrete types without a
    /// maximum) are left out, the same way on insert and on delete.
    static func indexable(_ row: Row) throws(RowDecodingError) -> StatisticsSample? {
        guard let source = Int32(exactly: try row.int64(StatisticsSampleColumn.source)) else { return nil }
        let sample = StatisticsSample(id: try row.int64(StatisticsSampleColumn.seq), start: try row.int64(StatisticsSampleColumn.start),
                                      end: try row.int64(StatisticsSampleColumn.end), value: try row.double(StatisticsSampleColumn.value),
                                      source: source)
        do { try sample.validate() } catch { return nil }
        return sample
    }

    static func appNames(_ db: Database, userRowID: Int64) throws -> [Int32: String] {
        var names: [Int32: String] = [:]
        let statement = try db.cachedStatement("SELECT id, app FROM sources WHERE user_id = ?")
        try statement.bind([.integer(userRowID)])
        try statement.forEachRow { row in
            if let id = Int32(exactly: try row.int64(SourceColumn.id)) { names[id] = try row.string(SourceColumn.app) }
        }
        return names
    }

    // MARK: Source priority

    /// The user's effective source order for a type: the apps of their chosen order first (as listed),
    /// then every other source that saved the type, the one that saved it first ranking first.
    static func effectiveSourcePriority(_ db: Database, userRowID: Int64, typeCode: Int64) throws -> [(source: Int32, app: String)] {
        var order: [(source: Int32, app: String)] = []
        var listed = Set<Int32>()
        if let text = try db.firstString("SELECT apps FROM source_priorities WHERE user_id = ? AND type_id = ?",
                                         [.integer(userRowID), .integer(typeCode)]) {
            let names = try StoredForms.decodeAppList(text)
            let statement = try db.cachedStatement("SELECT id FROM sources WHERE user_id = ? AND app = ?")
            for name in names {
                try statement.bind([.integer(userRowID), .text(name)])
                guard let id = try statement.firstInt64().flatMap({ Int32(exactly: $0) }),
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
            guard let id = Int32(exactly: try row.int64(SourceColumn.id)), !listed.contains(id) else { return }
            order.append((id, try row.string(SourceColumn.app)))
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
                """, [.integer(userRowID), .integer(typeCode), .text(StoredForms.encodeAppList(apps))])
            // A new order changes which source wins every overlap: every day of the series is rebuilt.
            if let style = rollupStyles[typeCode] {
                try StatisticsRollups.rebuild(db, userRowID: userRowID, typeCode: typeCode, style: style)
            }
        }
    }

}

