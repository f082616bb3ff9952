import HealthModel
import JSON
import SQLite
import Statistics
import Synchronization

/// What a statistics query sees of one (user, type): the index, current as of one SQLite snapshot,
/// and the names of the user's sources so answers can say which app each figure came from.
public struct StatisticsSnapshot: Sendable {
    public let index: SeriesIndex
    /// Source row id (as the index's `source`) -> app name.
    public let appNames: [Int32: String]
    /// The change sequence the index reflects: every commit up to it, none after.
    public let sequence: Int64

    /// The source id of `app` for this user, if it ever wrote or was authorized.
    public func source(ofApp app: String) -> Int32? {
        appNames.first(where: { $0.value == app })?.key
    }
}

/// One cached index per (user, type), kept exact by catching up from SQLite in change-sequence
/// order on every query instead of being told about writes: the write path stays untouched, and
/// after a crash the state is simply rebuilt from what SQLite holds.
final class StatisticsIndexCache: Sendable {
    struct Key: Hashable, Sendable {
        var userRowID: Int64
        var typeCode: Int64
    }

    /// The per-(user, type) state; its lock serializes catch-up and queries of one series only.
    final class Entry: Sendable {
        struct State: Sendable {
            var index: SeriesIndex
            var appliedSeq: Int64 = 0
            var built = false
            var appNames: [Int32: String] = [:]
        }
        let state: Mutex<State>
        init(style: AggregationStyle) { state = Mutex(State(index: SeriesIndex(style: style))) }
    }

    private struct Slot {
        let entry: Entry
        var bytes: Int
        var lastUse: UInt64
    }

    private struct Slots {
        var byKey: [Key: Slot] = [:]
        var clock: UInt64 = 0
    }

    private let slots = Mutex(Slots())
    /// Indexes beyond this many bytes in all are dropped, least recently used first; a dropped one
    /// is rebuilt from SQLite by its next query.
    let memoryBudget: Int
    /// 2 GiB: about 40 million step samples or 70 million heart-rate samples (BENCHMARKS.md).
    static let defaultMemoryBudget = 2 << 30

    init(memoryBudget: Int) { self.memoryBudget = memoryBudget }

    func entry(_ key: Key, style: AggregationStyle) -> Entry {
        slots.withLock { slots in
            slots.clock += 1
            if let existing = slots.byKey[key] {
                slots.byKey[key]?.lastUse = slots.clock
                return existing.entry
            }
            let created = Entry(style: style)
            slots.byKey[key] = Slot(entry: created, bytes: 0, lastUse: slots.clock)
            return created
        }
    }

    /// Records an index's size after a query and evicts others while the total is over budget.
    func record(_ key: Key, bytes: Int) {
        slots.withLock { slots in
            slots.byKey[key]?.bytes = bytes
            var total = slots.byKey.values.reduce(0) { $0 + $1.bytes }
            while total > memoryBudget {
                guard let victim = slots.byKey.filter({ $0.key != key }).min(by: { $0.value.lastUse < $1.value.lastUse }) else { break }
                total -= victim.value.bytes
                slots.byKey[victim.key] = nil
            }
        }
    }

    /// Bytes held by every cached index, as last recorded.
    var memoryBytes: Int { slots.withLock { $0.byKey.values.reduce(0) { $0 + $1.bytes } } }

    var count: Int { slots.withLock { $0.byKey.count } }

    func removeAll() { slots.withLock { $0.byKey.removeAll() } }
}

extension AggregationStyle {
    init?(_ type: HealthType) {
        guard type.kind == .quantity, let aggregation = type.aggregation else { return nil }
        self = aggregation.isCumulative ? .cumulative : .discrete
    }
}

extension HealthStore {
    // MARK: Statistics indexes

    /// Runs `body` on the user's index for a quantity type, current as of a fresh snapshot: rows and
    /// tombstones committed since the index was last used are applied first (built from every stored
    /// sample on first use). Another (user, type) never waits for this one.
    public func withStatisticsIndex<Result: Sendable>(userRowID: Int64, type: HealthType,
                                                      _ body: (StatisticsSnapshot) throws -> Result) throws -> Result {
        guard let style = AggregationStyle(type), let typeCode = typeCode(for: type.id) else {
            throw StoreError.invalid("statistics need a quantity type; \(type.id) is a \(type.kind.rawValue) type")
        }
        let key = StatisticsIndexCache.Key(userRowID: userRowID, typeCode: typeCode)
        let entry = statisticsIndexes.entry(key, style: style)
        let (result, bytes) = try entry.state.withLock { state throws -> (Result, Int) in
            // Read everything in one snapshot, then apply with the reader returned: a failed read
            // changes nothing, and a cold build does not hold a connection while it indexes.
            let rebuild = !state.built
            let changes = try pool.read { db in
                try pendingChanges(db, userRowID: userRowID, typeCode: typeCode, since: rebuild ? nil : state.appliedSeq)
            }
            do {
                try apply(changes, to: &state, style: style)
            } catch {
                state.built = false  // rebuilt from SQLite by the next query
                throw error
            }
            let result = try body(StatisticsSnapshot(index: state.index, appNames: state.appNames, sequence: state.appliedSeq))
            return (result, state.index.memoryBytes)
        }
        statisticsIndexes.record(key, bytes: bytes)
        return result
    }

    /// Bytes held by all cached statistics indexes.
    public var statisticsIndexMemoryBytes: Int { statisticsIndexes.memoryBytes }

    /// Drops every cached index (the next query rebuilds from SQLite): for benchmarks of the cold path.
    public func dropStatisticsIndexes() { statisticsIndexes.removeAll() }

    /// Every sample of a quantity type as statistics see them, read straight from SQLite: the direct
    /// path the indexes are checked against.
    public func statisticsSamples(userRowID: Int64, type: HealthType) throws -> [StatisticsSample] {
        guard AggregationStyle(type) != nil, let typeCode = typeCode(for: type.id) else { return [] }
        return try pool.read { db in try Self.indexableSamples(db, userRowID: userRowID, typeCode: typeCode) }
    }

    /// What one snapshot holds for a series beyond what the index has applied.
    struct PendingChanges {
        var sequence: Int64
        var priority: SourcePriority
        var appNames: [Int32: String]
        /// Every sample, when the index is built afresh.
        var all: [StatisticsSample]?
        var removed: [StatisticsSample] = []
        var added: [StatisticsSample] = []
    }

    /// The change sequence, the effective source order, app names, and either every sample (`since`
    /// nil) or the rows and tombstones committed after `since`. Tombstones whose sample was saved
    /// after `since` are left out: that sample never reached the index and its row is gone.
    func pendingChanges(_ db: Database, userRowID: Int64, typeCode: Int64, since: Int64?) throws -> PendingChanges {
        let sequence = try ChangeSequence.current(db)
        let priority = SourcePriority(try effectiveSourcePriority(db, userRowID: userRowID, typeCode: typeCode).map(\.source))
        // Apps can be authorized without any commit, so names are read every time (a few rows).
        var changes = PendingChanges(sequence: sequence, priority: priority, appNames: try Self.appNames(db, userRowID: userRowID))
        // Rebuild when tombstones after `since` may be gone (purged up to the user's change horizon),
        // or when the sequence went backwards (only a database restored from a copy does that).
        let horizon = try db.first("SELECT seq FROM change_horizons WHERE user_id = ?", [.integer(userRowID)]) {
            try $0.int64(at: 0)
        } ?? 0
        guard let since, sequence >= since, horizon <= since else {
            changes.all = try Self.indexableSamples(db, userRowID: userRowID, typeCode: typeCode)
            return changes
        }
        guard sequence > since else { return changes }
        let tombstones = try db.cachedStatement("""
            SELECT sample_seq, start_ms, end_ms, value, source_id FROM deleted_samples
            WHERE user_id = ?1 AND +type_id = ?2 AND seq > ?3 AND sample_seq <= ?3 AND value IS NOT NULL
            """)
        try tombstones.bind([.integer(userRowID), .integer(typeCode), .integer(since)])
        try tombstones.forEachRow { row in
            if let sample = try Self.indexable(row) { changes.removed.append(sample) }
        }
        // Through (user_id, seq): only this user's commits since `since` are read, then filtered by type.
        let rows = try db.cachedStatement("""
            SELECT seq, start_ms, end_ms, value, source_id FROM samples
            WHERE user_id = ?1 AND +type_id = ?2 AND seq > ?3 AND value IS NOT NULL
            """)
        try rows.bind([.integer(userRowID), .integer(typeCode), .integer(since)])
        try rows.forEachRow { row in
            if let sample = try Self.indexable(row) { changes.added.append(sample) }
        }
        return changes
    }

    /// Removed samples are ones the index holds and added ones are new rows, so removing first and
    /// adding second gives the same state as replaying in sequence order.
    private func apply(_ changes: PendingChanges, to state: inout StatisticsIndexCache.Entry.State,
                       style: AggregationStyle) throws {
        if let all = changes.all {
            var index = SeriesIndex(style: style, priority: changes.priority)
            try index.insert(contentsOf: all)
            state.index = index
            state.built = true
        } else {
            if state.index.priority != changes.priority { state.index.setPriority(changes.priority) }
            if !changes.removed.isEmpty { state.index.delete(contentsOf: changes.removed) }
            if !changes.added.isEmpty { try state.index.insert(contentsOf: changes.added) }
        }
        state.appNames = changes.appNames
        state.appliedSeq = changes.sequence
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

    /// A row (seq, start, end, value, source) as the indexes take it. Samples the indexes cannot hold
    /// (longer than `StatisticsSample.maximumDuration`, possible only for discrete types without a
    /// maximum) are left out, the same way on insert and on delete.
    static func indexable(_ row: Row) throws(RowDecodingError) -> StatisticsSample? {
        guard let source = Int32(exactly: try row.int64(at: 4)) else { return nil }
        let sample = StatisticsSample(id: try row.int64(at: 0), start: try row.int64(at: 1), end: try row.int64(at: 2),
                                      value: try row.double(at: 3), source: source)
        do { try sample.validate() } catch { return nil }
        return sample
    }

    static func appNames(_ db: Database, userRowID: Int64) throws -> [Int32: String] {
        var names: [Int32: String] = [:]
        let statement = try db.cachedStatement("SELECT id, app FROM sources WHERE user_id = ?")
        try statement.bind([.integer(userRowID)])
        try statement.forEachRow { row in
            if let id = Int32(exactly: try row.int64(at: 0)) { names[id] = try row.string(at: 1) }
        }
        return names
    }

    // MARK: Source priority

    /// The user's effective source order for a type: the apps of their chosen order first (as listed),
    /// then every other source that saved the type, the one that saved it first ranking first.
    func effectiveSourcePriority(_ db: Database, userRowID: Int64, typeCode: Int64) throws -> [(source: Int32, app: String)] {
        var order: [(source: Int32, app: String)] = []
        var listed = Set<Int32>()
        if let text = try db.first("SELECT apps FROM source_priorities WHERE user_id = ? AND type_id = ?",
                                   [.integer(userRowID), .integer(typeCode)], { try $0.string(at: 0) }) {
            let names = Self.decodeAppList(text)
            let statement = try db.cachedStatement("SELECT id FROM sources WHERE user_id = ? AND app = ?")
            for name in names {
                try statement.bind([.integer(userRowID), .text(name)])
                guard let id = try statement.first({ try $0.int64(at: 0) }).flatMap({ Int32(exactly: $0) }),
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
            guard let id = Int32(exactly: try row.int64(at: 0)), !listed.contains(id) else { return }
            order.append((id, try row.string(at: 1)))
        }
        return order
    }

    /// The effective source order for a type as app names (see `effectiveSourcePriority`).
    public func sourcePriority(userRowID: Int64, type: HealthType) throws -> [String] {
        guard let typeCode = typeCode(for: type.id) else { return [] }
        return try pool.read { db in try effectiveSourcePriority(db, userRowID: userRowID, typeCode: typeCode).map(\.app) }
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
                """, [.integer(userRowID), .integer(typeCode), .text(Self.encodeAppList(apps))])
        }
    }

    static func encodeAppList(_ apps: [String]) -> String {
        var writer = JSONWriter()
        writer.beginArray()
        for app in apps { writer.string(app) }
        writer.endArray()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    static func decodeAppList(_ text: String) -> [String] {
        guard let values = (try? JSONParser.parse(text))?.arrayValue else { return [] }
        return values.compactMap(\.stringValue)
    }
}
