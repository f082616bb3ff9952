import Crypto
import Foundation
import HealthStore
import PostgreSQL

extension PostgresHealthStore {
    static func newIdentifier() -> String { UUID().uuidString.lowercased() }

    // MARK: Users

    public func createUser(name: String) throws -> User {
        try pool.transaction { connection in
            // Creations queue on one transaction lock, so two nodes cannot both find no lookalike;
            // every name is compared (a person's account is made rarely, and people are few).
            _ = try connection.execute("SELECT pg_advisory_xact_lock(hashtext('healthd.users'), hashtext(current_schema()))", [])
            let names = try connection.map("SELECT \(UserColumn.selectList) FROM users", []) { row in try User(row: row).name }
            if let existing = LookalikeNames.existing(name, among: names) { throw StoreError.nameTaken(name, by: existing) }
            // A random positive 63-bit id (no sequence shared by the nodes); a collision, or a
            // node creating the same name meanwhile, inserts nothing and is told apart below.
            for _ in 0..<4 {
                let rowID = Int64.random(in: 1...Int64.max)
                let id = Self.newIdentifier()
                let inserted = try connection.execute("""
                    INSERT INTO users (id, external_id, name, created_ms) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING
                    """, [.int64(rowID), .text(id), .text(name), .int64(StoreClock.nowMilliseconds())])
                if inserted == 1 { return User(rowID: rowID, id: id, name: name) }
                if try connection.first("SELECT 1 FROM users WHERE name = $1", [.text(name)], { _ in true }) != nil {
                    throw StoreError.conflict("a user named '\(name)' exists")
                }
            }
            throw StoreError.conflict("no free user id was found for '\(name)'")
        }
    }

    public func user(named name: String) throws -> User? {
        try pool.withConnection { connection in
            try connection.first("SELECT \(UserColumn.selectList) FROM users WHERE name = $1", [.text(name)]) { row in try User(row: row) }
        }
    }

    public func user(idOrName: String) throws -> User? {
        try pool.withConnection { connection in
            try connection.first("""
                SELECT \(UserColumn.selectList) FROM users WHERE external_id = $1 OR name = $1
                ORDER BY external_id = $1 DESC LIMIT 1
                """, [.text(idOrName)]) { row in try User(row: row) }
        }
    }

    // MARK: Sources

    /// The app's source number for the user, made if missing. Numbers are per user (1, 2, ...):
    /// two writers numbering at once collide on the key, and the loser reads the winner's row.
    static func sourceRowID(_ connection: PostgresConnection, userRowID: Int64, app: String) throws -> Int64 {
        for _ in 0..<4 {
            if let id = try connection.scalarInt64("SELECT id FROM sources WHERE user_id = $1 AND app = $2",
                                                   [.int64(userRowID), .text(app)]) {
                return id
            }
            // A write of an erased user (its token was in flight) makes no source: the erasure holds
            // the user's row until it commits, and then the row is gone.
            guard try connection.scalarInt64("SELECT 1 FROM users WHERE id = $1 FOR SHARE", [.int64(userRowID)]) != nil else {
                throw AccountErased()
            }
            try connection.execute("""
                INSERT INTO sources (user_id, id, app)
                SELECT $1, coalesce(max(id), 0) + 1, $2 FROM sources WHERE user_id = $1
                ON CONFLICT DO NOTHING
                """, [.int64(userRowID), .text(app)])
        }
        throw StoreError.conflict("source for app '\(app)' could not be numbered")
    }

    /// Source number -> app name for one user.
    static func appNames(_ connection: PostgresConnection, userRowID: Int64) throws -> [Int64: String] {
        var names: [Int64: String] = [:]
        for (id, app) in try connection.map("SELECT id, app FROM sources WHERE user_id = $1", [.int64(userRowID)],
                                            { (try $0.int64(SourceColumn.id), try $0.string(SourceColumn.app)) }) {
            names[id] = app
        }
        return names
    }

    // MARK: Authorizations

    /// The admin acts for the person: the switches it names are turned on in the person's grant for
    /// the app (made if missing), and the token, like every token of the app, follows the grant.
    public func createAuthorization(user: User, app: String, read: Set<String>, share: Set<String>, disclosesRead: Bool)
        throws -> (authorization: AppAuthorization, token: String) {
        var ended: Set<String> = []
        let created = try pool.transaction { connection -> (AppAuthorization, String) in
            // The user was looked up before this transaction: held here (an erasure under way is
            // waited for), an erased user leaves no one to authorize and no row behind.
            guard try connection.scalarInt64("SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE", [.int64(user.rowID)]) != nil else {
                throw StoreError.notFound("no user \(user.id)")
            }
            let before = try Self.appGrant(connection, userRowID: user.rowID, app: app, lock: true)
            var grant = before ?? AppGrant(app: app, displayName: app, created: StoreClock.nowMilliseconds())
            grant.turnOn(read: read, share: share)
            try Self.saveGrant(connection, userRowID: user.rowID, grant)
            if let before, grant.changesAccess(from: before) {
                ended = try endTokens(connection, userRowID: user.rowID, app: app)
            }
            return try Self.insertToken(connection, user: user, app: app, grant: grant, disclosesRead: disclosesRead)
        }
        forgetAuthorizations(ids: ended)
        return created
    }

    /// A new token row for `app`, reading its access from `grant` (which must be saved).
    static func insertToken(_ connection: PostgresConnection, user: User, app: String, grant: AppGrant, disclosesRead: Bool)
        throws -> (authorization: AppAuthorization, token: String) {
        let token = SecureRandom.token(prefix: "hdt_")
        let id = newIdentifier()
        let sourceRowID = try sourceRowID(connection, userRowID: user.rowID, app: app)
        // read_types/share_types record what the token was made with; its access is the grant's.
        try connection.execute("""
            INSERT INTO authorizations (id, user_id, app, source_id, token_hash, read_types, share_types, created_ms, discloses_read)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            """, [.text(id), .int64(user.rowID), .text(app), .int64(sourceRowID), .bytes(TokenHashing.hash(token)),
                  .text(StoredForms.typeListText(grant.read)), .text(StoredForms.typeListText(grant.share)),
                  .int64(StoreClock.nowMilliseconds()), .bool(disclosesRead)])
        return (AppAuthorization(id: id, userRowID: user.rowID, userID: user.id, appName: app, sourceRowID: sourceRowID,
                                 read: grant.read, share: grant.share, disclosesRead: disclosesRead), token)
    }

    /// Marks the row revoked and announces it (in the same transaction) to every node, which drop
    /// their cached copy when the NOTIFY arrives; this node drops its own before returning.
    public func revokeAuthorization(id: String) throws -> Bool {
        let revoked = try pool.transaction { connection -> Bool in
            let changed = try connection.execute("UPDATE authorizations SET revoked_ms = $1 WHERE id = $2 AND revoked_ms IS NULL",
                                                 [.int64(StoreClock.nowMilliseconds()), .text(id)])
            guard changed > 0 else { return false }
            // Its webhooks go with it, in the same transaction.
            _ = try Self.deleteWebhooks(connection, authorizationID: id)
            try connection.execute("SELECT pg_notify($1, $2)", [.text(channel), .text("r \(id)")])
            // Before the commit, so this node's streams of the token have ended before any later
            // write of this node commits (other nodes hear the NOTIFY before later commits' ones).
            forgetAuthorization(id: id)
            return true
        }
        if revoked { forgetAuthorization(id: id) }
        return revoked
    }

    /// Drops the cached token and tells the authorization observers (this node's streams).
    func forgetAuthorization(id: String) { forgetAuthorizations(ids: [id]) }

    func forgetAuthorizations(ids: Set<String>) {
        guard !ids.isEmpty else { return }
        authorizationCache.withLock { cache in
            cache.entries = cache.entries.filter { !ids.contains($0.value.authorization.id) }
            cache.generation &+= 1
        }
        let observers = authorizationObservers.withLock { $0 }
        for id in ids.sorted() {
            for observer in observers { observer(id) }
        }
    }

    /// The live tokens of the app, announced (in the calling transaction) to every node as ended,
    /// and ended on this node before the commit: their access changed.
    func endTokens(_ connection: PostgresConnection, userRowID: Int64, app: String) throws -> Set<String> {
        let ids = try Self.liveTokenIDs(connection, userRowID: userRowID, app: app)
        for id in ids.sorted() { try connection.execute("SELECT pg_notify($1, $2)", [.text(channel), .text("r \(id)")]) }
        forgetAuthorizations(ids: ids)
        return ids
    }

    /// The user's live tokens, of one app or (nil) of every app.
    static func liveTokenIDs(_ connection: PostgresConnection, userRowID: Int64, app: String?) throws -> Set<String> {
        enum Column: Int, TableColumns {
            case id
            static let table = "authorizations"
        }
        return Set(try connection.map(LiveTokenQuery.sql(.postgres, ofOneApp: app != nil),
                                      [.int64(userRowID)] + (app.map { [.text($0)] } ?? [])) { try $0.string(Column.id) })
    }

    public func liveAuthorizationIDs(userRowID: Int64, app: String?) throws -> Set<String> {
        try pool.withConnection { connection in try Self.liveTokenIDs(connection, userRowID: userRowID, app: app) }
    }

    /// This node only: other nodes hear of the revocation when it commits (its NOTIFY).
    public func endInFlight(authorizationIDs: Set<String>) { forgetAuthorizations(ids: authorizationIDs) }

    public func addAuthorizationObserver(_ observer: @escaping @Sendable (String) -> Void) {
        authorizationObservers.withLock { $0.append(observer) }
    }

    public func liveAuthorizations(ids: Set<String>) throws -> [String: AppAuthorization] {
        guard !ids.isEmpty else { return [:] }
        let quoted = ids.sorted().map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        let found = try pool.withConnection { connection in
            try connection.map("""
                SELECT \(Self.authorizationColumns) FROM \(Self.authorizationJoins)
                WHERE a.id = ANY($1::text[]) AND a.revoked_ms IS NULL
                """, [.text("{" + quoted.joined(separator: ",") + "}")]) { row in try AppAuthorization(row: row) }
        }
        return Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public func cachedAuthorization(tokenHash: [UInt8]) -> AppAuthorization? {
        let now = StoreClock.nowMilliseconds()
        let (found, due) = authorizationCache.withLock { cache -> (AppAuthorization?, Bool) in
            guard let entry = cache.entries[tokenHash], now - entry.readAt < Self.authorizationRevalidation else { return (nil, false) }
            cache.entries[tokenHash]?.usedAt = now
            guard UsageStamp.isDue(lastWritten: entry.usageWritten, now: now) else { return (entry.authorization, false) }
            cache.entries[tokenHash]?.usageWritten = now
            return (entry.authorization, true)
        }
        if due, let found { recordUse(found, at: now) }
        return found
    }

    public func authorization(tokenHash: [UInt8]) throws -> AppAuthorization? {
        if let cached = cachedAuthorization(tokenHash: tokenHash) { return cached }
        let generation = authorizationCache.withLock { $0.generation }
        let readAt = StoreClock.nowMilliseconds()
        let found = try pool.withConnection { connection in
            try connection.first("""
                SELECT \(Self.authorizationColumns) FROM \(Self.authorizationJoins)
                WHERE a.token_hash = $1 AND a.revoked_ms IS NULL
                """, [.bytes(tokenHash)]) { row in try AppAuthorization(row: row) }
        }
        let due = authorizationCache.withLock { cache -> Bool in
            let written = cache.entries[tokenHash]?.usageWritten
            let due = UsageStamp.isDue(lastWritten: written, now: readAt)
            guard cache.generation == generation else { return due }
            if let found { cache.entries[tokenHash] = (found, readAt, readAt, due ? readAt : written) } else { cache.entries[tokenHash] = nil }
            return due
        }
        if due, let found { recordUse(found, at: readAt) }
        return found
    }

    /// What `AppAuthorization(row:)` reads (`AuthorizationColumn`); a query may add `a.token_hash` after them.
    static let authorizationColumns =
        "a.id, a.user_id, u.external_id, a.app, g.read_types, g.share_types, a.source_id, a.discloses_read"

    /// A token with its user and its app's grant, where its access comes from.
    static let authorizationJoins = """
        authorizations a JOIN users u ON u.id = a.user_id JOIN app_grants g ON g.user_id = a.user_id AND g.app = a.app
        """

    /// Writes that the token was used at `now` (its row's and its app's `last_used_ms`), off the
    /// request's path. A failed write only leaves "last used" older.
    func recordUse(_ authorization: AppAuthorization, at now: Int64) {
        usageWriter.async { [pool] in
            _ = try? pool.transaction { connection in
                try connection.execute("UPDATE authorizations SET last_used_ms = greatest(last_used_ms, $1) WHERE id = $2",
                                       [.int64(now), .text(authorization.id)])
                try connection.execute("""
                    UPDATE app_grants SET last_used_ms = greatest(last_used_ms, $1) WHERE user_id = $2 AND app = $3
                    """, [.int64(now), .int64(authorization.userRowID), .text(authorization.appName)])
            }
        }
    }

    /// Waits until the uses recorded so far are written (tests).
    package func waitForUsageWrites() { usageWriter.sync {} }

    /// Confirms every cached token used within `authorizationRefreshWindow` in one statement (a
    /// revoked or deleted one is dropped) and forgets the others. Run every half
    /// `authorizationRevalidation` by a node that listens, so a token in steady use is never
    /// older than the bound and its requests never wait for a read: a dashboard polling many users
    /// less often than every 5 s would otherwise read each token again on every poll. The bound
    /// itself is unchanged: an entry not confirmed within it (this refresh failing, the database
    /// away) is read again by the request, as before.
    func refreshCachedAuthorizations() throws {
        let now = StoreClock.nowMilliseconds()
        let (hashes, generation) = authorizationCache.withLock { cache in
            cache.entries = cache.entries.filter { now - $0.value.usedAt < Self.authorizationRefreshWindow }
            return (Array(cache.entries.keys), cache.generation)
        }
        guard !hashes.isEmpty else { return }
        let readAt = StoreClock.nowMilliseconds()
        let confirmed = try pool.withConnection { connection in
            try connection.map("""
                SELECT \(Self.authorizationColumns), a.token_hash FROM \(Self.authorizationJoins)
                WHERE a.token_hash = ANY(ARRAY(SELECT decode(h, 'hex') FROM unnest($1::text[]) AS h)) AND a.revoked_ms IS NULL
                """, [.text("{" + hashes.map { Hex.encode($0) }.joined(separator: ",") + "}")]) { row in
                (try row.bytes(AuthorizationColumn.tokenHash), try AppAuthorization(row: row))
            }
        }
        let found = Dictionary(confirmed, uniquingKeysWith: { first, _ in first })
        authorizationCache.withLock { cache in
            // A revocation meanwhile may be among the rows read: leave the entries to the next round.
            guard cache.generation == generation else { return }
            for hash in hashes {
                guard let entry = cache.entries[hash] else { continue }
                if let authorization = found[hash] {
                    cache.entries[hash] = (authorization, max(entry.readAt, readAt), entry.usedAt, entry.usageWritten)
                } else {
                    cache.entries[hash] = nil
                }
            }
        }
    }

    /// How long after its last use a cached token is still confirmed by `refreshCachedAuthorizations`.
    static let authorizationRefreshWindow: Int64 = 60_000
}
