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
                rows.append((try row.string(AppPermissionsColumn.app), row.stringIfPresent(AppPermissionsColumn.readTypes),
                             row.stringIfPresent(AppPermissionsColumn.shareTypes)))
            }
            return AppPermissions.folding(rows)
        }
    }
}

/// A source and one of its live authorizations' permissions (`s.app, a.read_types, a.share_types`).
enum AppPermissionsColumn: Int, TableColumns {
    case app, readTypes, shareTypes

    static let table = "authorizations"
}
