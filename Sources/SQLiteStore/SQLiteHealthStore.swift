import HealthStore
import JSON
import Crypto
import Foundation
import HealthModel
import SQLite
import Statistics
import Synchronization

/// healthd's persistence: one SQLite file in WAL mode with `synchronous=FULL`, so a write that
/// returned has survived a crash or power loss. One writer connection, a few readers.
public final class SQLiteHealthStore: HealthDataStore {
    public let databasePath: String
    let pool: DatabasePool
    /// Token hash -> authorization. Filled lazily; revocation removes the entry in the same call
    /// that commits it, so a revoked token stops working at once.
    let authorizationCache = Mutex(AuthorizationCache())

    struct AuthorizationCache {
        var entries: [TokenHashKey: CachedAuthorization] = [:]
        /// Bumped by every revocation; a lookup caches its result only if no revocation happened
        /// while it read, so a revoked token can never be re-cached by a read that raced the revoke.
        var generation: UInt64 = 0
    }

    struct CachedAuthorization {
        var authorization: AppAuthorization
        /// When this token's use was last written (`UsageStamp`).
        var usageWritten: Int64?
    }

    /// Writes tokens' uses (`lastUsed`) off the request's path, one at a time.
    let usageWriter = DispatchQueue(label: "healthd.sqlite.usage", qos: .utility)

    /// `statisticsMemoryBudget`: bytes of decoded statistics rollups kept in memory (see
    /// `StatisticsIndexCache.defaultMemoryBudget`); `SeriesCachePolicy` decides which series stay within it.
    /// `writeBacklogLimit`: samples handed to the writer and not yet committed, past which new
    /// saves queue (their work, not their threads) until earlier ones commit.
    /// `uuidKeyMemoryBudget`: bytes of uuid keys held in memory (`SampleKeyIndex`).
    public convenience init(directory: String, readers: Int = 4, statisticsMemoryBudget: Int = StatisticsIndexCache.defaultMemoryBudget,
                            writeBacklogLimit: Int = 200_000, uuidKeyMemoryBudget: Int = SQLiteHealthStore.defaultUUIDKeyMemoryBudget) throws {
        try self.init(directory: directory, readers: readers, statisticsMemoryBudget: statisticsMemoryBudget,
                      writeBacklogLimit: writeBacklogLimit, sampleKeys: SampleKeyIndex(memoryBudget: uuidKeyMemoryBudget))
    }

    /// 32 MiB: the uuid keys of about 8 million samples.
    public static let defaultUUIDKeyMemoryBudget = 32 << 20

    /// `sampleKeys`: how samples are found by uuid (tests narrow its keys to force collisions,
    /// or its fanout to force merges).
    package init(directory: String, readers: Int = 4, statisticsMemoryBudget: Int = StatisticsIndexCache.defaultMemoryBudget,
                 writeBacklogLimit: Int = 200_000, sampleKeys: SampleKeyIndex) throws {
        self.sampleKeys = sampleKeys
        statisticsIndexes = StatisticsIndexCache(memoryBudget: statisticsMemoryBudget)
        writeBacklog = WriteBacklog(limit: writeBacklogLimit)
        let url = URL(fileURLWithPath: directory)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        databasePath = url.appendingPathComponent("healthd.sqlite").path
        var configuration = DatabasePool.Configuration()
        configuration.readerCount = readers
        pool = try DatabasePool(path: databasePath, configuration: configuration, migrator: Schema.migrator(sampleKeys: sampleKeys))
        // Every catalog type gets a stable small code once; the map is fixed for the process's life.
        let codes = try pool.write { db -> [String: Int64] in
            for type in HealthTypeCatalog.all {  // characteristics included
                try db.execute("INSERT INTO type_codes (name) VALUES (?) ON CONFLICT(name) DO NOTHING", [.text(type.id)])
            }
            var codes: [String: Int64] = [:]
            enum Column: Int, TableColumns {
                case id, name
                static let table = "type_codes"
            }
            let statement = try db.cachedStatement("SELECT id, name FROM type_codes")
            try statement.forEachRow { codes[try $0.string(Column.name)] = try $0.int64(Column.id) }
            return codes
        }
        typeCodes = codes
        typeNames = Dictionary(uniqueKeysWithValues: codes.map { ($0.value, $0.key) })
        correlationTypeCodes = Set(codes.compactMap { HealthTypeCatalog.type($0.key)?.kind == .correlation ? $0.value : nil })
        rollupStyles = AggregationStyle.styles(ofTypeCodes: codes)
        keyCompactor = UUIDKeyCompactor(pool: pool, keys: sampleKeys)
        secret = try pool.write { db -> [UInt8] in
            if let existing = try db.firstBlob("SELECT value FROM meta WHERE key = 'secret'") {
                return existing
            }
            let fresh = SecureRandom.bytes(32)
            try db.execute("INSERT INTO meta (key, value) VALUES ('secret', ?)", [.blob(fresh)])
            return fresh
        }
        // A compaction cut short by a stop or a crash resumes where its last step committed.
        if try pool.read({ db in try sampleKeys.compactionPending(db: db) }) { keyCompactor.schedule() }
    }

    /// The server's key for signing cursors and anchors: random, made once, kept in the database
    /// so tokens stay valid across restarts.
    public let secret: [UInt8]

    let typeCodes: [String: Int64]
    /// Samples by (user, uuid): the idempotency check of every save, and reads and deletes by uuid.
    let sampleKeys: SampleKeyIndex
    /// Compacts a user's uuid key runs in steps after the deletes that call for it.
    let keyCompactor: UUIDKeyCompactor
    let typeNames: [Int64: String]
    /// The codes of correlation types, whose rows hold their objects as child rows: a row read
    /// checks its kind by code instead of looking its type up in the catalog by name.
    let correlationTypeCodes: Set<Int64>
    private let appNames = Mutex<[Int64: String]>([:])
    private let devices = Mutex<[Int64: SampleDevice?]>([:])
    private let commitObservers = Mutex<[@Sendable (CommittedChange) -> Void]>([])
    let authorizationObservers = Mutex<[@Sendable (String) -> Void]>([])
    public let streamEventLog = StreamEventLog()
    /// Samples handed to the writer but not yet committed, by asynchronous saves: past the limit
    /// a new save queues (as work, holding no thread), so a flood of batches does not pile up
    /// as prepared rows in the writer's group.
    let writeBacklog: WriteBacklog
    /// Per (user, quantity type) statistics indexes, built lazily (StatisticsIndexes.swift).
    let statisticsIndexes: StatisticsIndexCache
    /// Type code -> aggregation style, for the quantity types whose statistics have rollups.
    let rollupStyles: [Int64: AggregationStyle]
    let rollupNanoseconds = Atomic<UInt64>(0)
    /// How writes keep the statistics rollups (`RollupMaintenanceMode`); changed only by
    /// `healthd-bench ingest`, to measure what maintenance costs.
    package let rollupMaintenance = Atomic<UInt8>(RollupMaintenanceMode.incremental.rawValue)

    /// Time spent rewriting statistics rollup rows inside write transactions since the store
    /// opened: the cost of keeping them, for benchmarks.
    public var rollupMaintenanceNanoseconds: UInt64 { rollupNanoseconds.load(ordering: .relaxed) }

    func typeCode(for type: String) -> Int64? { typeCodes[type] }
    func typeName(for code: Int64) -> String? { typeNames[code] }

    /// Source rows never change their app, so their names are cached after the first read.
    func appName(for sourceRowID: Int64, db: Database) throws -> String {
        if let name = appNames.withLock({ $0[sourceRowID] }) { return name }
        let name = try db.firstString("SELECT app FROM sources WHERE id = ?", [.integer(sourceRowID)]) ?? "unknown"
        appNames.withLock { $0[sourceRowID] = name }
        return name
    }

    /// Device rows are content-addressed and never change or go away, so a device read once is
    /// kept: most pages name one or two devices, which then cost neither a query nor a parse.
    /// Bounded: past `deviceCacheLimit` distinct devices the cache starts over.
    func device(rowID: Int64, db: Database) throws -> SampleDevice? {
        if let known = devices.withLock({ $0[rowID] }) { return known }
        let device = try db.firstBlob("SELECT body FROM devices WHERE id = ?", [.integer(rowID)]).map { bytes throws(RowDecodingError) in
            try DeviceBody.decode(bytes)
        }
        devices.withLock { cache in
            if cache.count >= Self.deviceCacheLimit { cache.removeAll() }
            cache[rowID] = device
        }
        return device
    }

    static let deviceCacheLimit = 4_096

    /// Drops what is cached about rows by their ids (source names, devices, statistics
    /// decodings): after an erasure, whose row ids SQLite may hand out again.
    func forgetCachedRows() {
        appNames.withLock { $0.removeAll() }
        devices.withLock { $0.removeAll() }
        statisticsIndexes.removeAll()
    }

    /// Called after every commit that added or deleted samples (on the committing thread, after
    /// the data is durable): the change feed wakes its waiters and the workout zone monitor judges
    /// new heart rates. (Statistics indexes do not listen: they catch up from the change sequence
    /// when next asked.)
    public func addCommitObserver(_ observer: @escaping @Sendable (CommittedChange) -> Void) {
        commitObservers.withLock { $0.append(observer) }
    }

    /// Every commit of the one process reaches the commit observers: there is no gap to report.
    public func addNotificationGapObserver(_ observer: @escaping @Sendable () -> Void) {}

    func publish(_ change: CommittedChange) {
        for observer in commitObservers.withLock({ $0 }) { observer(change) }
    }

    public func close() {
        keyCompactor.stop()
        try? pool.close()
    }

    /// Bytes on disk: the database and its write-ahead log.
    public func storedBytes() -> Int64 {
        pool.statistics().totalBytes
    }

    static func nowMilliseconds() -> Int64 { StoreClock.nowMilliseconds() }

    static func newIdentifier() -> String { UUID().uuidString.lowercased() }

    // MARK: Users

    public func createUser(name: String) throws -> User {
        try pool.write { db in
            // Every name is compared (a person's account is made rarely, and people are few next
            // to their samples); in the write transaction, so two creations cannot both pass.
            let names = try db.map("SELECT \(UserColumn.selectList) FROM users", []) { row in try User(row: row).name }
            if let existing = LookalikeNames.existing(name, among: names) { throw StoreError.nameTaken(name, by: existing) }
            let id = Self.newIdentifier()
            try db.execute("INSERT INTO users (external_id, name, created_ms) VALUES (?, ?, ?)",
                           [.text(id), .text(name), .integer(Self.nowMilliseconds())])
            return User(rowID: db.lastInsertRowID, id: id, name: name)
        }
    }

    public func user(named name: String) throws -> User? {
        try pool.read { db in
            try db.first("SELECT \(UserColumn.selectList) FROM users WHERE name = ?", [.text(name)]) { row in
                try User(row: row)
            }
        }
    }

    /// Looks a user up by the id clients see or, for convenience in admin calls, by name.
    public func user(idOrName: String) throws -> User? {
        try pool.read { db in
            try db.first("""
                SELECT \(UserColumn.selectList) FROM users WHERE external_id = ?1 OR name = ?1
                ORDER BY external_id = ?1 DESC LIMIT 1
                """, [.text(idOrName)]) { row in
                try User(row: row)
            }
        }
    }

    // MARK: Authorizations

    /// Creates an authorization and returns it with its token, which is never stored or shown again.
    /// `disclosesRead`: the token may learn its own read list (off by default, as in HealthKit).
    /// The admin acts for the person: the switches it names are turned on in the person's grant for
    /// the app (made if missing), and the token, like every token of the app, follows the grant.
    public func createAuthorization(user: User, app: String, read: Set<String>, share: Set<String>,
                                    disclosesRead: Bool)
        throws -> (authorization: AppAuthorization, token: String) {
        let (authorization, token, changed, tokenIDs) = try pool.write { db -> (AppAuthorization, String, Bool, Set<String>) in
            // The user was looked up before this write: an erasure since then leaves no one to authorize.
            guard try db.firstInt64("SELECT 1 FROM users WHERE id = ?", [.integer(user.rowID)]) != nil else {
                throw StoreError.notFound("no user \(user.id)")
            }
            let before = try Self.appGrant(db, userRowID: user.rowID, app: app)
            var grant = before ?? AppGrant(app: app, displayName: app, created: Self.nowMilliseconds())
            grant.turnOn(read: read, share: share)
            try Self.saveGrant(db, userRowID: user.rowID, grant)
            let changed = before.map { grant.changesAccess(from: $0) } ?? false
            let tokenIDs = changed ? try Self.liveTokenIDs(db, userRowID: user.rowID, app: app) : []
            let (authorization, token) = try Self.insertToken(db, user: user, app: app, grant: grant, disclosesRead: disclosesRead)
            if changed { forgetAuthorizations(ids: tokenIDs) }
            return (authorization, token, changed, tokenIDs)
        }
        if changed { forgetAuthorizations(ids: tokenIDs) }
        return (authorization, token)
    }

    /// A new token row for `app`, reading its access from `grant` (which must be saved).
    static func insertToken(_ db: Database, user: User, app: String, grant: AppGrant, disclosesRead: Bool)
        throws -> (authorization: AppAuthorization, token: String) {
        let token = SecureRandom.token(prefix: "hdt_")
        let id = newIdentifier()
        let sourceRowID = try sourceRowID(db, userRowID: user.rowID, app: app)
        // read_types/share_types record what the token was made with; its access is the grant's.
        try db.execute("""
            INSERT INTO authorizations (id, user_id, app, token_hash, read_types, share_types, created_ms, discloses_read)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(id), .integer(user.rowID), .text(app), .blob(TokenHashing.hash(token)),
                  .text(StoredForms.typeListText(grant.read)), .text(StoredForms.typeListText(grant.share)),
                  .integer(nowMilliseconds()), .integer(disclosesRead ? 1 : 0)])
        return (AppAuthorization(id: id, userRowID: user.rowID, userID: user.id, appName: app, sourceRowID: sourceRowID,
                                 read: grant.read, share: grant.share, disclosesRead: disclosesRead), token)
    }

    /// Revokes at once: the row is marked and the cache entry dropped before this returns.
    /// Returns false when there is no such (unrevoked) authorization.
    public func revokeAuthorization(id: String) throws -> Bool {
        let revoked = try pool.write { db -> Bool in
            try db.execute("UPDATE authorizations SET revoked_ms = ? WHERE id = ? AND revoked_ms IS NULL",
                           [.integer(Self.nowMilliseconds()), .text(id)])
            guard db.changes > 0 else { return false }
            // Its webhooks go with it, in the same transaction.
            _ = try Self.deleteWebhooks(db, authorizationID: id)
            // Inside the write, so the token is out of the cache and its streams have ended before
            // any later write commits: nothing saved after the revocation can reach them. Should the
            // commit fail, those streams merely end early.
            forgetAuthorization(id: id)
            return true
        }
        if revoked { forgetAuthorization(id: id) }
        return revoked
    }

    func forgetAuthorization(id: String) { forgetAuthorizations(ids: [id]) }

    /// Drops the tokens from the cache and tells the observers, so what is in flight for them ends.
    func forgetAuthorizations(ids: Set<String>) {
        guard !ids.isEmpty else { return }
        authorizationCache.withLock { cache in
            cache.entries = cache.entries.filter { !ids.contains($0.value.authorization.id) }
            cache.generation &+= 1
        }
        let observers = authorizationObservers.withLock { $0 }
        for id in ids.sorted() {
            for observer in observers { observer(id) }
        }
    }

    public func addAuthorizationObserver(_ observer: @escaping @Sendable (String) -> Void) {
        authorizationObservers.withLock { $0.append(observer) }
    }

    public func liveAuthorizations(ids: Set<String>) throws -> [String: AppAuthorization] {
        guard !ids.isEmpty else { return [:] }
        var list = JSONWriter()
        list.beginArray()
        for id in ids.sorted() { list.string(id) }
        list.endArray()
        let idList = String(decoding: list.bytes, as: UTF8.self)
        return try pool.read { db -> [String: AppAuthorization] in
            var found: [String: AppAuthorization] = [:]
            let statement = try db.cachedStatement("""
                SELECT \(Self.authorizationColumns) FROM \(Self.authorizationJoins)
                WHERE a.id IN (SELECT value FROM json_each(?)) AND a.revoked_ms IS NULL
                """)
            try statement.bind([.text(idList)])
            try statement.forEachRow { row in
                let authorization = try AppAuthorization(row: row)
                found[authorization.id] = authorization
            }
            return found
        }
    }

    /// The authorization for a token hash if it was looked up recently and not revoked since;
    /// nil says nothing (ask `authorization(tokenHash:)`). Costs a dictionary lookup, no I/O.
    public func cachedAuthorization(tokenHash: [UInt8]) -> AppAuthorization? {
        guard let key = TokenHashKey(tokenHash) else { return nil }
        let now = Self.nowMilliseconds()
        let (found, due) = authorizationCache.withLock { cache -> (AppAuthorization?, Bool) in
            guard let entry = cache.entries[key] else { return (nil, false) }
            guard UsageStamp.isDue(lastWritten: entry.usageWritten, now: now) else { return (entry.authorization, false) }
            cache.entries[key]?.usageWritten = now
            return (entry.authorization, true)
        }
        if due, let found { recordUse(found, at: now) }
        return found
    }

    /// The live authorization for a token hash, or nil for unknown and revoked tokens. A failing
    /// read throws: a database error must not look like a wrong token (a 401 would send the app
    /// to sign in again for a server fault).
    public func authorization(tokenHash: [UInt8]) throws -> AppAuthorization? {
        if let cached = cachedAuthorization(tokenHash: tokenHash) { return cached }
        let key = TokenHashKey(tokenHash)
        let generation = authorizationCache.withLock { $0.generation }
        let found = try pool.read { db -> AppAuthorization? in
            try db.first("""
                SELECT \(Self.authorizationColumns) FROM \(Self.authorizationJoins)
                WHERE a.token_hash = ? AND a.revoked_ms IS NULL
                """, [.blob(tokenHash)]) { row in try AppAuthorization(row: row) }
        }
        guard let authorization = found else { return nil }
        let now = Self.nowMilliseconds()
        authorizationCache.withLock { cache in
            if let key, cache.generation == generation { cache.entries[key] = CachedAuthorization(authorization: authorization, usageWritten: now) }
        }
        recordUse(authorization, at: now)
        return authorization
    }

    /// Writes that the token was used at `now` (its row's and its app's `last_used_ms`), on the
    /// usage queue. A failed write only leaves "last used" older; the request does not wait for it.
    func recordUse(_ authorization: AppAuthorization, at now: Int64) {
        usageWriter.async { [pool] in
            try? pool.write { db in
                try db.execute("UPDATE authorizations SET last_used_ms = max(coalesce(last_used_ms, 0), ?) WHERE id = ?",
                               [.integer(now), .text(authorization.id)])
                try db.execute("UPDATE app_grants SET last_used_ms = max(coalesce(last_used_ms, 0), ?) WHERE user_id = ? AND app = ?",
                               [.integer(now), .integer(authorization.userRowID), .text(authorization.appName)])
            }
        }
    }

    /// Waits until the uses recorded so far are written (tests).
    package func waitForUsageWrites() { usageWriter.sync {} }

    /// A token with its user, its app's grant (where its access comes from) and its source.
    static let authorizationJoins = """
        authorizations a JOIN users u ON u.id = a.user_id
        JOIN app_grants g ON g.user_id = a.user_id AND g.app = a.app
        JOIN sources s ON s.user_id = a.user_id AND s.app = a.app
        """

    /// What `AppAuthorization(row:)` reads (`AuthorizationColumn`), from `authorizationJoins`: the access is the grant's.
    static let authorizationColumns =
        "a.id, a.user_id, u.external_id, a.app, g.read_types, g.share_types, s.id, a.discloses_read"

    /// Throws `accountErased` unless the user still exists, inside a write transaction (one writer
    /// at a time: an erasure is wholly before or after): a write that saves no sample (a session, a
    /// webhook) of a user erased while it was in flight stores nothing.
    static func requireUser(_ db: Database, userRowID: Int64) throws {
        guard try db.firstInt64("SELECT 1 FROM users WHERE id = ?", [.integer(userRowID)]) != nil else {
            throw AccountErased()
        }
    }

    static func sourceRowID(_ db: Database, userRowID: Int64, app: String) throws -> Int64 {
        if let id = try db.firstInt64("SELECT id FROM sources WHERE user_id = ? AND app = ?", [.integer(userRowID), .text(app)]) {
            return id
        }
        // A write of an erased user (its token was in flight) stores nothing: the erasure took the
        // user's sources with it, and a new one would fail the users foreign key.
        try requireUser(db, userRowID: userRowID)
        try db.execute("INSERT INTO sources (user_id, app) VALUES (?, ?) ON CONFLICT DO NOTHING",
                       [.integer(userRowID), .text(app)])
        guard let id = try db.firstInt64("SELECT id FROM sources WHERE user_id = ? AND app = ?",
                                         [.integer(userRowID), .text(app)]) else {
            throw StoreError.notFound("source for app '\(app)'")
        }
        return id
    }
}
