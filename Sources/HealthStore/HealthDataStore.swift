import Foundation
import HealthModel
import Statistics

/// Everything the HTTP layer, the change feed, the workout zone monitor, the importers and the
/// demo seeder ask of a store, whatever keeps the data: the embedded SQLite `SQLiteHealthStore` (the
/// default) or the PostgreSQL store (`PostgresStore`, for several nodes on one database).
///
/// The value types (users, authorizations and their `AccessPolicy`, sample queries and pages,
/// change positions, statistics answers...) live beside it in this module, so both backends speak
/// the same words. Access is decided above this protocol, once, by the `HealthData` façade (the
/// only door routes have) and the extensions beside it: reads receive a `ReadVisibility` (for each
/// type, every source or only the app's own) and writes a `WriteGrant`, and a backend only turns
/// those into SQL; it never applies an `AccessPolicy` itself. The `userRowID:` operations are
/// unscoped: the importers, the seeder, admin paths and the façade's readers use them. Calls are
/// coarse (one per request, one per batch): the cost of calling through `any HealthDataStore` is
/// one indirect call per request, never one per sample.
///
/// Errors: `StoreError`, `SharingDenied`, `SampleConflict`, `ChangeFeedError`, `IMUIngestError`,
/// `WorkoutSessionTransitionError` mean what the API says; a backend's own error that conforms to
/// `StoreFaultReporting` may say the database is full or unreachable; anything else is a server
/// fault whose text goes to the log only.
public protocol HealthDataStore: AnyObject, Sendable {
    // MARK: The store itself

    /// The server's key for signing cursors and anchors: made once and kept in the database, so
    /// tokens stay valid across restarts and on every node that serves the same data.
    var secret: [UInt8] { get }

    /// Bytes the store occupies (the `healthd_store_bytes` gauge): the SQLite file and its WAL, or
    /// the PostgreSQL tables and indexes.
    func storedBytes() throws -> Int64

    /// What the statistics series cache did since the store opened (the `healthd_statistics_cache_*`
    /// metrics): resident bytes against the budget, hits, misses, evictions.
    var statisticsCacheFigures: StatisticsCacheFigures { get }

    /// Called after every commit that added or deleted samples, once the data is durable: the
    /// change feed wakes its waiters and the workout zone monitor judges new heart rates. A store
    /// shared by several nodes also reports the other nodes' commits here.
    func addCommitObserver(_ observer: @escaping @Sendable (CommittedChange) -> Void)

    /// Called when other nodes' commit reports may have been lost (the notification connection
    /// was lost and is back): anything may have changed since. One process loses none.
    func addNotificationGapObserver(_ observer: @escaping @Sendable () -> Void)

    /// Hands a stream event (a workout zone change) to the streams of every node serving this
    /// data, this one included: this node's log gets it at once, other nodes' through the
    /// database. Throws only when the other nodes could not be told.
    func broadcast(_ event: StreamEvent) throws
    /// This process's recent stream events, broadcast by any node serving this data: streams learn
    /// from its observers which user has news and read it back with `events(after:for:)`, which
    /// gives an app only what it may read.
    var streamEventLog: StreamEventLog { get }
    /// True when other processes may serve the same data (the PostgreSQL store): what this
    /// process remembers about the data (running workout sessions...) may then be out of date.
    var isSharedByNodes: Bool { get }

    func close()

    // MARK: Users and authorizations

    /// A `conflict` when the name is taken.
    func createUser(name: String) throws -> User
    func user(named name: String) throws -> User?
    /// By the id clients see or, for convenience in admin calls, by name.
    func user(idOrName: String) throws -> User?

    /// Creates an authorization and returns it with its token, which is never stored or shown again.
    func createAuthorization(user: User, app: String, read: Set<String>, share: Set<String>, disclosesRead: Bool)
        throws -> (authorization: AppAuthorization, token: String)
    /// A live authorization of `app` for `user` that may read and share at least the given types,
    /// created with exactly those permissions when there is none (its token is never shown).
    func appAuthorizationCreatingIfNeeded(user: User, app: String, read: Set<String>, share: Set<String>)
        throws -> AppAuthorization
    /// False when there is no such unrevoked authorization. How soon a revoked token stops working
    /// is the backend's documented bound (at once for SQLite).
    func revokeAuthorization(id: String) throws -> Bool
    /// The user's apps with switches (oldest source first) and what their tokens may read and share.
    func appPermissions(userRowID: Int64) throws -> [AppPermissions]
    /// The authorization for a token hash if it is cached and still valid; nil says nothing. No I/O.
    func cachedAuthorization(tokenHash: [UInt8]) -> AppAuthorization?
    /// The live authorization for a token hash, nil for unknown and revoked tokens. A failing read
    /// throws: a database fault must not look like a wrong token.
    func authorization(tokenHash: [UInt8]) throws -> AppAuthorization?
    /// Called when an authorization is revoked or its permissions change, on any node serving this
    /// data, and before any later commit reaches the commit observers: what is in flight for that
    /// authorization (change streams, parked long-polls) ends on it.
    func addAuthorizationObserver(_ observer: @escaping @Sendable (_ authorizationID: String) -> Void)
    /// The live authorizations among `ids`, read from the database, not a cache (revoked and unknown
    /// ones are absent): what in-flight work compares with the authorization it started with.
    func liveAuthorizations(ids: Set<String>) throws -> [String: AppAuthorization]
    /// The ids of the user's live (unrevoked) tokens: of one app, or every app when `app` is nil.
    /// A read: it never waits for the writer.
    func liveAuthorizationIDs(userRowID: Int64, app: String?) throws -> Set<String>
    /// Ends at once, on this node, what the authorizations have in flight (their cache entries and
    /// the authorization observers), without a write: a revocation calls it before it queues for
    /// the writer, so its bound does not depend on the disk (`HealthData`'s revocations).
    func endInFlight(authorizationIDs: Set<String>)

    // MARK: People: passwords, invitations, sessions, failed sign-ins (`PeopleAccounts`)

    func signInAccount(name: String) throws -> SignInAccount?
    func setPassword(userRowID: Int64, hash: String) throws
    /// Sets the hash and deletes the user's sessions but `tokenHash`, in one transaction.
    func changePassword(userRowID: Int64, hash: String, keepingSession tokenHash: [UInt8]) throws
    /// Replaces the user's invitation (one per user).
    func createInvitation(userRowID: Int64, codeHash: [UInt8], expiresMs: Int64) throws
    func invitation(codeHash: [UInt8], nowMs: Int64) throws -> User?
    /// Deletes the unexpired invitation and sets the password in one transaction; false if it was gone.
    func redeemInvitation(codeHash: [UInt8], userRowID: Int64, passwordHash: String, nowMs: Int64) throws -> Bool
    func createSession(userRowID: Int64, tokenHash: [UInt8], nowMs: Int64) throws
    func session(tokenHash: [UInt8]) throws -> StoredSession?
    func touchSession(tokenHash: [UInt8], nowMs: Int64) throws
    func deleteSession(tokenHash: [UInt8]) throws -> Bool
    func signInFailures(kind: SignInFailureKind, key: String, sinceMs: Int64) throws -> [Int64]
    func recordSignInFailure(keys: [(kind: SignInFailureKind, key: String)], atMs: Int64, forgetBeforeMs: Int64) throws

    // MARK: People's permissions (grants) and permission requests

    /// The person's apps: every app they have switches for (a grant), oldest first.
    func appGrants(userRowID: Int64) throws -> [AppGrant]
    /// Changes one app's switches with `change`, in one transaction, and returns the grant as
    /// saved; nil when the person has no such app. When what the tokens may do changed, every token
    /// of the app ends what it has in flight (the authorization observers, on every node).
    func updateAppGrant(userRowID: Int64, app: String, _ change: (inout AppGrant) throws -> Void) throws -> AppGrant?
    /// Revokes every live token of the app and forgets its switches (asking again starts afresh);
    /// false when the person has no such app.
    func revokeApp(userRowID: Int64, app: String) throws -> Bool
    /// Stores a new permission request; false (nothing stored) when its user code is taken, so the
    /// caller draws another. Purges requests older than `AuthorizationRequestRecord.retention`.
    func createAuthorizationRequest(_ record: AuthorizationRequestRecord, deviceCodeHash: [UInt8]) throws -> Bool
    /// The request with this user code (8 letters), whatever its state.
    func authorizationRequest(userCode: String) throws -> AuthorizationRequestRecord?
    /// The person's answer, in one transaction: `answer` gets the request and the person's grant
    /// for its app (a new, empty one when there is none) and changes both; the store saves them.
    /// Nil when no request has this user code.
    func answerAuthorizationRequest(userCode: String, user: User,
                                    _ answer: (inout AuthorizationRequestRecord, inout AppGrant) throws -> Void) throws
        -> AuthorizationRequestRecord?
    /// One poll, in one transaction that locks the request (two nodes cannot both issue): `poll`
    /// changes the request and answers true to issue the token now, which the store makes in the
    /// same transaction for the person who allowed, following their grant. A request whose app the
    /// person has revoked since is denied instead.
    func pollAuthorizationRequest(deviceCodeHash: [UInt8], _ poll: (inout AuthorizationRequestRecord) -> Bool) throws
        -> AuthorizationPollOutcome

    // MARK: Samples

    /// Saves a batch atomically (all or none) and returns the uuids in request order: the writes
    /// below receive a `WriteGrant`, the access policy's decision (`save(_:by:)` makes it).
    func save(_ samples: [HealthSample], granted: WriteGrant) throws -> [HealthUUID]
    /// `save` without holding the calling thread until the commit: `completion` gets the uuids (or
    /// the error) once the batch is durable.
    func save(_ samples: [HealthSample], granted: WriteGrant,
              completion: @escaping @Sendable (Result<[HealthUUID], any Error>) -> Void)
    /// Samples of one type that `visibility` sees, one page in the query's order.
    func samples(_ query: SampleQuery, visibility: ReadVisibility) throws -> SamplePage
    /// One sample by uuid, if the user has it and `visibility` sees it.
    func sample(_ uuid: HealthUUID, visibility: ReadVisibility) throws -> StoredSample?
    /// Deletes one sample of the grant's user, leaving a tombstone: none is `notFound`; otherwise
    /// `allowing` judges the sample's type and source inside the transaction (it throws to refuse).
    func deleteSample(_ uuid: HealthUUID, granted: WriteGrant,
                      allowing: (_ type: String, _ sourceRowID: Int64) throws -> Void) throws
    /// Deletes the app's own top-level samples of a type in [start, end) (overlap); returns how many.
    func deleteSamples(type: String, start: Int64, end: Int64, granted: WriteGrant) throws -> Int
    /// The apps (with their devices) that saved a type and that `visibility` sees, first saver
    /// first (HKSourceQuery).
    func sources(type: String, visibility: ReadVisibility) throws -> [(app: String, devices: [SampleDevice])]
    /// How many samples (top-level and correlation objects) of `type` the user has from `app`.
    func sampleCount(userRowID: Int64, type: String, app: String) throws -> Int
    /// Milliseconds of [start, end) covered by samples of `type` with a positive value (their union).
    func coveredDuration(userRowID: Int64, type: HealthType, start: Int64, end: Int64, onlySource: Int64?) throws -> Int64

    // MARK: Change feed

    /// Changes after `request.after` that `visibility` sees: following `next` misses and repeats nothing.
    func changes(_ request: ChangeRequest, visibility: ReadVisibility) throws -> ChangePage
    /// The position of "now" in the user's change sequence: a client starting here sees only later changes.
    func currentChangePosition(userRowID: Int64) throws -> ChangePosition
    /// Purges tombstones deleted before `cutoff` (Unix ms); older anchors become expired. Returns how many.
    @discardableResult
    func purgeTombstones(deletedBefore cutoff: Int64) throws -> Int

    // MARK: Statistics and source priority

    /// HKStatisticsCollectionQuery over the user's samples of a quantity type, merged by the user's
    /// source priority, with each source's figures when `options` asks (or always, so a caller can
    /// narrow to one source). Reflects every write committed before the call, on any node.
    func statistics(userRowID: Int64, type: HealthType, buckets: [CalendarBucket], options: StatisticsOptions)
        throws -> StatisticsAnswer
    /// The effective source order for a type as app names.
    func sourcePriority(userRowID: Int64, type: HealthType) throws -> [String]
    /// Stores the user's order for a type; an unknown or repeated app is `invalid` and nothing is stored.
    func setSourcePriority(userRowID: Int64, type: HealthType, apps: [String]) throws

    // MARK: Characteristics, goals, activity summaries

    func characteristics(userRowID: Int64) throws -> [(String, String)]
    func replaceCharacteristics(userRowID: Int64, _ values: [(String, String)]) throws
    func activityGoals(userRowID: Int64) throws -> ActivityGoals
    func setActivityGoals(userRowID: Int64, _ goals: ActivityGoals) throws
    /// Saves summaries in one transaction; a day already stored is replaced.
    func saveActivitySummaries(_ summaries: [ActivitySummary], userRowID: Int64) throws
    func activitySummaries(userRowID: Int64, from first: HealthDay, through last: HealthDay) throws -> [ActivitySummary]

    // MARK: IMU sessions (the pedometer's exactly-once batches)

    func imuSession(owner: AppSource, session: String, seq: Int?) throws -> IMUSessionLookup
    func commitIMU(granted: WriteGrant, session: String, seq: Int?, device: SampleDevice?,
                   basis: IMUSessionState, result: IMUBatchResult,
                   completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void)
    func pedometerTotals(owner: AppSource, start: Int64, end: Int64) throws -> PedometerTotals

    // MARK: Workout sessions

    func startWorkoutSession(granted: WriteGrant, activityType: String, zone: HeartRateZoneBounds?,
                             at start: Int64) throws -> WorkoutSession
    /// The session `id` if it is `owner`'s; another app's or user's is nil, as if it did not exist.
    func workoutSession(id: String, owner: AppSource) throws -> WorkoutSession?
    func changeWorkoutSession(id: String, owner: AppSource, action: WorkoutSessionAction,
                              now: Int64) throws -> WorkoutSession
    func endWorkoutSession(id: String, granted: WriteGrant, now: Int64, workoutUUID: HealthUUID) throws -> WorkoutSession
    /// Users with a running or paused session, and how many each has.
    func activeWorkoutSessionCounts() throws -> [Int64: Int]
    /// Judges heart-rate readings committed since the last call against the user's running
    /// sessions with a zone; returns the state changes to publish.
    func advanceWorkoutZones(userRowID: Int64) throws -> [WorkoutZoneChange]

    // MARK: Webhook subscriptions (docs/decisions.md, Webhooks: the design for wiring)

    /// Stores a new subscription (its `anchor` is where deliveries start), held by `lease` on a
    /// store shared by nodes, unless its token already has `limit` subscriptions or is revoked:
    /// both are judged in the inserting transaction, so concurrent requests cannot pass the limit
    /// and a revocation committing meanwhile cannot leave a subscription behind.
    func createWebhook(_ subscription: WebhookSubscription, limit: Int, lease: WebhookLease) throws -> WebhookCreation
    /// The token's subscriptions, oldest first, without their pending pages.
    func webhooks(authorizationID: String) throws -> [WebhookSubscription]
    /// One subscription with its pending page and that page's attempts.
    func webhook(id: String) throws -> WebhookSubscription?
    /// Deletes the token's subscription and its deliveries list; false when it has none by that id.
    func deleteWebhook(id: String, authorizationID: String) throws -> Bool
    /// Deletes every subscription of a token (its token is gone); returns their ids.
    func deleteWebhooks(authorizationID: String) throws -> [String]
    /// The subscription's last attempts, newest first (at most `WebhookLimits.deliveriesKept`).
    func webhookDeliveries(id: String) throws -> [WebhookDeliveryAttempt]
    /// Active subscriptions for this node to run, with their pending pages: on a store shared by
    /// nodes, those whose lease is free or expired and whose next attempt is due, now leased to
    /// `lease.owner` (`FOR UPDATE SKIP LOCKED`); on a single-process store, every active one.
    func claimWebhooks(lease: WebhookLease, limit: Int) throws -> [WebhookSubscription]
    /// Extends the leases `lease.owner` holds among `ids`; returns those it still holds (a deleted
    /// or lost one is missing).
    func renewWebhookLeases(ids: [String], lease: WebhookLease) throws -> Set<String>
    /// Stores the page about to be sent as the subscription's pending page (and its start as the
    /// anchor). False when the row is gone or another node holds it.
    func storeWebhookPage(id: String, page: WebhookPendingPage, nextAttemptMs: Int64, lease: WebhookLease) throws -> Bool
    /// Adds an attempt to the deliveries list (trimmed to the newest `deliveriesKept`) and sets
    /// when the next one is due (nil: none pending).
    func recordWebhookAttempt(id: String, userRowID: Int64, attempt: WebhookDeliveryAttempt, nextAttemptMs: Int64?,
                              lease: WebhookLease) throws -> Bool
    /// The pending page is delivered (or the feed moved past what this subscription may see): the
    /// anchor moves and the pending page is cleared, in one transaction.
    func advanceWebhook(id: String, to anchor: ChangePosition, lease: WebhookLease) throws -> Bool
    /// Drops the pending page unsent (the token's read access changed: the page is read again).
    func discardWebhookPage(id: String, lease: WebhookLease) throws -> Bool
    /// Stops deliveries for good, with the reason the listing shows.
    func disableWebhook(id: String, reason: String, lease: WebhookLease) throws -> Bool

    // MARK: People: recent access, own data, erasure, the admin's lists

    /// Adds counts to the access log in one transaction (counts of a user who no longer exists are dropped).
    func recordAccess(_ entries: [AccessLogEntry]) throws
    /// The user's stored counts of the quarter hours starting in [from, to) (Unix ms).
    func accessLog(userRowID: Int64, from: Int64, to: Int64) throws -> [AccessLogEntry]
    /// Deletes the counts of quarter hours before `cutoff`; returns how many rows.
    @discardableResult
    func purgeAccessLog(before cutoff: Int64) throws -> Int
    /// Every user, oldest first.
    func users() throws -> [UserListing]
    /// The user's live authorizations, oldest first.
    func authorizations(userRowID: Int64) throws -> [AuthorizationListing]
    /// Deletes every sample `app` saved for the user, with tombstones and statistics kept current,
    /// in one transaction; returns how many (top-level) samples.
    func deleteSamples(userRowID: Int64, app: String) throws -> Int
    /// Deletes every row that names the user, in one transaction, and ends what is in flight for
    /// the user's tokens (as a revocation does); `StoreError.notFound` when there is no such user.
    func eraseUser(_ user: User) throws -> ErasureReport

    // MARK: Import and export

    /// Runs `body` in one write transaction: every batch it saves through the session commits
    /// together, or none does. For a request that must be stored whole or not at all (a Health
    /// Auto Export payload) while holding one batch in memory at a time.
    func importSamples(userRowID: Int64, _ body: (any ImportSession) throws -> Void) throws
    /// One page of a user's top-level samples of one type, oldest first, after `after`.
    func exportPage(userRowID: Int64, userExternalID: String, type: String, onlySource: Int64?,
                    after: SampleCursor?, limit: Int) throws -> [(sample: StoredSample, cursor: SampleCursor)]
}

extension HealthDataStore {
    /// The user named `name`, created if missing (for `seed`, `import` and `--demo`).
    public func userCreatingIfNeeded(name: String) throws -> User {
        if let user = try user(named: name) { return user }
        do { return try createUser(name: name) } catch StoreError.conflict(let reason) {
            // Another request (or node) created it between the two calls; else the name reads
            // like another account's, which is not this one.
            guard let user = try user(named: name) else { throw StoreError.conflict(reason) }
            return user
        }
    }

    /// An authorization that may not learn its own read list (HealthKit's default).
    public func createAuthorization(user: User, app: String, read: Set<String>, share: Set<String>)
        throws -> (authorization: AppAuthorization, token: String) {
        try createAuthorization(user: user, app: app, read: read, share: share, disclosesRead: false)
    }

    public func imuSession(app: AppAuthorization, session: String, seq: Int?) throws -> IMUSessionLookup {
        try imuSession(owner: AppSource(app), session: session, seq: seq)
    }

    public func pedometerTotals(app: AppAuthorization, start: Int64, end: Int64) throws -> PedometerTotals {
        try pedometerTotals(owner: AppSource(app), start: start, end: end)
    }

    public func workoutSession(id: String, app: AppAuthorization) throws -> WorkoutSession? {
        try workoutSession(id: id, owner: AppSource(app))
    }

    public func changeWorkoutSession(id: String, app: AppAuthorization, action: WorkoutSessionAction, now: Int64) throws -> WorkoutSession {
        try changeWorkoutSession(id: id, owner: AppSource(app), action: action, now: now)
    }

    /// Ends a session, saving its workout under a fresh uuid.
    public func endWorkoutSession(id: String, app: AppAuthorization, now: Int64) throws -> WorkoutSession {
        try endWorkoutSession(id: id, app: app, now: now, workoutUUID: .random())
    }

    /// Saves an import batch in one transaction, each sample as its own app's source (created if
    /// needed, with no authorization: the import is the admin acting for the user); see
    /// `ImportOutcome`. A uuid stored with the same content is not saved twice, one taken by other
    /// content is reported rather than failing the batch, and a correlation adopts objects already
    /// stored on their own (Apple exports repeat them at top level).
    public func importSamples(_ batch: [SourcedSample], userRowID: Int64) throws -> [ImportOutcome] {
        guard !batch.isEmpty else { return [] }
        var outcomes: [ImportOutcome] = []
        try importSamples(userRowID: userRowID) { session in outcomes = try session.save(batch) }
        return outcomes
    }

    /// Purges tombstones older than `days` days.
    @discardableResult
    public func purgeTombstones(retentionDays days: Int) throws -> Int {
        try purgeTombstones(deletedBefore: StoreClock.nowMilliseconds() - Int64(days) * 86_400_000)
    }
}

/// A statistics answer: one entry per bucket, and the app name of every source id its per-source
/// figures use.
public struct StatisticsAnswer: Sendable {
    public var buckets: [BucketStatistics]
    public var appNames: [Int32: String]

    public init(buckets: [BucketStatistics], appNames: [Int32: String]) {
        self.buckets = buckets
        self.appNames = appNames
    }
}

/// An import transaction in progress (`HealthDataStore.importSamples(userRowID:_:)`).
public protocol ImportSession: AnyObject {
    /// Saves a batch as `importSamples(_:userRowID:)` does, inside the open transaction.
    func save(_ batch: [SourcedSample]) throws -> [ImportOutcome]
    /// Which of `uuids` the user's `app` has stored, as of this transaction.
    func storedUUIDs(_ uuids: [HealthUUID], app: String) throws -> Set<HealthUUID>
    /// Whether the user's `app` is a source yet (it may have stored samples); false for an app
    /// that never saved for the user.
    func hasSource(app: String) throws -> Bool
}

/// What a backend's error says about the database as a whole, beyond the request: the API answers
/// 507 for `outOfSpace` and 503 with Retry-After for `unavailable`, and logs the error's text.
public enum StoreFault: Sendable, Equatable {
    /// The database's disk is full: nothing of the request was stored; retry once space returns.
    case outOfSpace
    /// The database cannot be reached right now (connection lost, server restarting, too many
    /// connections): nothing is known to be stored; retry shortly.
    case unavailable
    /// A text of the request holds U+0000, which the database cannot hold: nothing was stored,
    /// and no row can hold such a text either (so nothing by that name exists).
    case nulInText
}

/// An error that can say it is a `StoreFault`; drivers' error types conform in the store modules.
public protocol StoreFaultReporting: Error {
    /// Nil for any other failure.
    var storeFault: StoreFault? { get }
}

extension StoreFault {
    /// The fault `error` reports, if it is one.
    public static func of(_ error: any Error) -> StoreFault? {
        (error as? any StoreFaultReporting)?.storeFault
    }
}

/// The wall clock in Unix milliseconds, the one helper the server reads "now" through (stores'
/// timestamps, access logs, summaries, workout sessions, the seeder); code that must be tested at a
/// fixed time takes a `() -> Int64` that defaults to it.
public enum StoreClock {
    public static func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}
