import HealthModel
import SQLite

/// A place in one user's change sequence (HKQueryAnchor, unsigned).
///
/// `seq` is the last change the client has; `tombstoneFloor` is the sequence number when its first,
/// anchorless page was read. An initial sync lists present samples only, so deletions at or below
/// the floor (of samples it never saw) are skipped; for every later anchor `seq >= tombstoneFloor`.
public struct ChangePosition: Sendable, Hashable {
    public var seq: Int64
    public var tombstoneFloor: Int64
    public init(seq: Int64, tombstoneFloor: Int64) {
        self.seq = seq
        self.tombstoneFloor = tombstoneFloor
    }

    /// Tombstones with a seq above this are reported.
    package var tombstonesAfter: Int64 { max(seq, tombstoneFloor) }
}

/// What to read: the types (nil = every type the app can see), where to start (nil = from the
/// beginning: every sample now present) and how many changes at most.
public struct ChangeRequest: Sendable {
    public var types: Set<String>?
    public var after: ChangePosition?
    public var limit: Int
    public init(types: Set<String>?, after: ChangePosition?, limit: Int) {
        self.types = types
        self.after = after
        self.limit = limit
    }
}

public struct DeletedSample: Sendable, Hashable {
    public var uuid: HealthUUID
    public var type: String
    public init(uuid: HealthUUID, type: String) {
        self.uuid = uuid
        self.type = type
    }
}

/// One page of changes in commit order. Within a page, a uuid in both lists was deleted and then
/// saved again (a deleted row cannot be listed as added), so clients apply `deleted` first.
public struct ChangePage: Sendable {
    public var added: [StoredSample]
    public var deleted: [DeletedSample]
    /// Where the next page starts.
    public var next: ChangePosition
    /// True when more changes follow `next` right now.
    public var more: Bool
    public var isEmpty: Bool { added.isEmpty && deleted.isEmpty }

    public init(added: [StoredSample], deleted: [DeletedSample], next: ChangePosition, more: Bool) {
        self.added = added
        self.deleted = deleted
        self.next = next
        self.more = more
    }
}

extension ChangePage {
    /// Merges a snapshot's added rows and tombstones after `position` (each list in seq order, up to
    /// `limit + 1` long) into one page of at most `limit` changes in seq order, and at most
    /// `HealthType.maximumPageSize` samples of each type (`type` names a row's type), as a page of
    /// samples would hold: a route can carry 100,000 locations. When the page ends before every row
    /// read is listed, `next` is the last listed change, so the next page starts with the first one
    /// left out; otherwise it is the snapshot's `current` sequence number, which no later commit can
    /// fall below. Only the rows listed are materialized.
    package init<Row>(merging rows: [Row], seq: (Row) -> Int64, type: (Row) -> String?,
                      tombstones: [(seq: Int64, deleted: DeletedSample?)],
                      after position: ChangePosition, current: Int64, limit: Int,
                      materialize: (Row) throws -> StoredSample) rethrows {
        var added: [StoredSample] = []
        var deleted: [DeletedSample] = []
        var sampleIndex = 0, tombstoneIndex = 0, taken = 0
        var lastSeq = position.seq
        var perType: [String: Int] = [:]
        while taken < limit && (sampleIndex < rows.count || tombstoneIndex < tombstones.count) {
            let takeSample = tombstoneIndex >= tombstones.count
                || (sampleIndex < rows.count && seq(rows[sampleIndex]) < tombstones[tombstoneIndex].seq)
            if takeSample {
                let row = rows[sampleIndex]
                if let id = type(row), let capped = HealthTypeCatalog.type(id), capped.maximumPageSize != .max {
                    let count = perType[id, default: 0]
                    // The page ends before this sample, in seq order, so `next` skips nothing.
                    guard count < capped.maximumPageSize else { break }
                    perType[id] = count + 1
                }
                sampleIndex += 1
                added.append(try materialize(row))
                lastSeq = seq(row)
            } else {
                let tombstone = tombstones[tombstoneIndex]
                tombstoneIndex += 1
                if let gone = tombstone.deleted { deleted.append(gone) }
                lastSeq = tombstone.seq
            }
            taken += 1
        }
        let more = sampleIndex < rows.count || tombstoneIndex < tombstones.count
        self.init(added: added, deleted: deleted,
                  next: ChangePosition(seq: more ? lastSeq : max(position.seq, current), tombstoneFloor: position.tombstoneFloor),
                  more: more)
    }
}

public enum ChangeFeedError: Error, Sendable, Equatable {
    /// Tombstones after the anchor were purged (retention): the client must start over without one.
    case anchorExpired
}

extension HealthStore {
    /// Reads changes after `request.after` as `app` sees them.
    ///
    /// Why following `next` misses nothing and repeats nothing, even under concurrent writes:
    /// every seq is assigned inside the single writer's transaction and transactions commit one at
    /// a time, so seq order is commit order; a reader's snapshot therefore holds every change up to
    /// some seq and none after it (it can never see N+1 without N). A page lists everything in
    /// (after, next] of that snapshot: when it is full, `next` is its last change's seq; otherwise
    /// it is the snapshot's own sequence number, which no later commit can fall below.
    public func changes(_ request: ChangeRequest, for app: AppAuthorization, userExternalID: String) throws -> ChangePage {
        try pool.read { db in
            let current = try ChangeSequence.current(db)
            let position = request.after ?? ChangePosition(seq: 0, tombstoneFloor: current)
            let horizon = try db.firstInt64("SELECT seq FROM change_horizons WHERE user_id = ?", [.integer(app.userRowID)]) ?? 0
            if horizon > position.tombstonesAfter { throw ChangeFeedError.anchorExpired }
            let visibility = Self.visibilityCondition(types: request.types, app: app, sourceParameter: "?3",
                                                      code: { typeCode(for: $0) })
            let limit = request.limit

            var rows: [SampleRow] = []
            var tombstones: [(seq: Int64, deleted: DeletedSample?)] = []
            if let visibility {
                let sampleStatement = try db.prepare("""
                    SELECT \(Self.sampleColumns) FROM samples INDEXED BY samples_by_user_seq
                    WHERE user_id = ?1 AND seq > ?2 AND parent_seq IS NULL AND \(visibility)
                    ORDER BY seq LIMIT ?4
                    """)
                try sampleStatement.bind([.integer(app.userRowID), .integer(position.seq), .integer(app.sourceRowID),
                                          .integer(Int64(limit + 1))])
                try sampleStatement.forEachRow { rows.append(try SampleRow($0)) }
                let tombstoneStatement = try db.prepare("""
                    SELECT \(TombstoneColumn.selectList) FROM deleted_samples INDEXED BY deleted_by_user
                    WHERE user_id = ?1 AND seq > ?2 AND \(visibility)
                    ORDER BY seq LIMIT ?4
                    """)
                try tombstoneStatement.bind([.integer(app.userRowID), .integer(position.tombstonesAfter),
                                             .integer(app.sourceRowID), .integer(Int64(limit + 1))])
                try tombstoneStatement.forEachRow { row in
                    let type = typeName(for: try row.int64(TombstoneColumn.typeID)) ?? "unknown"
                    tombstones.append((seq: try row.int64(TombstoneColumn.seq),
                                       deleted: HealthUUID(bytes: try row.blob(TombstoneColumn.uuid)).map { DeletedSample(uuid: $0, type: type) }))
                }
            }
            return try ChangePage(merging: rows, seq: \.seq, type: { typeName(for: $0.typeCode) },
                                  tombstones: tombstones, after: position, current: current,
                                  limit: limit) { try materialize($0, db: db, userExternalID: userExternalID) }
        }
    }

    /// The position of "now": a client starting here sees only later changes. (One sequence numbers
    /// every user's changes here, so the user does not matter.)
    public func currentChangePosition(userRowID: Int64) throws -> ChangePosition {
        try pool.read { db in
            let current = try ChangeSequence.current(db)
            return ChangePosition(seq: current, tombstoneFloor: current)
        }
    }

    /// The SQL condition (over `type_id` and `source_id`, with `sourceParameter` the app's source)
    /// selecting the rows `app` may see among `types`: every source for readable types, its own rows
    /// for the rest (HealthKit's read privacy). Nil when nothing can match. Type codes are integers
    /// from the catalog map (`code`), never client text.
    package static func visibilityCondition(types: Set<String>?, app: AppAuthorization, sourceParameter own: String,
                                            code: (String) -> Int64?) -> String? {
        func codes(_ names: some Sequence<String>) -> [Int64] { names.compactMap(code).sorted() }
        func list(_ codes: [Int64]) -> String { codes.map(String.init).joined(separator: ",") }
        if let types {
            let all = codes(types)
            let readable = codes(app.access.readable(types))
            guard !all.isEmpty else { return nil }
            if readable.count == all.count { return "type_id IN (\(list(all)))" }
            if readable.isEmpty { return "(source_id = \(own) AND type_id IN (\(list(all))))" }
            return "(type_id IN (\(list(readable))) OR (source_id = \(own) AND type_id IN (\(list(all)))))"
        }
        let readable = codes(app.read)
        if readable.isEmpty { return "source_id = \(own)" }
        return "(type_id IN (\(list(readable))) OR source_id = \(own))"
    }

    // MARK: Tombstone retention

    /// Purges tombstones deleted before `cutoff` (Unix ms) and raises each affected user's horizon
    /// to the highest seq purged, so anchors older than that are answered 410. Returns how many.
    @discardableResult
    public func purgeTombstones(deletedBefore cutoff: Int64) throws -> Int {
        try pool.write { db in
            try db.execute("""
                INSERT INTO change_horizons (user_id, seq)
                SELECT user_id, max(seq) FROM deleted_samples WHERE deleted_ms < ? GROUP BY user_id
                ON CONFLICT(user_id) DO UPDATE SET seq = max(seq, excluded.seq)
                """, [.integer(cutoff)])
            // By seq rather than time: everything at or below the horizon goes, so the horizon
            // stays exact even if the clock stepped back between deletions.
            try db.execute("""
                DELETE FROM deleted_samples
                WHERE seq <= (SELECT h.seq FROM change_horizons h WHERE h.user_id = deleted_samples.user_id)
                """)
            return db.changes
        }
    }
}

/// The columns of `deleted_samples` the change feed reads, in SELECT order.
enum TombstoneColumn: Int, TableColumns {
    case seq, uuid, typeID

    static let table = "deleted_samples"

    var name: String {
        switch self {
        case .seq: "seq"
        case .uuid: "uuid"
        case .typeID: "type_id"
        }
    }
}
