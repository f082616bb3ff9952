import HealthStore
import PostgreSQL

// The person's switches per app (`app_grants`), which every token of the app reads its access
// from, and the permission requests of RFC 8628's device grant (`authorization_requests`).

extension PostgresHealthStore {
    /// Every source of the user with switches, oldest first, and what its tokens may read and share.
    public func appPermissions(userRowID: Int64) throws -> [AppPermissions] {
        let rows = try pool.withConnection { connection in
            try connection.map("""
                SELECT s.app, g.read_types, g.share_types FROM sources s
                LEFT JOIN app_grants g ON g.user_id = s.user_id AND g.app = s.app
                WHERE s.user_id = $1 ORDER BY s.id
                """, [.int64(userRowID)]) { row in try AppPermissions.row(row) }
        }
        return AppPermissions.folding(rows)
    }

    // MARK: Grants

    /// `lock`: take the row's lock (FOR UPDATE) for a read-modify-write.
    static func appGrant(_ connection: PostgresConnection, userRowID: Int64, app: String, lock: Bool) throws -> AppGrant? {
        try connection.first("SELECT \(AppGrantColumn.selectList) FROM app_grants WHERE user_id = $1 AND app = $2\(lock ? " FOR UPDATE" : "")",
                             [.int64(userRowID), .text(app)]) { row in try AppGrant(row: row) }
    }

    /// Inserts or replaces the grant (its `lastUsed` is the store's to write, and is kept).
    static func saveGrant(_ connection: PostgresConnection, userRowID: Int64, _ grant: AppGrant) throws {
        _ = try sourceRowID(connection, userRowID: userRowID, app: grant.app)
        try connection.execute(AppGrant.upsertSQL(.postgres), [
            .int64(userRowID), .text(grant.app), .text(grant.displayName),
            .text(StoredForms.typeListText(grant.read)), .text(StoredForms.typeListText(grant.share)),
            .text(StoredForms.typeListText(grant.decidedRead)), .text(StoredForms.typeListText(grant.decidedShare)),
            .int64(grant.created)])
    }

    public func appGrants(userRowID: Int64) throws -> [AppGrant] {
        try pool.withConnection { connection in
            try connection.map("""
                SELECT g.app, g.display_name, g.read_types, g.share_types, g.decided_read_types, g.decided_share_types,
                    g.created_ms, g.last_used_ms
                FROM app_grants g JOIN sources s ON s.user_id = g.user_id AND s.app = g.app
                WHERE g.user_id = $1 ORDER BY g.created_ms, s.id
                """, [.int64(userRowID)]) { row in try AppGrant(row: row) }
        }
    }

    public func updateAppGrant(userRowID: Int64, app: String, _ change: (inout AppGrant) throws -> Void) throws -> AppGrant? {
        var ended: Set<String> = []
        let saved = try pool.transaction { connection -> AppGrant? in
            ended = []
            guard let before = try Self.appGrant(connection, userRowID: userRowID, app: app, lock: true) else { return nil }
            var grant = before
            try change(&grant)
            grant.app = before.app
            try Self.saveGrant(connection, userRowID: userRowID, grant)
            if grant.changesAccess(from: before) { ended = try endTokens(connection, userRowID: userRowID, app: app) }
            return grant
        }
        forgetAuthorizations(ids: ended)
        return saved
    }

    public func revokeApp(userRowID: Int64, app: String) throws -> Bool {
        var ended: Set<String> = []
        let found = try pool.transaction { connection -> Bool in
            ended = []
            guard try Self.appGrant(connection, userRowID: userRowID, app: app, lock: true) != nil else { return false }
            ended = try endTokens(connection, userRowID: userRowID, app: app)
            try connection.execute("UPDATE authorizations SET revoked_ms = $1 WHERE user_id = $2 AND app = $3 AND revoked_ms IS NULL",
                                   [.int64(StoreClock.nowMilliseconds()), .int64(userRowID), .text(app)])
            // The revoked tokens' webhooks go with them, as with revokeAuthorization.
            for id in ended { _ = try Self.deleteWebhooks(connection, authorizationID: id) }
            try connection.execute("DELETE FROM app_grants WHERE user_id = $1 AND app = $2", [.int64(userRowID), .text(app)])
            return true
        }
        forgetAuthorizations(ids: ended)
        return found
    }

    /// A live token of `app` for `user` whose grant allows at least the given types (the seeder's
    /// and the backup's writers act as the admin does: they turn on what they name); a token is
    /// made when the app has none. Its secret is never shown: the caller only saves through it.
    public func appAuthorizationCreatingIfNeeded(user: User, app: String, read: Set<String>, share: Set<String>)
        throws -> AppAuthorization {
        var ended: Set<String> = []
        let existing = try pool.transaction { connection -> AppAuthorization? in
            ended = []
            guard let before = try Self.appGrant(connection, userRowID: user.rowID, app: app, lock: true),
                  let id = try connection.firstString("""
                      SELECT id FROM authorizations WHERE user_id = $1 AND app = $2 AND revoked_ms IS NULL ORDER BY created_ms LIMIT 1
                      """, [.int64(user.rowID), .text(app)]) else { return nil }
            var grant = before
            grant.turnOn(read: read, share: share)
            if grant.changesAccess(from: before) {
                try Self.saveGrant(connection, userRowID: user.rowID, grant)
                ended = try endTokens(connection, userRowID: user.rowID, app: app)
            }
            return try connection.first("SELECT \(Self.authorizationColumns) FROM \(Self.authorizationJoins) WHERE a.id = $1",
                                        [.text(id)]) { row in try AppAuthorization(row: row) }
        }
        forgetAuthorizations(ids: ended)
        if let existing { return existing }
        return try createAuthorization(user: user, app: app, read: read, share: share).authorization
    }

    // MARK: Permission requests

    static func saveAuthorizationRequest(_ connection: PostgresConnection, _ record: AuthorizationRequestRecord) throws {
        try connection.execute(AuthorizationRequestRecord.updateSQL(.postgres), [
            .int64(Int64(record.interval)), record.lastPoll.map(PostgresValue.int64) ?? .null, .text(record.state.rawValue),
            record.userRowID.map(PostgresValue.int64) ?? .null,
            .text(StoredForms.orderedTypeListText(record.grantedShare)), .text(StoredForms.orderedTypeListText(record.grantedRead)),
            .text(record.displayName), .text(record.id)])
    }

    public func createAuthorizationRequest(_ record: AuthorizationRequestRecord, deviceCodeHash: [UInt8]) throws -> Bool {
        try pool.transaction { connection -> Bool in
            try connection.execute("DELETE FROM authorization_requests WHERE created_ms < $1",
                                   [.int64(record.created - AuthorizationRequestRecord.retention)])
            return try connection.execute(AuthorizationRequestRecord.insertSQL(.postgres), [
                .text(record.id), .bytes(deviceCodeHash), .text(record.userCode), .text(record.app), .text(record.displayName),
                .text(record.reason), .text(StoredForms.orderedTypeListText(record.share)),
                .text(StoredForms.orderedTypeListText(record.read)), .int64(record.created), .int64(Int64(record.interval)),
                .text(record.state.rawValue)]) == 1
        }
    }

    public func authorizationRequest(userCode: String) throws -> AuthorizationRequestRecord? {
        try pool.withConnection { connection in
            try connection.first("SELECT \(AuthorizationRequestColumn.selectList) FROM authorization_requests WHERE user_code = $1",
                                 [.text(userCode)]) { row in try AuthorizationRequestRecord(row: row) }
        }
    }

    public func answerAuthorizationRequest(userCode: String, user: User,
                                           _ answer: (inout AuthorizationRequestRecord, inout AppGrant) throws -> Void) throws
        -> AuthorizationRequestRecord? {
        var ended: Set<String> = []
        let answered = try pool.transaction { connection -> AuthorizationRequestRecord? in
            ended = []
            guard var record = try connection.first("""
                SELECT \(AuthorizationRequestColumn.selectList) FROM authorization_requests WHERE user_code = $1 FOR UPDATE
                """, [.text(userCode)], { row in try AuthorizationRequestRecord(row: row) }) else { return nil }
            let before = try Self.appGrant(connection, userRowID: user.rowID, app: record.app, lock: true)
            var grant = before ?? AppGrant(app: record.app, displayName: record.displayName, created: StoreClock.nowMilliseconds())
            try answer(&record, &grant)
            grant.app = record.app
            try Self.saveAuthorizationRequest(connection, record)
            try Self.saveGrant(connection, userRowID: user.rowID, grant)
            if let before, grant.changesAccess(from: before) { ended = try endTokens(connection, userRowID: user.rowID, app: record.app) }
            return record
        }
        forgetAuthorizations(ids: ended)
        return answered
    }

    public func pollAuthorizationRequest(deviceCodeHash: [UInt8], _ poll: (inout AuthorizationRequestRecord) -> Bool) throws
        -> AuthorizationPollOutcome {
        // FOR UPDATE: a second node polling the same code waits for this transaction and then reads
        // its result (issued), so only one of them can make the token.
        try pool.transaction { connection -> AuthorizationPollOutcome in
            guard var record = try connection.first("""
                SELECT \(AuthorizationRequestColumn.selectList) FROM authorization_requests WHERE device_code_hash = $1 FOR UPDATE
                """, [.bytes(deviceCodeHash)], { row in try AuthorizationRequestRecord(row: row) }) else { return .unknown }
            guard poll(&record) else {
                try Self.saveAuthorizationRequest(connection, record)
                return .polled(record)
            }
            guard let userRowID = record.userRowID,
                  let user = try connection.first("SELECT \(UserColumn.selectList) FROM users WHERE id = $1", [.int64(userRowID)],
                                                  { row in try User(row: row) }),
                  let grant = try Self.appGrant(connection, userRowID: userRowID, app: record.app, lock: true) else {
                // The person revoked the app (or is gone) since they allowed: nothing to issue.
                record.state = .denied
                try Self.saveAuthorizationRequest(connection, record)
                return .polled(record)
            }
            record.state = .issued
            try Self.saveAuthorizationRequest(connection, record)
            let (authorization, token) = try Self.insertToken(connection, user: user, app: record.app, grant: grant, disclosesRead: false)
            return .issued(record, authorization: authorization, token: token)
        }
    }
}
