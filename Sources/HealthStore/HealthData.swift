import HealthModel
import Statistics

/// The one door to health data for code that answers a caller (HealthAPI's routes and services):
/// every read and write goes through a scoped view, `app(_:)` for a token or `person(_:)` for the
/// person themselves (or the admin acting for them), and the view decides access once, here, in
/// the words of `AccessPolicy`. The store behind it is private, so a route cannot reach an
/// unscoped `userRowID:` operation and cannot forget a check.
public final class HealthData: Sendable {
    private let store: any HealthDataStore

    public init(_ store: any HealthDataStore) {
        self.store = store
    }

    /// What `authorization`'s token may read and write.
    public func app(_ authorization: AppAuthorization) -> AppHealthData { AppHealthData(store: store, app: authorization) }

    /// All of `user`'s own data, with no app's narrowing: the person, or the admin acting for them.
    public func person(_ user: User) -> PersonHealthData { PersonHealthData(store: store, user: user) }

    // MARK: The server's own business (no user's samples)

    public var secret: [UInt8] { store.secret }
    public func storedBytes() throws -> Int64 { try store.storedBytes() }
    public var statisticsCacheFigures: StatisticsCacheFigures { store.statisticsCacheFigures }
    public var isSharedByNodes: Bool { store.isSharedByNodes }
    public var streamEventLog: StreamEventLog { store.streamEventLog }
    public func addCommitObserver(_ observer: @escaping @Sendable (CommittedChange) -> Void) { store.addCommitObserver(observer) }
    public func broadcast(_ event: StreamEvent) throws { try store.broadcast(event) }
    @discardableResult
    public func purgeTombstones(deletedBefore cutoff: Int64) throws -> Int { try store.purgeTombstones(deletedBefore: cutoff) }
    public func activeWorkoutSessionCounts() throws -> [Int64: Int] { try store.activeWorkoutSessionCounts() }
    /// Judges new heart rates against a user's running sessions (the zone monitor, after a commit).
    public func advanceWorkoutZones(userRowID: Int64) throws -> [WorkoutZoneChange] { try store.advanceWorkoutZones(userRowID: userRowID) }

    // MARK: Users and authorizations (the admin's, and the token check)

    public func createUser(name: String) throws -> User { try store.createUser(name: name) }
    public func user(idOrName: String) throws -> User? { try store.user(idOrName: idOrName) }
    public func createAuthorization(user: User, app: String, read: Set<String>, share: Set<String>, disclosesRead: Bool)
        throws -> (authorization: AppAuthorization, token: String) {
        try store.createAuthorization(user: user, app: app, read: read, share: share, disclosesRead: disclosesRead)
    }
    public func revokeAuthorization(id: String) throws -> Bool { try store.revokeAuthorization(id: id) }
    public func cachedAuthorization(tokenHash: [UInt8]) -> AppAuthorization? { store.cachedAuthorization(tokenHash: tokenHash) }
    public func authorization(tokenHash: [UInt8]) throws -> AppAuthorization? { try store.authorization(tokenHash: tokenHash) }
    public func addAuthorizationObserver(_ observer: @escaping @Sendable (_ authorizationID: String) -> Void) {
        store.addAuthorizationObserver(observer)
    }
    public func liveAuthorizations(ids: Set<String>) throws -> [String: AppAuthorization] { try store.liveAuthorizations(ids: ids) }

    // MARK: Webhook deliveries (the delivery runner's; pages are read through `app(_:)`)

    public func claimWebhooks(lease: WebhookLease, limit: Int) throws -> [WebhookSubscription] {
        try store.claimWebhooks(lease: lease, limit: limit)
    }
    public func webhook(id: String) throws -> WebhookSubscription? { try store.webhook(id: id) }
    public func renewWebhookLeases(ids: [String], lease: WebhookLease) throws -> Set<String> {
        try store.renewWebhookLeases(ids: ids, lease: lease)
    }
    public func storeWebhookPage(id: String, page: WebhookPendingPage, nextAttemptMs: Int64, lease: WebhookLease) throws -> Bool {
        try store.storeWebhookPage(id: id, page: page, nextAttemptMs: nextAttemptMs, lease: lease)
    }
    public func recordWebhookAttempt(id: String, userRowID: Int64, attempt: WebhookDeliveryAttempt, nextAttemptMs: Int64?,
                                     lease: WebhookLease) throws -> Bool {
        try store.recordWebhookAttempt(id: id, userRowID: userRowID, attempt: attempt, nextAttemptMs: nextAttemptMs, lease: lease)
    }
    public func advanceWebhook(id: String, to anchor: ChangePosition, lease: WebhookLease) throws -> Bool {
        try store.advanceWebhook(id: id, to: anchor, lease: lease)
    }
    public func discardWebhookPage(id: String, lease: WebhookLease) throws -> Bool { try store.discardWebhookPage(id: id, lease: lease) }
    public func disableWebhook(id: String, reason: String, lease: WebhookLease) throws -> Bool {
        try store.disableWebhook(id: id, reason: reason, lease: lease)
    }
    /// A token found revoked while its webhooks ran (a revocation path that did not delete them).
    public func deleteWebhooks(authorizationID: String) throws -> [String] { try store.deleteWebhooks(authorizationID: authorizationID) }
}

/// One app's view of one user's data. Reads see what the token may read (other apps' data of a type
/// it may not read does not exist for it, as in HealthKit); writes of a type it may not share are
/// refused with `SharingDenied` before the store is asked.
public struct AppHealthData: Sendable {
    let store: any HealthDataStore
    public let app: AppAuthorization

    public var access: AccessPolicy { app.access }

    // MARK: Samples

    public func save(_ samples: [HealthSample], completion: @escaping @Sendable (Result<[HealthUUID], any Error>) -> Void) {
        store.save(samples, by: app, completion: completion)
    }

    public func save(_ samples: [HealthSample]) throws -> [HealthUUID] { try store.save(samples, by: app) }

    public func samples(_ query: SampleQuery) throws -> SamplePage { try store.samples(query, for: app, userExternalID: app.userID) }
    public func sample(_ uuid: HealthUUID) throws -> StoredSample? { try store.sample(uuid, for: app, userExternalID: app.userID) }
    public func deleteSample(_ uuid: HealthUUID) throws { try store.deleteSample(uuid, by: app) }
    public func deleteSamples(type: String, start: Int64, end: Int64) throws -> Int {
        try store.deleteSamples(type: type, start: start, end: end, by: app)
    }
    public func sources(type: String) throws -> [(app: String, devices: [SampleDevice])] { try store.sources(type: type, for: app) }

    /// True when the token may save `sample`: its type and, for a correlation, every object's.
    public func mayShare(_ sample: HealthSample) -> Bool {
        access.mayShare(sample.type) && sample.objectTypes.allSatisfy(access.mayShare)
    }

    /// Refuses (`SharingDenied`, a 403) unless the token may share every one of `types`: for a
    /// route whose whole purpose is writing them (the pedometer's steps and distance).
    public func requireShare(_ types: [String], detail: (String) -> String) throws(SharingDenied) {
        for type in types { try access.requireShare(type, detail: detail(type)) }
    }

    /// The samples of `samples` the token may share, and how many of the rest each type had: a
    /// writer that derives samples (the pedometer, an importer) saves the first and reports the second.
    public func shareable(_ samples: [HealthSample]) -> (allowed: [HealthSample], refused: [String: Int]) {
        var allowed: [HealthSample] = []
        var refused: [String: Int] = [:]
        for sample in samples {
            if mayShare(sample) {
                allowed.append(sample)
            } else {
                refused[sample.type, default: 0] += 1
            }
        }
        return (allowed, refused)
    }

    // MARK: Change feed

    public func changes(_ request: ChangeRequest) throws -> ChangePage { try store.changes(request, for: app, userExternalID: app.userID) }
    public func currentChangePosition() throws -> ChangePosition { try store.currentChangePosition(userRowID: app.userRowID) }
    /// The stream events (workout zone changes) after `position` the token may read.
    public func streamEvents(after position: StreamEventPosition) -> (events: [StreamEvent], next: StreamEventPosition) {
        store.streamEventLog.events(after: position, for: app)
    }

    // MARK: Webhooks (the token's own subscriptions only: another token's id does not exist for it)

    /// Stores a subscription that delivers the changes committed from now on.
    public func createWebhook(id: String, url: String, types: [String], secretKey: [UInt8], lease: WebhookLease) throws
        -> WebhookSubscription {
        let subscription = WebhookSubscription(id: id, authorizationID: app.id, userRowID: app.userRowID, url: url, types: types.sorted(),
                                               secretKey: secretKey, createdMs: StoreClock.nowMilliseconds(),
                                               anchor: try store.currentChangePosition(userRowID: app.userRowID))
        try store.createWebhook(subscription, lease: lease)
        return subscription
    }
    public func webhooks() throws -> [WebhookSubscription] { try store.webhooks(authorizationID: app.id) }
    public func deleteWebhook(id: String) throws -> Bool { try store.deleteWebhook(id: id, authorizationID: app.id) }
    /// The subscription's last attempts, newest first; nil when the token has no subscription by that id.
    public func webhookDeliveries(id: String) throws -> [WebhookDeliveryAttempt]? {
        guard let subscription = try store.webhook(id: id), subscription.authorizationID == app.id else { return nil }
        return try store.webhookDeliveries(id: id)
    }

    // MARK: Statistics, characteristics, summaries

    /// HKStatisticsQuery / HKStatisticsCollectionQuery answers, one per bucket. Without read
    /// permission for the type, the figures are those of the app's own samples only (its own
    /// source's unmerged figures), as if no other data existed. Throws `StatisticsError` for a range
    /// or bucket the engine refuses.
    public func statistics(_ type: HealthType, buckets: [CalendarBucket], options: StatisticsOptions) throws -> [IntervalFigures] {
        try store.statistics(type, buckets: buckets, options: options, for: app)
    }

    public func sourcePriority(type: HealthType) throws -> [String] { try store.sourcePriority(type: type, for: app) }
    public func characteristics() throws -> [(String, String)] { try store.characteristics(for: app) }
    public func coveredDuration(type: HealthType, start: Int64, end: Int64) throws -> Int64 {
        try store.coveredDuration(type: type, start: start, end: end, for: app)
    }
    /// The user's activity goals: settings, not samples, readable by any of the user's apps (as
    /// HKActivitySummary carries them).
    public func activityGoals() throws -> ActivityGoals { try store.activityGoals(userRowID: app.userRowID) }
    public func activitySummaries(from first: HealthDay, through last: HealthDay) throws -> [ActivitySummary] {
        try store.activitySummaries(userRowID: app.userRowID, from: first, through: last)
    }

    // MARK: Import and export

    public func exportPage(type: String, after: SampleCursor?, limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)] {
        try store.exportPage(type: type, scope: .app(app), after: after, limit: limit)
    }

    /// One import transaction for the token (Health Auto Export stores a request whole or not at
    /// all): `body` saves batches through a session that refuses (`SharingDenied`, nothing saved) a
    /// sample of a type the token may not share; the caller leaves those out first with `mayShare`.
    public func importSamples(_ body: (AppImportSession) throws -> Void) throws {
        try store.importSamples(userRowID: app.userRowID) { session in try body(AppImportSession(session: session, writer: self)) }
    }

    // MARK: IMU sessions

    public func imuSession(_ session: String, seq: Int?) throws -> IMUSessionLookup { try store.imuSession(app: app, session: session, seq: seq) }

    /// Commits a pedometer batch. Its samples must already be narrowed with `shareable` (the answer
    /// names what was refused): one the token may not share fails the commit with `SharingDenied`.
    public func commitIMU(session: String, seq: Int?, device: SampleDevice?, basis: IMUSessionState, result: IMUBatchResult,
                          completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        store.commitIMU(app: app, session: session, seq: seq, device: device, basis: basis, result: result, completion: completion)
    }

    public func pedometerTotals(start: Int64, end: Int64) throws -> PedometerTotals { try store.pedometerTotals(app: app, start: start, end: end) }

    // MARK: Workout sessions

    public func startWorkoutSession(activityType: String, zone: HeartRateZoneBounds?, at start: Int64) throws -> WorkoutSession {
        try store.startWorkoutSession(app: app, activityType: activityType, zone: zone, at: start)
    }
    public func workoutSession(id: String) throws -> WorkoutSession? { try store.workoutSession(id: id, app: app) }
    public func changeWorkoutSession(id: String, action: WorkoutSessionAction, now: Int64) throws -> WorkoutSession {
        try store.changeWorkoutSession(id: id, app: app, action: action, now: now)
    }
    public func endWorkoutSession(id: String, now: Int64) throws -> WorkoutSession { try store.endWorkoutSession(id: id, app: app, now: now) }
}

/// A person's view of all of their own data: what the person may do for themselves (and what the
/// admin does on their behalf): settings, source order, the whole-user export.
public struct PersonHealthData: Sendable {
    let store: any HealthDataStore
    public let user: User

    public func replaceCharacteristics(_ values: [(String, String)]) throws { try store.replaceCharacteristics(userRowID: user.rowID, values) }
    public func activityGoals() throws -> ActivityGoals { try store.activityGoals(userRowID: user.rowID) }
    public func setActivityGoals(_ goals: ActivityGoals) throws { try store.setActivityGoals(userRowID: user.rowID, goals) }
    public func sourcePriority(type: HealthType) throws -> [String] { try store.sourcePriority(userRowID: user.rowID, type: type) }
    public func setSourcePriority(type: HealthType, apps: [String]) throws { try store.setSourcePriority(userRowID: user.rowID, type: type, apps: apps) }
    public func exportPage(type: String, after: SampleCursor?, limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)] {
        try store.exportPage(type: type, scope: .wholeUser(user), after: after, limit: limit)
    }
}

extension HealthData {
    /// One export page as `scope` sees it: a token's view or the person's whole data.
    public func exportPage(type: String, scope: ReadScope, after: SampleCursor?,
                           limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)] {
        switch scope {
        case .app(let authorization): try app(authorization).exportPage(type: type, after: after, limit: limit)
        case .wholeUser(let user): try person(user).exportPage(type: type, after: after, limit: limit)
        }
    }
}

extension HealthData {
    /// Purges tombstones older than `days` days.
    @discardableResult
    public func purgeTombstones(retentionDays days: Int) throws -> Int {
        try purgeTombstones(deletedBefore: StoreClock.nowMilliseconds() - Int64(days) * 86_400_000)
    }
}

/// An import transaction as one app sees it: it saves only what the app may share, and asks only
/// about the app's own samples.
public struct AppImportSession {
    let session: any ImportSession
    let writer: AppHealthData

    public func save(_ batch: [SourcedSample]) throws -> [ImportOutcome] {
        for (index, item) in batch.enumerated() where !writer.mayShare(item.sample) {
            throw SharingDenied(type: item.sample.type, index: index, detail: "this token may not share \(item.sample.type)")
        }
        return try session.save(batch)
    }

    /// Which of `uuids` this app has stored, as of this transaction.
    public func storedUUIDs(_ uuids: [HealthUUID]) throws -> Set<HealthUUID> { try session.storedUUIDs(uuids, app: writer.app.appName) }

    /// Whether this app is a source of the user's yet (it may have stored samples).
    public func hasSource() throws -> Bool { try session.hasSource(app: writer.app.appName) }
}
