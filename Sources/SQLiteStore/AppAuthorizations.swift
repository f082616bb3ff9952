import HealthStore
import SQLite

// Server-side writers (`healthd seed`, `serve --demo`) act as ordinary apps. They need an
// authorization to save through, but never its token, so an existing one is reused.

extension SQLiteHealthStore {
    /// A live authorization of `app` for `user` that may read and share at least the given types;
    /// created (with exactly those permissions) when there is none. Created tokens are never shown:
    /// the caller only saves through the returned authorization.
    public func appAuthorizationCreatingIfNeeded(user: User, app: String, read: Set<String>, share: Set<String>)
        throws -> AppAuthorization {
        let candidates = try pool.read { db -> [AppAuthorization] in
            let statement = try db.cachedStatement("""
                SELECT a.id, a.read_types, a.share_types, s.id, a.discloses_read FROM authorizations a
                JOIN sources s ON s.user_id = a.user_id AND s.app = a.app
                WHERE a.user_id = ? AND a.app = ? AND a.revoked_ms IS NULL ORDER BY a.created_ms
                """)
            try statement.bind([.integer(user.rowID), .text(app)])
            var found: [AppAuthorization] = []
            enum Column: Int, TableColumns {
                case id, readTypes, shareTypes, sourceID, disclosesRead
                static let table = "authorizations"
            }
            try statement.forEachRow { row in
                found.append(AppAuthorization(id: try row.string(Column.id), userRowID: user.rowID, userID: user.id, appName: app,
                                              sourceRowID: try row.int64(Column.sourceID), read: StoredForms.typeList(try row.string(Column.readTypes)),
                                              share: StoredForms.typeList(try row.string(Column.shareTypes)),
                                              disclosesRead: try row.bool(Column.disclosesRead)))
            }
            return found
        }
        if let existing = candidates.first(where: { read.isSubset(of: $0.read) && share.isSubset(of: $0.share) }) {
            return existing
        }
        return try createAuthorization(user: user, app: app, read: read, share: share).authorization
    }

    /// How many samples (top-level and correlation objects) of `type` the user has from `app`.
    public func sampleCount(userRowID: Int64, type: String, app: String) throws -> Int {
        guard let typeCode = typeCode(for: type) else { return 0 }
        return try pool.read { db in
            Int(try db.firstInt64("""
                SELECT count(*) FROM samples WHERE user_id = ? AND type_id = ?
                AND source_id = (SELECT id FROM sources WHERE user_id = ? AND app = ?)
                """, [.integer(userRowID), .integer(typeCode), .integer(userRowID), .text(app)]) ?? 0)
        }
    }
}
