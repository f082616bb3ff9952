import Crypto
import Dispatch
import HealthModel
import HealthStore
import PostgreSQL
import Statistics
import Synchronization

/// healthd's data in PostgreSQL: the same `HealthDataStore` as the SQLite store, for several
/// stateless healthd nodes in front of one database (or a Citus cluster: see `PostgresSchema`).
///
/// Every node may write for every user. What keeps them one server:
/// - a user's changes are numbered from their own counter row, locked by the writing transaction,
///   so change-feed anchors stay monotonic whichever node wrote, and are signed with the secret
///   kept in the database;
/// - each commit that changes samples sends a NOTIFY in its transaction; every node LISTENs and
///   passes other nodes' commits to its commit observers (change-feed wake-ups, zone events);
/// - cached authorizations are revalidated after `authorizationRevalidation`, and a revocation is
///   announced by NOTIFY, so a revoked token stops working on every node within that bound.
public final class PostgresHealthStore: HealthDataStore {
    let pool: PostgresPool
    let configuration: PostgresConfiguration
    public let secret: [UInt8]
    let typeCodes: [String: Int64]
    let typeNames: [Int64: String]
    /// Type code -> aggregation style, for the quantity types whose statistics have rollups.
    let rollupStyles: [Int64: AggregationStyle]
    /// This node's decoded rollups, checked against the series' version in the database before
    /// every use (see `PostgresRollups`), within `statisticsMemoryBudget` bytes.
    let statisticsIndexes: StatisticsIndexCache
    /// Samples handed to writers but not yet committed: past the limit, asynchronous saves wait as
    /// queued work (not as threads) until earlier ones commit.
    let writeBacklog: WriteBacklog
    /// Batches being written at once: two connections fewer than the pool holds, so reads always
    /// find one and no writer thread waits for a connection (the rest wait as queued work).
    let writerSlots: WriteBacklog
    /// Runs asynchronous saves; concurrency is bounded by the pool's connections.
    let writers = DispatchQueue(label: "healthd.postgres.writers", attributes: .concurrent)
    private let commitObservers = Mutex<[@Sendable (CommittedChange) -> Void]>([])
    let authorizationCache = Mutex(AuthorizationCache())
    let authorizationObservers = Mutex<[@Sendable (String) -> Void]>([])
    /// Writes tokens' uses (`lastUsed`) off the request's path, one at a time.
    let usageWriter = DispatchQueue(label: "healthd.postgres.usage", qos: .utility)
    private let listener = Mutex<PostgresListener?>(nil)
    /// Confirms the cached authorizations in use every half `authorizationRevalidation` (a listening
    /// node only). Dispatch sources are thread-safe objects Dispatch does not mark Sendable; this
    /// one is set once in `init` and only cancelled afterwards.
    nonisolated(unsafe) private let authorizationRefresher: (any DispatchSourceTimer)?
    /// Stream events (workout zone changes) from every node, this one included.
    public let streamEventLog = StreamEventLog()
    /// Tells this process's own broadcasts apart when the listener hears them back.
    let nodeID = UInt64.random(in: 1...UInt64.max)

    /// How long a cached authorization is used before it is read again: the bound on how long a
    /// token revoked on another node can still work if that node's revocation NOTIFY was lost.
    public static let authorizationRevalidation: Int64 = 1_000

    /// The channel every node of this deployment LISTENs on. Payloads: `c <node> <user> <seq> <type,type...>`
    /// for a commit, `r <authorization id>` for a revocation, `z ...` for a stream event (+StreamEvents).
    /// NOTIFY channels are database-wide, so it is named for the schema the tables live in: two
    /// deployments in two schemas of one database never hear each other (see `channel(forSchema:)`).
    let channel: String

    /// `healthd_changes` for the `public` schema; otherwise a suffix from the schema name's SHA-256,
    /// so any schema name gives a valid, unquoted, lower-case identifier well under 63 bytes.
    static func channel(forSchema schema: String) -> String {
        schema == "public" ? "healthd_changes" : "healthd_changes_" + Hex.encode(Array(SHA256.hash(Array(schema.utf8)).prefix(8)))
    }

    /// Connects (failing at once when the database cannot be reached), applies pending migrations,
    /// makes sure the type catalog's codes and the signing secret exist, and starts listening for
    /// other nodes' commits.
    /// `statisticsMemoryBudget`: bytes of decoded statistics rollups this node keeps in memory (the
    /// SQLite store's setting and default).
    public convenience init(url: String, maxConnections: Int = 16, writeBacklogLimit: Int = 200_000, listen: Bool = true,
                            statisticsMemoryBudget: Int = StatisticsIndexCache.defaultMemoryBudget) throws {
        try self.init(configuration: PostgresConfiguration(url: url), maxConnections: maxConnections,
                      writeBacklogLimit: writeBacklogLimit, listen: listen, statisticsMemoryBudget: statisticsMemoryBudget)
    }

    /// `configuration.settings` may name a `search_path`: the schema holding healthd's tables.
    public init(configuration: PostgresConfiguration, maxConnections: Int = 16, writeBacklogLimit: Int = 200_000,
                listen: Bool = true, statisticsMemoryBudget: Int = StatisticsIndexCache.defaultMemoryBudget) throws {
        self.configuration = configuration
        statisticsIndexes = StatisticsIndexCache(memoryBudget: statisticsMemoryBudget)
        // Resumed at once (with no schedule it never fires): libdispatch traps when a suspended
        // source is released, which an init failing below (an unreachable database) would do.
        authorizationRefresher = listen ? DispatchSource.makeTimerSource(queue: DispatchQueue(label: "healthd.postgres.authorizations")) : nil
        authorizationRefresher?.resume()
        var poolConfiguration = PostgresPool.Configuration(connection: configuration)
        poolConfiguration.maxConnections = maxConnections
        pool = try PostgresPool(configuration: poolConfiguration)
        writeBacklog = WriteBacklog(limit: writeBacklogLimit)
        writerSlots = WriteBacklog(limit: max(1, maxConnections - 2))
        try pool.withConnection { connection in try Self.migrator().migrate(connection) }
        let schema = try pool.withConnection { connection in
            try connection.firstString("SELECT current_schema()")
        }
        channel = Self.channel(forSchema: schema ?? "public")
        let codes = try pool.transaction { connection in try Self.synchronizeTypeCodes(connection) }
        typeCodes = codes
        typeNames = Dictionary(uniqueKeysWithValues: codes.map { ($0.value, $0.key) })
        rollupStyles = AggregationStyle.styles(ofTypeCodes: codes)
        secret = try pool.transaction { connection -> [UInt8] in
            try connection.execute("INSERT INTO meta (key, value) VALUES ('secret', $1) ON CONFLICT (key) DO NOTHING",
                                   [.bytes(SecureRandom.bytes(32))])
            guard let secret = try connection.firstBytes("SELECT value FROM meta WHERE key = 'secret'") else {
                throw StoreError.notFound("the signing secret vanished from meta")
            }
            return secret
        }
        if listen {
            try startListening()
            startRefreshingAuthorizations()
        }
    }

    deinit { authorizationRefresher?.cancel() }

    /// The schema's migrations, in order.
    public static func migrator() -> PostgresMigrator {
        var migrator = PostgresMigrator()
        for migration in PostgresSchema.migrations { migrator.register(migration.name, sql: migration.sql) }
        return migrator
    }

    /// Gives every catalog type a code once, the same for all nodes: codes are handed out under an
    /// advisory lock, so two nodes starting together cannot give one name two codes.
    private static func synchronizeTypeCodes(_ connection: PostgresConnection) throws -> [String: Int64] {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtext('healthd.type_codes'))", [])
        var codes: [String: Int64] = [:]
        enum Column: Int, TableColumns {
            case id, name
            static let table = "type_codes"
        }
        for (id, name) in try connection.map("SELECT id, name FROM type_codes", [], { (try $0.int64(Column.id), try $0.string(Column.name)) }) {
            codes[name] = id
        }
        var next = (codes.values.max() ?? 0) + 1
        for type in HealthTypeCatalog.all where codes[type.id] == nil {  // characteristics included
            try connection.execute("INSERT INTO type_codes (id, name) VALUES ($1, $2)", [.int64(next), .text(type.id)])
            codes[type.id] = next
            next += 1
        }
        return codes
    }

    func typeCode(for type: String) -> Int64? { typeCodes[type] }
    func typeName(for code: Int64) -> String? { typeNames[code] }

    // MARK: The store itself

    /// The tables and indexes of this database's healthd schema.
    public func storedBytes() throws -> Int64 {
        try pool.withConnection { connection in
            try connection.scalarInt64("""
                SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
                WHERE c.relkind IN ('r', 'p') AND c.relnamespace = current_schema()::regnamespace
                """) ?? 0
        }
    }

    public func addCommitObserver(_ observer: @escaping @Sendable (CommittedChange) -> Void) {
        commitObservers.withLock { $0.append(observer) }
    }

    func publish(_ change: CommittedChange) {
        for observer in commitObservers.withLock({ $0 }) { observer(change) }
    }

    public func close() {
        authorizationRefresher?.cancel()
        listener.withLock { listener in
            listener?.stop()
            listener = nil
        }
        pool.close()
    }

    // MARK: Notifications between nodes

    /// Queues the commit's NOTIFY in the writing transaction (PostgreSQL delivers it at COMMIT,
    /// and never for a rolled-back transaction).
    func notifyCommit(_ change: CommittedChange, _ connection: PostgresConnection) throws {
        guard !change.typeIDs.isEmpty else { return }
        let payload = "c \(nodeID) \(change.userRowID) \(change.lastSeq) \(change.typeIDs.sorted().joined(separator: ","))"
        try connection.execute("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    private func startListening() throws {
        let created = try PostgresListener(configuration: configuration, channels: [channel],
            onNotification: { [weak self] notification in self?.received(notification) },
            onReconnect: { [weak self] in self?.reconnected() })
        try created.start()
        listener.withLock { $0 = created }
    }

    private func startRefreshingAuthorizations() {
        guard let timer = authorizationRefresher else { return }
        let interval = DispatchTimeInterval.milliseconds(Int(Self.authorizationRevalidation / 2))
        // A failed round leaves the entries to expire; the requests then read their tokens themselves.
        timer.setEventHandler { [weak self] in try? self?.refreshCachedAuthorizations() }
        timer.schedule(deadline: .now() + interval, repeating: interval)
    }

    /// Another node's commit (or revocation). This node's own commits were published when they
    /// committed, so their echo is ignored.
    private func received(_ notification: PostgresNotification) {
        if notification.payload.hasPrefix(Self.streamEventPrefix) {
            receivedStreamEvent(notification.payload)
            return
        }
        let fields = notification.payload.split(separator: " ", omittingEmptySubsequences: false)
        switch fields.first {
        case "c" where fields.count == 5:
            guard let node = UInt64(fields[1]), node != nodeID, let user = Int64(fields[2]), let seq = Int64(fields[3]) else { return }
            publish(CommittedChange(userRowID: user, typeIDs: Set(fields[4].split(separator: ",").map(String.init)), lastSeq: seq))
        case "r" where fields.count == 2:
            forgetAuthorization(id: String(fields[1]))
        default:
            return
        }
    }

    /// Notifications sent while the listener was away are lost: forget every cached token (the
    /// next request reads it again). Waiting readers re-check on their own timeouts.
    private func reconnected() {
        authorizationCache.withLock { cache in
            cache.entries.removeAll()
            cache.generation &+= 1
        }
    }
}

/// Token hash -> authorization, when the database last confirmed it (see `authorizationRevalidation`)
/// and when a request last used it (see `refreshCachedAuthorizations`).
struct AuthorizationCache {
    /// `usageWritten`: when this token's use was last written (`UsageStamp`).
    var entries: [[UInt8]: (authorization: AppAuthorization, readAt: Int64, usedAt: Int64, usageWritten: Int64?)] = [:]
    /// Bumped by every revocation; a read caches its result only if none happened meanwhile.
    var generation: UInt64 = 0
}

extension PostgresError: StoreFaultReporting {
    /// A full disk and an unreachable server are the database-wide faults the API reports.
    public var storeFault: StoreFault? {
        switch kind {
        case .diskFull: .outOfSpace
        case .unavailable: .unavailable
        case .nulInText: .nulInText
        default: nil
        }
    }
}
