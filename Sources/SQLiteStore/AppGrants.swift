import HealthStore
import SQLite

// The person's switches per app (`app_grants`), which every token of the app reads its access
// from, and the permission requests of RFC 8628's device grant (`authorization_requests`).

extension SQLiteHealthStore {
    // MARK: Grants

    static func appGrant(_ db: Database, userRowID: Int64, app: String) throws -> AppGrant? {
        try db.first("SELECT \(AppGrantColumn.selectList) FROM app_grants WHERE user_id = ? AND app = ?",
                     [.integer(userRowID), .text(app)]) { row in try AppGrant(row: row) }
    }

    /// Inserts or replaces the grant (its `lastUsed` is the store's to write, and is kept).
    static func saveGrant(_ db: Database, userRowID: Int64, _ grant: AppGrant) throws {
        _ = try sourceRowID(db, userRowID: userRowID, app: grant.app)
        try db.execute(AppGrant.upsertSQL(.sqlite), [
            .integer(userRowID), .text(grant.app), .text(grant.displayName),
            .text(StoredForms.typeListText(grant.read)), .text(StoredForms.typeListText(grant.share)),
            .text(StoredForms.typeListText(grant.decidedRead)), .text(StoredForms.typeListText(grant.decidedShare)),
            .integer(grant.created)])
    }

    /// The user's live tokens, of one app or (nil) of every app.
    static func liveTokenIDs(_ db: Database, userRowID: Int64, app: String?) throws -> Set<String> {
        enum Column: Int, TableColumns {
            case id
            static let table = "authorizations"
        }
        return Set(try db.map(LiveTokenQuery.sql(.sqlite, ofOneApp: app != nil),
                              [.integer(userRowID)] + (app.map { [.text($0)] } ?? [])) { try $0.string(Column.id) })
    }

    public func liveAuthorizationIDs(userRowID: Int64, app: String?) throws -> Set<String> {
        try pool.read { db in try Self.liveTokenIDs(db, userRowID: userRowID, app: app) }
    }

    public func endInFlight(authorizationIDs: Set<String>) { forgetAuthorizations(ids: authorizationIDs) }

    public func appGrants(userRowID: Int64) throws -> [AppGrant] {
        try pool.read { db in
            try db.map("""
                SELECT g.app, g.display_name, g.read_types, g.share_types, g.decided_read_types, g.decided_share_types,
                    g.created_ms, g.last_used_ms
                FROM app_grants g JOIN sources s ON s.user_id = g.user_id AND s.app = g.app
                WHERE g.user_id = ? ORDER BY g.created_ms, s.id
                """, [.integer(userRowID)]) { row in try AppGrant(row: row) }
        }
    }

    public func updateAppGrant(userRowID: Int64, app: String, _ change: (inout AppGrant) throws -> Void) throws -> AppGrant? {
        var ended: Set<String> = []
        let saved = try pool.write { db -> AppGrant? in
            guard let before = try Self.appGrant(db, userRowID: userRowID, app: app) else { return nil }
            var grant = before
            try change(&grant)
            grant.app = before.app
            try Self.saveGrant(db, userRowID: userRowID, grant)
            if grant.changesAccess(from: before) {
                ended = try Self.liveTokenIDs(db, userRowID: userRowID, app: app)
                // Inside the write, as a revocation: the tokens' streams end before a later write commits.
                forgetAuthorizations(ids: ended)
            }
            return grant
        }
        forgetAuthorizations(ids: ended)
        return saved
    }

    public func revokeApp(userRowID: Int64, app: String) throws -> Bool {
        var ended: Set<String> = []
        let found = try pool.write { db -> Bool in
            guard try Self.appGrant(db, userRowID: userRowID, app: app) != nil else { return false }
            ended = try Self.liveTokenIDs(db, userRowID: userRowID, app: app)
            try db.execute("UPDATE authorizations SET revoked_ms = ? WHERE user_id = ? AND app = ? AND revoked_ms IS NULL",
                           [.integer(Self.nowMilliseconds()), .integer(userRowID), .text(app)])
            // The revoked tokens' webhooks go with them, as with revokeAuthorization.
            for id in ended { _ = try Self.deleteWebhooks(db, authorizationID: id) }
            try db.execute("DELETE FROM app_grants WHERE user_id = ? AND app = ?", [.integer(userRowID), .text(app)])
            forgetAuthorizations(ids: ended)
            return true
        }
        forgetAuthorizations(ids: ended)
        return found
    }

    /// Every source of the user with switches, oldest first, and what its tokens may read and share.
    public func appPermissions(userRowID: Int64) throws -> [AppPermissions] {
        try pool.read { db in
            let statement = try db.cachedStatement("""
                SELECT s.app, g.read_types, g.share_types FROM sources s
                LEFT JOIN app_grants g ON g.user_id = s.user_id AND g.app = s.app
                WHERE s.user_id = ? ORDER BY s.id
                """)
            try statement.bind([.integer(userRowID)])
            var rows: [(app: String, read: String?, share: String?)] = []
            try statement.forEachRow { row in rows.append(try AppPermissions.row(row)) }
            return AppPermissions.folding(rows)
        }
    }

    /// A live token of `app` for `user` whose grant allows at least the given types (the seeder's
    /// and the backup's writers act as the admin does: they turn on what they name); a token is
    /// made when the app has none. Its secret is never shown: the caller only saves through it.
    public func appAuthorizationCreatingIfNeeded(user: User, app: String, read: Set<String>, share: Set<String>)
        throws -> AppAuthorization {
        var ended: Set<String> = []
        let existing = try pool.write { db -> AppAuthorization? in
            guard let before = try Self.appGrant(db, userRowID: user.rowID, app: app),
                  let id = try db.firstString("""
                      SELECT id FROM authorizations WHERE user_id = ? AND app = ? AND revoked_ms IS NULL ORDER BY created_ms LIMIT 1
                      """, [.integer(user.rowID), .text(app)]) else { return nil }
            var grant = before
            grant.turnOn(read: read, share: share)
            if grant.changesAccess(from: before) {
                try Self.saveGrant(db, userRowID: user.rowID, grant)
                ended = try Self.liveTokenIDs(db, userRowID: user.rowID, app: app)
                forgetAuthorizations(ids: ended)
            }
            return try db.first("SELECT \(Self.authorizationColumns) FROM \(Self.authorizationJoins) WHERE a.id = ?",
                                [.text(id)]) { row in try AppAuthorization(row: row) }
        }
        forgetAuthorizations(ids: ended)
        if let existing { return existing }
        return try createAuthorization(user: user, app: app, read: read, share: share).authorization
    }

    // MARK: Permission requests

    /// Writes back what a poll or an answer changed.
    static func saveAuthorizationRequest(_ db: Database, _ record: AuthorizationRequestRecord) throws {
        try db.execute(AuthorizationRequestRecord.updateSQL(.sqlite), [
            .integer(Int64(record.interval)), record.lastPoll.map(SQLValue.integer) ?? .null, .text(record.state.rawValue),
            record.userRowID.map(SQLValue.integer) ?? .null,
            .text(StoredForms.orderedTypeListText(record.grantedShare)), .text(StoredForms.orderedTypeListText(record.grantedRead)),
            .text(record.displayName), .text(record.id)])
    }

    public func createAuthorizationRequest(_ record: AuthorizationRequestRecord, deviceCodeHash: [UInt8]) throws -> Bool {
        try pool.write { db -> Bool in
            try db.execute("DELETE FROM authorization_requests WHERE created_ms < ?",
                           [.integer(record.created - AuthorizationRequestRecord.retention)])
            try db.execute(AuthorizationRequestRecord.insertSQL(.sqlite), [
                .text(record.id), .blob(deviceCodeHash), .text(record.userCode), .text(record.app), .text(record.displayName),
                .text(record.reason), .text(StoredForms.orderedTypeListText(record.share)),
                .text(StoredForms.orderedTypeListText(record.read)), .integer(record.created), .integer(Int64(record.interval)),
                .text(record.state.rawValue)])
            return db.changes > 0
        }
    }

    public func authorizationRequest(userCode: String) throws -> AuthorizationRequestRecord? {
        try pool.read { db in
            try db.first("SELECT \(AuthorizationRequestColumn.selectList) FROM authorization_requests WHERE user_code = ?",
                         [.text(userCode)]) { row in try AuthorizationRequestRecord(row: row) }
        }
    }

    public func answerAuthorizationRequest(userCode: String, user: User,
                                           _ answer: (inout AuthorizationRequestRecord, inout AppGrant) throws -> Void) throws
        -> AuthorizationRequestRecord? {
        var ended: Set<String> = []
        let answered = try pool.write { db -> AuthorizationRequestRecord? in
            guard var record = try db.first("SELECT \(AuthorizationRequestColumn.selectList) FROM authorization_requests WHERE user_code = ?",
                                            [.text(userCode)], { row in try AuthorizationRequestRecord(row: row) }) else { return nil }
            let before = try Self.appGrant(db, userRowID: user.rowID, app: record.app)
            var grant = before ?? AppGrant(app: record.app, displayName: record.displayName, created: Self.nowMilliseconds())
            try answer(&record, &grant)
            grant.app = record.app
            try Self.saveAuthorizationRequest(db, record)
            try Self.saveGrant(db, userRowID: user.rowID, grant)
            if let before, grant.changesAccess(from: before) {
                ended = try Self.liveTokenIDs(db, userRowID: user.rowID, app: record.app)
                forgetAuthorizations(ids: ended)
            }
            return record
        }
        forgetAuthorizations(ids: ended)
        return answered
    }

    public func pollAuthorizationRequest(deviceCodeHash: [UInt8], _ poll: (inout AuthorizationRequestRecord) -> Bool) throws
        -> AuthorizationPollOutcome {
        // One writer: the read, the poll and the token are one transaction no other poll interleaves with.
        try pool.write { db -> AuthorizationPollOutcome in
            guard var record = try db.first("""
                SELECT \(AuthorizationRequestColumn.selectList) FROM authorization_requests WHERE device_code_hash = ?
                """, [.blob(deviceCodeHash)], { row in try AuthorizationRequestRecord(row: row) }) else { return .unknown }
            let issue = poll(&record)
            guard issue else {
                try Self.saveAuthorizationRequest(db, record)
                return .polled(record)
            }
            guard let userRowID = record.userRowID,
                  let user = try db.first("SELECT \(UserColumn.selectList) FROM users WHERE id = ?", [.integer(userRowID)], { row in try User(row: row) }),
                  let grant = try Self.appGrant(db, userRowID: userRowID, app: record.app) else {
                // The person revoked the app (or is gone) since they allowed: nothing to issue.
                record.state = .denied
                try Self.saveAuthorizationRequest(db, record)
                return .polled(record)
            }
            record.state = .issued
            try Self.saveAuthorizationRequest(db, record)
            let (authorization, token) = try Self.insertToken(db, user: user, app: record.app, grant: grant, disclosesRead: false)
            return .issued(record, authorization: authorization, token: token)
        }
    }
}
