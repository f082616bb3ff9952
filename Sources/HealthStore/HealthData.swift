import Dispatch
import HealthModel
import Statistics

/// The one door to health data for code that answers a caller (HealthAPI's routes and services):
/// every read and write goes through a scoped view, `app(_:)` for a token or `person(_:)` for the
/// person themselves (or the admin acting for them), and the view decides access once, here, in
/// the words of `AccessPolicy`: the store receives the decision (a `ReadVisibility` for a read, a
/// `WriteGrant` for a write) and only carries it out. The store behind it is private, so a route
/// cannot reach an unscoped `userRowID:` operation and cannot forget a check.
public final class HealthData: Sendable {
    let store: any HealthDataStore
    /// Counts what every app view reads and writes (recent access), here where all of it passes.
    public let recentAccess: AccessRecorder

    /// `accessFlushInterval`: how long access counts wait in memory before they are written.
    public init(_ store: any HealthDataStore, accessFlushInterval: DispatchTimeInterval = .seconds(1)) {
        self.store = store
        recentAccess = AccessRecorder(store: store, flushInterval: accessFlushInterval)
    }

    /// What `authorization`'s token may read and write.
    public func app(_ authorization: AppAuthorization) -> AppHealthData {
        AppHealthData(store: store, app: authorization, recorder: recentAccess)
    }

    /// All of `user`'s own data, with no app's narrowing: the person, or the admin acting for them.
    public func person(_ user: User) -> PersonHealthData { PersonHealthData(store: store, user: user, recorder: recentAccess) }

    /// People's passwords, invitations and sessions (no health data).
    public var people: PeopleAccounts { PeopleAccounts(store: store) }

    // MARK: The server's own business (no user's samples)

    public var secret: [UInt8] { store.secret }
    public func storedBytes() throws -> Int64 { try store.storedBytes() }
    public var statisticsCacheFigures: StatisticsCacheFigures { store.statisticsCacheFigures }
    public var isSharedByNodes: Bool { store.isSharedByNodes }
    public var streamEventLog: StreamEventLog { store.streamEventLog }
    public func addCommitObserver(_ observer: @escaping @Sendable (CommittedChange) -> Void) { store.addCommitObserver(observer) }
    public func addNotificationGapObserver(_ observer: @escaping @Sendable () -> Void) { store.addNotificationGapObserver(observer) }
    public func broadcast(_ event: StreamEvent) throws { try store.broadcast(event) }
    @discardableResult
    public func purgeTombstones(deletedBefore cutoff: Int64) throws -> Int { try store.purgeTombstones(deletedBefore: cutoff) }
    public func activeWorkoutSessionCounts() throws -> [Int64: Int] { try store.activeWorkoutSessionCounts() }
    /// Judges new heart rates against a user's running sessions (the zone monitor, after a commit).
    public func advanceWorkoutZones(userRowID: Int64) throws -> [WorkoutZoneChange] { try store.advanceWorkoutZones(userRowID: userRowID) }

    // MARK: Users and authorizations (the admin's, and the token check)

    public func createUser(name: String) throws -> User { try store.createUser(name: name) }
    public func user(idOrName: String) throws -> User? {
        guard User.canBeName(idOrName) else { return nil }
        return try store.user(idOrName: idOrName)
    }
    public func createAuthorization(user: User, app: String, read: Set<String>, share: Set<String>, disclosesRead: Bool)
        throws -> (authorization: AppAuthorization, token: String) {
        try store.createAuthorization(user: user, app: app, read: read, share: share, disclosesRead: disclosesRead)
    }
    /// What the token has in flight ends before the write queues for the writer
    /// (`PersonHealthData.endInFlight`).
    public func revokeAuthorization(id: String) throws -> Bool {
        if try store.liveAuthorizations(ids: [id])[id] != nil { store.endInFlight(authorizationIDs: [id]) }
        return try store.revokeAuthorization(id: id)
    }
    public func cachedAuthorization(tokenHash: [UInt8]) -> AppAuthorization? { store.cachedAuthorization(tokenHash: tokenHash) }
    public func authorization(tokenHash: [UInt8]) throws -> AppAuthorization? { try store.authorization(tokenHash: tokenHash) }
    public func addAuthorizationObserver(_ observer: @escaping @Sendable (_ authorizationID: String) -> Void) {
        store.addAuthorizationObserver(observer)
    }
    /// The live authorizations among `ids`; a person's own reads (`personsOwnReads`) are live while
    /// their session is.
    public func liveAuthorizations(ids: Set<String>) throws -> [String: AppAuthorization] {
        var live = try store.liveAuthorizations(ids: ids.filter { AppAuthorization.sessionTokenHash(ofPersonsOwnReads: $0) == nil })
        for id in ids {
            guard let hash = AppAuthorization.sessionTokenHash(ofPersonsOwnReads: id), let session = try store.session(tokenHash: hash),
                  StoreClock.nowMilliseconds() - session.lastUsedMs < PeopleAccounts.sessionIdleMilliseconds else { continue }
            live[id] = AppAuthorization.personsOwnReads(user: session.user, sessionTokenHash: hash)
        }
        return live
    }

    // MARK: The admin's lists

    public func users() throws -> [UserListing] { try store.users() }
    public func authorizations(of user: User) throws -> [AuthorizationListing] { try store.authorizations(userRowID: user.rowID) }

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
    let recorder: AccessRecorder

    public var access: AccessPolicy { app.access }
    /// What this token's reads see: handed to the store with each read.
    public var visibility: ReadVisibility { ReadVisibility(app: app) }

    // MARK: Samples

    public func save(_ samples: [HealthSample], completion: @escaping @Sendable (Result<[HealthUUID], any Error>) -> Void) {
        let counted = self
        store.save(samples, by: app) { result in
            if case .success = result { counted.countWrites(samples) }
            completion(result)
        }
    }

    public func save(_ samples: [HealthSample]) throws -> [HealthUUID] {
        let saved = try store.save(samples, by: app)
        countWrites(samples)
        return saved
    }

    public func samples(_ query: SampleQuery) throws -> SamplePage {
        let page = try store.samples(query, visibility: visibility)
        countRead(query.type, page.samples.count)
        return page
    }
    public func sample(_ uuid: HealthUUID) throws -> StoredSample? {
        let found = try store.sample(uuid, visibility: visibility)
        if let found { countRead(found.sample.type, 1) }
        return found
    }
    public func deleteSample(_ uuid: HealthUUID) throws {
        // The type, for the access log: a sample the app cannot see is not deleted either.
        let type = try store.sample(uuid, visibility: visibility)?.sample.type
        try store.deleteSample(uuid, by: app)
        if let type { countWrite(type, 1) }
    }
    public func deleteSamples(type: String, start: Int64, end: Int64) throws -> Int {
        let deleted = try store.deleteSamples(type: type, start: start, end: end, by: app)
        countWrite(type, deleted)
        return deleted
    }
    public func sources(type: String) throws -> [(app: String, devices: [SampleDevice])] {
        let sources = try store.sources(type: type, visibility: visibility)
        countRead(type, 0)
        return sources
    }

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

    public func changes(_ request: ChangeRequest) throws -> ChangePage {
        let page = try store.changes(request, visibility: visibility)
        countReads(page.added.lazy.map(\.sample.type) + page.deleted.lazy.map(\.type))
        return page
    }
    public func currentChangePosition() throws -> ChangePosition { try store.currentChangePosition(userRowID: app.userRowID) }
    /// The stream events (workout zone changes) after `position` the token may read.
    public func streamEvents(after position: StreamEventPosition) -> (events: [StreamEvent], next: StreamEventPosition) {
        store.streamEventLog.events(after: position, for: app)
    }

    // MARK: Webhooks (the token's own subscriptions only: another token's id does not exist for it)

    /// Stores a subscription that delivers the changes committed from now on; `.failure` when the
    /// token holds `WebhookLimits.perToken` already or was revoked meanwhile.
    public func createWebhook(id: String, url: String, types: [String], secretKey: [UInt8], lease: WebhookLease) throws
        -> Result<WebhookSubscription, WebhookCreationRefused> {
        let subscription = WebhookSubscription(id: id, authorizationID: app.id, userRowID: app.userRowID, url: url, types: types.sorted(),
                                               secretKey: secretKey, createdMs: StoreClock.nowMilliseconds(),
                                               anchor: try store.currentChangePosition(userRowID: app.userRowID))
        switch try store.createWebhook(subscription, limit: WebhookLimits.perToken, lease: lease) {
        case .created: return .success(subscription)
        case .limitReached: return .failure(.limitReached)
        case .tokenRevoked: return .failure(.tokenRevoked)
        }
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
        let figures = try store.statistics(type, buckets: buckets, options: options, for: app)
        countRead(type.id, figures.count)
        return figures
    }

    public func sourcePriority(type: HealthType) throws -> [String] { try store.sourcePriority(type: type, for: app) }
    public func characteristics() throws -> [(String, String)] {
        let characteristics = try store.characteristics(for: app)
        countReads(characteristics.map(\.0))
        return characteristics
    }
    public func coveredDuration(type: HealthType, start: Int64, end: Int64) throws -> Int64 {
        try store.coveredDuration(type: type, start: start, end: end, for: app)
    }
    /// The user's activity goals: settings, not samples, readable by any of the user's apps (as
    /// HKActivitySummary carries them).
    public func activityGoals() throws -> ActivityGoals { try store.activityGoals(userRowID: app.userRowID) }
    public func activitySummaries(from first: HealthDay, through last: HealthDay) throws -> [ActivitySummary] {
        let summaries = try store.activitySummaries(userRowID: app.userRowID, from: first, through: last)
        countRead(ActivitySummary.accessType, summaries.count)
        return summaries
    }

    // MARK: Import and export

    public func exportPage(type: String, after: SampleCursor?, limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)] {
        let page = try store.exportPage(type: type, scope: .app(app), after: after, limit: limit)
        // One read per export of a type that has samples (its first page), every sample counted.
        if !page.isEmpty { count(type, AccessCounts(reads: after == nil ? 1 : 0, samplesRead: Int64(page.count))) }
        return page
    }

    /// One import transaction for the token (Health Auto Export stores a request whole or not at
    /// all): `body` saves batches through a session that refuses (`SharingDenied`, nothing saved) a
    /// sample of a type the token may not share; the caller leaves those out first with `mayShare`.
    public func importSamples(_ body: (AppImportSession) throws -> Void) throws {
        let saved = ImportedTypes()
        try store.importSamples(userRowID: app.userRowID) { session in
            try body(AppImportSession(session: session, writer: self, saved: saved))
        }
        // Counted once the transaction committed: a request stored whole or not at all.
        for (type, count) in saved.counts { countWrite(type, count) }
    }

    // MARK: IMU sessions

    public func imuSession(_ session: String, seq: Int?) throws -> IMUSessionLookup {
        try store.imuSession(owner: AppSource(app), session: session, seq: seq)
    }

    /// Commits a pedometer batch. Its samples must already be narrowed with `shareable` (the answer
    /// names what was refused): one the token may not share fails the commit with `SharingDenied`.
    public func commitIMU(session: String, seq: Int?, device: SampleDevice?, basis: IMUSessionState, result: IMUBatchResult,
                          completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        let counted = self
        store.commitIMU(app: app, session: session, seq: seq, device: device, basis: basis, result: result) { outcome in
            if case .success = outcome { counted.countWrites(result.samples) }
            completion(outcome)
        }
    }

    public func pedometerTotals(start: Int64, end: Int64) throws -> PedometerTotals {
        try store.pedometerTotals(owner: AppSource(app), start: start, end: end)
    }

    // MARK: Workout sessions

    public func startWorkoutSession(activityType: String, zone: HeartRateZoneBounds?, at start: Int64) throws -> WorkoutSession {
        try store.startWorkoutSession(app: app, activityType: activityType, zone: zone, at: start)
    }
    public func workoutSession(id: String) throws -> WorkoutSession? { try store.workoutSession(id: id, owner: AppSource(app)) }
    public func changeWorkoutSession(id: String, action: WorkoutSessionAction, now: Int64) throws -> WorkoutSession {
        try store.changeWorkoutSession(id: id, owner: AppSource(app), action: action, now: now)
    }
    public func endWorkoutSession(id: String, now: Int64) throws -> WorkoutSession {
        let ended = try store.endWorkoutSession(id: id, app: app, now: now)
        countWrite(HealthTypeCatalog.workoutType.id, 1)
        return ended
    }

    // MARK: Recent access

    func count(_ type: String, _ counts: AccessCounts) {
        // The person reading their own data (the dashboard signed in) is not an app's access.
        guard !app.isPersonsOwnReads else { return }
        recorder.record(userRowID: app.userRowID, app: app.appName, type: type, counts)
    }

    /// One read of `type` that returned `samples` samples or statistics.
    func countRead(_ type: String, _ samples: Int) { count(type, AccessCounts(reads: 1, samplesRead: Int64(samples))) }

    /// One read of each type among `types` (one entry per sample returned). A page holds runs of
    /// one type, so a type is looked up once per run, not per sample.
    func countReads<Types: Sequence<String>>(_ types: Types) {
        var perType: [String: Int] = [:]
        var run: (type: String, count: Int)?
        for type in types {
            if run?.type == type { run?.count += 1; continue }
            if let (previous, count) = run { perType[previous, default: 0] += count }
            run = (type, 1)
        }
        if let (previous, count) = run { perType[previous, default: 0] += count }
        for (type, samples) in perType { countRead(type, samples) }
    }

    func countWrite(_ type: String, _ samples: Int) { count(type, AccessCounts(writes: 1, samplesWritten: Int64(samples))) }

    /// One write of each type among `samples` (top level, as saved).
    func countWrites(_ samples: [HealthSample]) {
        var perType: [String: Int] = [:]
        for sample in samples { perType[sample.type, default: 0] += 1 }
        for (type, count) in perType { countWrite(type, count) }
    }
}

/// A person's view of all of their own data: what the person may do for themselves (and what the
/// admin does on their behalf): settings, source order, the whole-user export.
public struct PersonHealthData: Sendable {
    let store: any HealthDataStore
    public let user: User
    let recorder: AccessRecorder

    /// The person's reads see every source of every type.
    public var visibility: ReadVisibility { ReadVisibility(wholeUser: user) }

    public func samples(_ query: SampleQuery) throws -> SamplePage { try store.samples(query, visibility: visibility) }
    public func sample(_ uuid: HealthUUID) throws -> StoredSample? { try store.sample(uuid, visibility: visibility) }
    public func sources(type: String) throws -> [(app: String, devices: [SampleDevice])] {
        try store.sources(type: type, visibility: visibility)
    }
    public func changes(_ request: ChangeRequest) throws -> ChangePage { try store.changes(request, visibility: visibility) }
    public func currentChangePosition() throws -> ChangePosition { try store.currentChangePosition(userRowID: user.rowID) }
    public func replaceCharacteristics(_ values: [(String, String)]) throws { try store.replaceCharacteristics(userRowID: user.rowID, values) }
    public func activityGoals() throws -> ActivityGoals { try store.activityGoals(userRowID: user.rowID) }
    public func setActivityGoals(_ goals: ActivityGoals) throws { try store.setActivityGoals(userRowID: user.rowID, goals) }
    public func sourcePriority(type: HealthType) throws -> [String] { try store.sourcePriority(userRowID: user.rowID, type: type) }
    public func setSourcePriority(type: HealthType, apps: [String]) throws { try store.setSourcePriority(userRowID: user.rowID, type: type, apps: apps) }
    public func exportPage(type: String, after: SampleCursor?, limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)] {
        try store.exportPage(type: type, scope: .wholeUser(user), after: after, limit: limit)
    }
    public func appPermissions() throws -> [AppPermissions] { try store.appPermissions(userRowID: user.rowID) }
    public func characteristics() throws -> [(String, String)] { try store.characteristics(userRowID: user.rowID) }
    public func activitySummaries(from first: HealthDay, through last: HealthDay) throws -> [ActivitySummary] {
        try store.activitySummaries(userRowID: user.rowID, from: first, through: last)
    }

    // MARK: Recent access, own data, erasure

    /// What the person's apps read and wrote in the quarter hours starting in [from, to): the
    /// stored log with this node's counts not yet flushed.
    public func recentAccess(from: Int64, to: Int64) throws -> [AccessLogEntry] {
        try recorder.counts(userRowID: user.rowID, from: from, to: to)
    }

    /// Deletes every sample `app` saved (tombstones for the change feed; statistics follow at once).
    public func deleteSamples(savedBy app: String) throws -> Int { try store.deleteSamples(userRowID: user.rowID, app: app) }

    /// Erases the account: every row that names the user, in one transaction; open streams of the
    /// user's tokens end. Counts still in memory are dropped, and any arriving late are too.
    public func erase() throws -> ErasureReport {
        recorder.forget(userRowID: user.rowID)
        try endInFlight(ofApp: nil)
        let report = try store.eraseUser(user)
        recorder.forget(userRowID: user.rowID)
        return report
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
    let saved: ImportedTypes

    public func save(_ batch: [SourcedSample]) throws -> [ImportOutcome] {
        for (index, item) in batch.enumerated() where !writer.mayShare(item.sample) {
            throw SharingDenied(type: item.sample.type, index: index, detail: "this token may not share \(item.sample.type)")
        }
        let outcomes = try session.save(batch)
        for (item, outcome) in zip(batch, outcomes) where outcome == .inserted { saved.counts[item.sample.type, default: 0] += 1 }
        return outcomes
    }

    /// Which of `uuids` this app has stored, as of this transaction.
    public func storedUUIDs(_ uuids: [HealthUUID]) throws -> Set<HealthUUID> { try session.storedUUIDs(uuids, app: writer.app.appName) }

    /// Whether this app is a source of the user's yet (it may have stored samples).
    public func hasSource() throws -> Bool { try session.hasSource(app: writer.app.appName) }
}

/// The samples an import transaction saved, per type, for the access log once it commits.
final class ImportedTypes {
    var counts: [String: Int] = [:]
}
