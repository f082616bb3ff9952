import HealthModel
import HealthStore
import PostgreSQL
import Statistics

// Statistics on PostgreSQL: the rollups kept in every sample write's transaction and read through
// the statistics cache every node checks against the database (see `PostgresRollups`).

extension PostgresHealthStore {
    /// The statistics rollups' share of a sample write (the samples saved or deleted), in the
    /// writing transaction, after the samples and their `source_types` rows.
    func rollupsChanged(_ touches: [RollupTouch], userRowID: Int64, _ connection: PostgresConnection) throws {
        var changes = RollupDayChanges()
        for touch in touches {
            // Source ids are numbered per user from 1; one past Int32 is a sample the statistics cannot hold.
            guard let value = touch.value, let source = Int32(exactly: touch.sourceRowID) else { continue }
            let sample = StatisticsSample(id: touch.seq, start: touch.start, end: touch.end, value: value, source: source)
            if touch.deleted {
                changes.noteDeleted(typeCode: touch.typeCode, style: rollupStyles[touch.typeCode], sample: sample)
            } else {
                changes.noteSaved(typeCode: touch.typeCode, style: rollupStyles[touch.typeCode], sample: sample)
            }
        }
        try rollupsChanged(changes, userRowID: userRowID, connection)
    }

    /// `rollupsChanged` for changes already noted (a batch notes its samples before the lock).
    func rollupsChanged(_ changes: RollupDayChanges, userRowID: Int64, _ connection: PostgresConnection) throws {
        guard !changes.isEmpty else { return }
        try PostgresRollups.apply(changes, userRowID: userRowID, on: connection)
    }

    /// Rebuilds a series' rollups after its source order changed, in that change's transaction.
    func rollupsRebuild(userRowID: Int64, typeCode: Int64, _ connection: PostgresConnection) throws {
        guard let style = rollupStyles[typeCode] else { return }
        try PostgresRollups.rebuild(userRowID: userRowID, typeCode: typeCode, style: style, on: connection)
    }

    /// Reflects every write committed before the call, on any node: the cached decoding is used only
    /// while the series' version, read in the query's snapshot, is the one it was decoded at.
    public func statistics(userRowID: Int64, type: HealthType, buckets: [CalendarBucket], options: StatisticsOptions)
        throws -> StatisticsAnswer {
        guard let style = AggregationStyle(type), let typeCode = typeCode(for: type.id) else {
            throw StoreError.invalid("statistics need a quantity type; \(type.id) is a \(type.kind.rawValue) type")
        }
        return try PostgresRollups.statistics(userRowID: userRowID, typeCode: typeCode, style: style, buckets: buckets,
                                              options: options, cache: statisticsIndexes, pool: pool)
    }

    /// Bytes held by this node's cached statistics series.
    public var statisticsIndexMemoryBytes: Int { statisticsIndexes.memoryBytes }

    /// What this node's statistics series cache did since the store opened.
    public var statisticsCacheFigures: StatisticsCacheFigures { statisticsIndexes.figures }

    /// Drops this node's cached series (the next query reads its rollup rows): for benchmarks of the cold path.
    public func dropStatisticsIndexes() { statisticsIndexes.removeAll() }
}
