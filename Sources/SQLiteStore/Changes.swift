import HealthStore
import HealthModel
import SQLite

extension SQLiteHealthStore {
    /// Reads changes after `request.after` that `visibility` sees.
    ///
    /// Why following `next` misses nothing and repeats nothing, even under concurrent writes:
    /// every seq is assigned inside the single writer's transaction and transactions commit one at
    /// a time, so seq order is commit order; a reader's snapshot therefore holds every change up to
    /// some seq and none after it (it can never see N+1 without N). A page lists everything in
    /// (after, next] of that snapshot: when it is full, `next` is its last change's seq; otherwise
    /// it is the snapshot's own sequence number, which no later commit can fall below.
    public func changes(_ request: ChangeRequest, visibility: ReadVisibility) throws -> ChangePage {
        try pool.read { db in
            let current = try ChangeSequence.current(db)
            let position = request.after ?? ChangePosition(seq: 0, tombstoneFloor: current)
            let horizon = try db.firstInt64("SELECT seq FROM change_horizons WHERE user_id = ?", [.integer(visibility.userRowID)]) ?? 0
            if horizon > position.tombstonesAfter { throw ChangeFeedError.anchorExpired }
            let condition = visibility.condition(types: request.types, sourceParameter: "?3", code: { typeCode(for: $0) })
            let limit = request.limit

            var rows: [SampleRow] = []
            var tombstones: [(seq: Int64, deleted: DeletedSample?)] = []
            if let condition {
                let sampleStatement = try db.prepare("""
                    SELECT \(Self.sampleColumns) FROM samples INDEXED BY samples_by_user_seq
                    WHERE user_id = ?1 AND seq > ?2 AND parent_seq IS NULL AND \(condition)
                    ORDER BY seq LIMIT ?4
                    """)
                try sampleStatement.bind([.integer(visibility.userRowID), .integer(position.seq), .integer(visibility.ownSource),
                                          .integer(Int64(limit + 1))])
                try sampleStatement.forEachRow { rows.append(try SampleRow($0)) }
                let tombstoneStatement = try db.prepare("""
                    SELECT \(TombstoneColumn.selectList) FROM deleted_samples INDEXED BY deleted_by_user
                    WHERE user_id = ?1 AND seq > ?2 AND \(condition)
                    ORDER BY seq LIMIT ?4
                    """)
                try tombstoneStatement.bind([.integer(visibility.userRowID), .integer(position.tombstonesAfter),
                                             .integer(visibility.ownSource), .integer(Int64(limit + 1))])
                try tombstoneStatement.forEachRow { row in
                    tombstones.append(try DeletedSample.tombstone(row, typeName: { typeName(for: $0) }))
                }
            }
            return try ChangePage(merging: rows, seq: \.seq, type: { typeName(for: $0.typeCode) },
                                  tombstones: tombstones, after: position, current: current,
                                  limit: limit) { try materialize($0, db: db, userExternalID: visibility.userExternalID) }
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
