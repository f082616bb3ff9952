import HealthModel
import Statistics

/// The figures of one interval as a token sees them: merged, and per app when asked.
public struct IntervalFigures: Sendable {
    public var figures: StatisticsFigures
    public var sources: [(app: String, figures: StatisticsFigures)]

    public init(figures: StatisticsFigures, sources: [(app: String, figures: StatisticsFigures)]) {
        self.figures = figures
        self.sources = sources
    }
}

extension HealthStore {
    // MARK: Statistics as a token sees them

    /// HKStatisticsQuery / HKStatisticsCollectionQuery answers, one per bucket, with read privacy
    /// applied here rather than by each route: without read permission for the type, the figures are
    /// those of the app's own samples only (its own source's unmerged figures), as if no other data
    /// existed. Throws `StatisticsError` for a range or bucket the engine refuses.
    public func statistics(_ type: HealthType, buckets: [CalendarBucket], options: StatisticsOptions,
                           for app: AppAuthorization) throws -> [IntervalFigures] {
        let mayRead = app.access.mayRead(type.id)
        // The own source's figures come from the per-source split, so ask for it even when the
        // caller did not.
        let internalOptions = mayRead ? options : options.union(.separateBySource)
        let ownSource = Int32(exactly: app.sourceRowID)
        return try withStatisticsIndex(userRowID: app.userRowID, type: type, buckets: buckets) { snapshot in
            let results = try snapshot.index.statisticsCollection(buckets: buckets, options: internalOptions)
            return results.map { result in
                if mayRead {
                    return IntervalFigures(figures: result.figures, sources: result.sources.map { source in
                        (app: snapshot.appNames[source.source] ?? "unknown", figures: source.figures)
                    })
                }
                let own = result.sources.first(where: { $0.source == ownSource })?.figures ?? StatisticsFigures()
                let sources = own.isEmpty || !options.contains(.separateBySource) ? [] : [(app: app.appName, figures: own)]
                return IntervalFigures(figures: own, sources: sources)
            }
        }
    }

    /// The effective source order for a type as the token sees it: without read permission the app
    /// learns of no other app, so the list holds at most itself.
    public func sourcePriority(type: HealthType, for app: AppAuthorization) throws -> [String] {
        let order = try sourcePriority(userRowID: app.userRowID, type: type)
        return app.access.mayRead(type.id) ? order : order.filter { $0 == app.appName }
    }
}
