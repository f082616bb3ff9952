import HealthStore
import SQLite

extension SQLiteHealthStore {
    /// Every source of the user, oldest first, with the union of its live authorizations' permissions.
    public func appPermissions(userRowID: Int64) throws -> [AppPermissions] {
        try pool.read { db in
            let statement = try db.cachedStatement("""
                SELECT s.app, a.read_types, a.share_types FROM sources s
                LEFT JOIN authorizations a ON a.user_id = s.user_id AND a.app = s.app AND a.revoked_ms IS NULL
                WHERE s.user_id = ? ORDER BY s.id, a.created_ms
                """)
            try statement.bind([.integer(userRowID)])
            var rows: [(app: String, read: String?, share: String?)] = []
            try statement.forEachRow { row in
                rows.append((try row.string(at: 0), row.stringIfPresent(at: 1), row.stringIfPresent(at: 2)))
            }
            return AppPermissions.folding(rows)
        }
    }
}
