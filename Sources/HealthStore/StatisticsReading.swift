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

/// The reads a token's routes make, with read privacy (`AccessPolicy`) decided here, once, above
/// the backends: a sample read hands the backend the `ReadVisibility` made from the token, and the
/// statistics, source order and characteristics are narrowed here on top of the unscoped
/// `userRowID:` primitives (which are otherwise for the admin's paths: importers, the seeder,
/// admin routes). A route asks for what the token may see and never filters an answer itself.
extension HealthDataStore {
    /// Samples of one type visible to `app`: all of the user's when it may read the type, otherwise
    /// only its own (HealthKit's read privacy: nothing says other data exists).
    public func samples(_ query: SampleQuery, for app: AppAuthorization, userExternalID: String) throws -> SamplePage {
        try samples(query, visibility: ReadVisibility(app: app, userExternalID: userExternalID))
    }

    /// One sample by uuid, if the user has it and the app may see it.
    public func sample(_ uuid: HealthUUID, for app: AppAuthorization, userExternalID: String) throws -> StoredSample? {
        try sample(uuid, visibility: ReadVisibility(app: app, userExternalID: userExternalID))
    }

    /// The apps (with their devices) that saved a type; without read permission only the calling
    /// app itself can appear.
    public func sources(type: String, for app: AppAuthorization) throws -> [(app: String, devices: [SampleDevice])] {
        try sources(type: type, visibility: ReadVisibility(app: app))
    }

    /// Changes after `request.after` as `app` sees them.
    public func changes(_ request: ChangeRequest, for app: AppAuthorization, userExternalID: String) throws -> ChangePage {
        try changes(request, visibility: ReadVisibility(app: app, userExternalID: userExternalID))
    }

    /// HKStatisticsQuery / HKStatisticsCollectionQuery answers, one per bucket. Without read
    /// permission for the type, the figures are those of the app's own samples only (its own
    /// source's unmerged figures), as if no other data existed. Throws `StatisticsError` for a range
    /// or bucket the engine refuses.
    public func statistics(_ type: HealthType, buckets: [CalendarBucket], options: StatisticsOptions,
                           for app: AppAuthorization) throws -> [IntervalFigures] {
        let mayRead = app.access.mayRead(type.id)
        // The own source's figures come from the per-source split, so ask for it even when the
        // caller did not.
        let internalOptions = mayRead ? options : options.union(.separateBySource)
        let ownSource = Int32(exactly: app.sourceRowID)
        let answer = try statistics(userRowID: app.userRowID, type: type, buckets: buckets, options: internalOptions)
        return answer.buckets.map { result in
            if mayRead {
                return IntervalFigures(figures: result.figures, sources: result.sources.map { source in
                    (app: answer.appNames[source.source] ?? "unknown", figures: source.figures)
                })
            }
            let own = result.sources.first(where: { $0.source == ownSource })?.figures ?? StatisticsFigures()
            let sources = own.isEmpty || !options.contains(.separateBySource) ? [] : [(app: app.appName, figures: own)]
            return IntervalFigures(figures: own, sources: sources)
        }
    }

    /// The effective source order for a type as the token sees it: without read permission the app
    /// learns of no other app, so the list holds at most itself.
    public func sourcePriority(type: HealthType, for app: AppAuthorization) throws -> [String] {
        let order = try sourcePriority(userRowID: app.userRowID, type: type)
        return app.access.mayRead(type.id) ? order : order.filter { $0 == app.appName }
    }

    /// The user's characteristics the token may read: a characteristic is readable like any type,
    /// and one it may not read is simply absent (never an error).
    public func characteristics(for app: AppAuthorization) throws -> [(String, String)] {
        try characteristics(userRowID: app.userRowID).filter { app.access.mayRead($0.0) }
    }

    /// Milliseconds of [start, end) covered by samples of `type` with a positive value, counting
    /// only the app's own samples when it may not read the type (the time behind a summary's pace).
    public func coveredDuration(type: HealthType, start: Int64, end: Int64, for app: AppAuthorization) throws -> Int64 {
        try coveredDuration(userRowID: app.userRowID, type: type, start: start, end: end,
                            onlySource: ReadVisibility(app: app).sources(of: type.id).onlySource)
    }

    /// One export page of `type` as `scope` sees it: a token sees only its own samples of a type it
    /// may not read; the admin's whole-user export sees everything.
    public func exportPage(type: String, scope: ReadScope, after: SampleCursor?,
                           limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)] {
        try exportPage(userRowID: scope.userRowID, userExternalID: scope.userExternalID, type: type,
                       onlySource: scope.visibility.sources(of: type).onlySource, after: after, limit: limit)
    }
}
