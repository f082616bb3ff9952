import HealthModel
import HealthStore
import PostgreSQL

extension PostgresHealthStore {
    /// Changes after `request.after` that `visibility` sees, read in one snapshot.
    ///
    /// Why following `next` misses nothing and repeats nothing with several nodes writing: a
    /// user's change numbers are handed out under their counter row's lock, held until COMMIT, so
    /// the user's transactions commit in number order; a snapshot that sees the counter at N sees
    /// every change up to N and none after it.
    public func changes(_ request: ChangeRequest, visibility: ReadVisibility) throws -> ChangePage {
        try pool.read { connection in
            let current = try Self.currentChangeNumber(userRowID: visibility.userRowID, connection)
            let position = request.after ?? ChangePosition(seq: 0, tombstoneFloor: current)
            let horizon = try connection.scalarInt64("SELECT seq FROM change_horizons WHERE user_id = $1", [.int64(visibility.userRowID)]) ?? 0
            if horizon > position.tombstonesAfter { throw ChangeFeedError.anchorExpired }
            let limit = request.limit
            var rows: [SampleRow] = []
            var tombstones: [(seq: Int64, deleted: DeletedSample?)] = []
            if let condition = visibility.condition(types: request.types, sourceParameter: "$3", code: { typeCode(for: $0) }) {
                rows = try connection.map("""
                    SELECT \(SampleRow.selectList) FROM samples
                    WHERE user_id = $1 AND seq > $2 AND parent_seq IS NULL AND \(condition)
                    ORDER BY seq LIMIT $4
                    """, [.int64(visibility.userRowID), .int64(position.seq), .int64(visibility.ownSource), .int64(Int64(limit + 1))],
                    SampleRow.init)
                tombstones = try connection.map("""
                    SELECT \(TombstoneColumn.selectList) FROM deleted_samples
                    WHERE user_id = $1 AND seq > $2 AND \(condition)
                    ORDER BY seq LIMIT $4
                    """, [.int64(visibility.userRowID), .int64(position.tombstonesAfter), .int64(visibility.ownSource), .int64(Int64(limit + 1))]) { row in
                    try DeletedSample.tombstone(row, typeName: { typeName(for: $0) })
                }
            }
            var materializer = Materializer(store: self, connection: connection, userRowID: visibility.userRowID,
                                            userExternalID: visibility.userExternalID)
            return try ChangePage(merging: rows, seq: \.seq, type: { typeName(for: $0.typeCode) },
                                  tombstones: tombstones, after: position, current: current,
                                  limit: limit) { try materializer.sample($0) }
        }
    }

    public func currentChangePosition(userRowID: Int64) throws -> ChangePosition {
        try pool.withConnection { connection in
            let current = try Self.currentChangeNumber(userRowID: userRowID, connection)
            return ChangePosition(seq: current, tombstoneFloor: current)
        }
    }

    /// Purges tombstones deleted before `cutoff` and raises each affected user's horizon to the
    /// highest seq purged (by seq, so the horizon stays exact if a node's clock stepped back). A
    /// maintenance statement over every user on purpose; each row it touches is one user's.
    @discardableResult
    public func purgeTombstones(deletedBefore cutoff: Int64) throws -> Int {
        try pool.transaction { connection in
            try connection.execute("""
                INSERT INTO change_horizons (user_id, seq)
                SELECT user_id, max(seq) FROM deleted_samples WHERE deleted_ms < $1 GROUP BY user_id
                ON CONFLICT (user_id) DO UPDATE SET seq = greatest(change_horizons.seq, excluded.seq)
                """, [.int64(cutoff)])
            return try connection.execute("""
                DELETE FROM deleted_samples d USING change_horizons h
                WHERE h.user_id = d.user_id AND d.seq <= h.seq
                """, [])
        }
    }
}
