import HealthStore
import PostgreSQL

extension PostgresHealthStore {
    /// Every source of the user, oldest first, with the union of its live authorizations' permissions.
    public func appPermissions(userRowID: Int64) throws -> [AppPermissions] {
        let rows = try pool.withConnection { connection in
            try connection.map("""
                SELECT s.app, a.read_types, a.share_types FROM sources s
                LEFT JOIN authorizations a ON a.user_id = s.user_id AND a.source_id = s.id AND a.revoked_ms IS NULL
                WHERE s.user_id = $1 ORDER BY s.id, a.created_ms
                """, [.int64(userRowID)]) { row -> (app: String, read: String?, share: String?) in
                (try row.string(AppPermissionsColumn.app), try row.stringIfPresent(AppPermissionsColumn.readTypes),
                 try row.stringIfPresent(AppPermissionsColumn.shareTypes))
            }
        }
        return AppPermissions.folding(rows)
    }
}

/// A source and one of its live authorizations' permissions (`s.app, a.read_types, a.share_types`).
enum AppPermissionsColumn: Int, TableColumns {
    case app, readTypes, shareTypes

    static let table = "authorizations"
}
