import Crypto
import Foundation
import HealthStore
import PostgreSQL

extension PostgresHealthStore {
    static func newIdentifier() -> String { UUID().uuidString.lowercased() }

    // MARK: Users

    public func createUser(name: String) throws -> User {
        try pool.transaction { connection in
            if try connection.first("SELECT 1 FROM users WHERE name = $1", [.text(name)], { _ in true }) != nil {
                throw StoreError.conflict("a user named '\(name)' exists")
            }
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
            try connection.first("SELECT id, external_id, name FROM users WHERE name = $1", [.text(name)], Self.user)
        }
    }

    public func user(idOrName: String) throws -> User? {
        try pool.withConnection { connection in
            try connection.first("""
                SELECT id, external_id, name FROM users WHERE external_id = $1 OR name = $1
                ORDER BY external_id = $1 DESC LIMIT 1
                """, [.text(idOrName)], Self.user)
        }
    }

    private static func user(_ row: PostgresRow) throws -> User {
        enum Column: Int, TableColumns {
            case rowID, id, name
            static let table = "users"
        }
        return User(rowID: try row.int64(Column.rowID), id: try row.string(Column.id), name: try row.string(Column.name))
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

    public func createAuthorization(user: User, app: String, read: Set<String>, share: Set<String>, disclosesRead: Bool)
        throws -> (authorization: AppAuthorization, token: String) {
        let token = SecureRandom.token(prefix: "hdt_")
        let hash = TokenHashing.hash(token)
        let id = Self.newIdentifier()
        let authorization = try pool.transaction { connection -> AppAuthorization in
            let sourceRowID = try Self.sourceRowID(connection, userRowID: user.rowID, app: app)
            try connection.execute("""
                INSERT INTO authorizations (id, user_id, app, source_id, token_hash, read_types, share_types, created_ms, discloses_read)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                """, [.text(id), .int64(user.rowID), .text(app), .int64(sourceRowID), .bytes(hash),
                      .text(read.sorted().joined(separator: ",")), .text(share.sorted().joined(separator: ",")),
                      .int64(StoreClock.nowMilliseconds()), .bool(disclosesRead)])
            return AppAuthorization(id: id, userRowID: user.rowID, userID: user.id, appName: app, sourceRowID: sourceRowID,
                                    read: read, share: share, disclosesRead: disclosesRead)
        }
        return (authorization, token)
    }

    public func appAuthorizationCreatingIfNeeded(user: User, app: String, read: Set<String>, share: Set<String>)
        throws -> AppAuthorization {
        let candidates = try pool.withConnection { connection in
            try connection.map("""
                SELECT id, read_types, share_types, source_id, discloses_read FROM authorizations
                WHERE user_id = $1 AND app = $2 AND revoked_ms IS NULL ORDER BY created_ms
                """, [.int64(user.rowID), .text(app)]) { row in
                enum Column: Int, TableColumns {
                    case id, readTypes, shareTypes, sourceID, disclosesRead
                    static let table = "authorizations"
                }
                return AppAuthorization(id: try row.string(Column.id), userRowID: user.rowID, userID: user.id, appName: app,
                                        sourceRowID: try row.int64(Column.sourceID), read: StoredForms.typeList(try row.string(Column.readTypes)),
                                        share: StoredForms.typeList(try row.string(Column.shareTypes)), disclosesRead: try row.bool(Column.disclosesRead))
            }
        }
        if let existing = candidates.first(where: { read.isSubset(of: $0.read) && share.isSubset(of: $0.share) }) {
            return existing
        }
        return try createAuthorization(user: user, app: app, read: read, share: share).authorization
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
    func forgetAuthorization(id: String) {
        authorizationCache.withLock { cache in
            cache.entries = cache.entries.filter { $0.value.authorization.id != id }
            cache.generation &+= 1
        }
        for observer in authorizationObservers.withLock({ $0 }) { observer(id) }
    }

    public func addAuthorizationObserver(_ observer: @escaping @Sendable (String) -> Void) {
        authorizationObservers.withLock { $0.append(observer) }
    }

    public func liveAuthorizations(ids: Set<String>) throws -> [String: AppAuthorization] {
        guard !ids.isEmpty else { return [:] }
        let quoted = ids.sorted().map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        let found = try pool.withConnection { connection in
            try connection.map("""
                SELECT \(Self.authorizationColumns) FROM authorizations a JOIN users u ON u.id = a.user_id
                WHERE a.id = ANY($1::text[]) AND a.revoked_ms IS NULL
                """, [.text("{" + quoted.joined(separator: ",") + "}")]) { row in try Self.appAuthorization(row) }
        }
        return Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public func cachedAuthorization(tokenHash: [UInt8]) -> AppAuthorization? {
        let now = StoreClock.nowMilliseconds()
        return authorizationCache.withLock { cache in
            guard let entry = cache.entries[tokenHash], now - entry.readAt < Self.authorizationRevalidation else { return nil }
            cache.entries[tokenHash]?.usedAt = now
            return entry.authorization
        }
    }

    public func authorization(tokenHash: [UInt8]) throws -> AppAuthorization? {
        if let cached = cachedAuthorization(tokenHash: tokenHash) { return cached }
        let generation = authorizationCache.withLock { $0.generation }
        let readAt = StoreClock.nowMilliseconds()
        let found = try pool.withConnection { connection in
            try connection.first("""
                SELECT \(Self.authorizationColumns) FROM authorizations a JOIN users u ON u.id = a.user_id
                WHERE a.token_hash = $1 AND a.revoked_ms IS NULL
                """, [.bytes(tokenHash)]) { row in try Self.appAuthorization(row) }
        }
        authorizationCache.withLock { cache in
            guard cache.generation == generation else { return }
            if let found { cache.entries[tokenHash] = (found, readAt, readAt) } else { cache.entries[tokenHash] = nil }
        }
        return found
    }

    /// What `appAuthorization` reads, from `authorizations a JOIN users u`, in SELECT order; a
    /// query may add `tokenHash` (`a.token_hash`) after them.
    enum AuthorizationColumn: Int, TableColumns {
        case id, userID, userExternalID, app, readTypes, shareTypes, sourceID, disclosesRead, tokenHash

        static let table = "authorizations"
    }

    private static let authorizationColumns =
        "a.id, a.user_id, u.external_id, a.app, a.read_types, a.share_types, a.source_id, a.discloses_read"

    private static func appAuthorization(_ row: PostgresRow) throws -> AppAuthorization {
        AppAuthorization(id: try row.string(AuthorizationColumn.id), userRowID: try row.int64(AuthorizationColumn.userID),
                         userID: try row.string(AuthorizationColumn.userExternalID), appName: try row.string(AuthorizationColumn.app),
                         sourceRowID: try row.int64(AuthorizationColumn.sourceID),
                         read: StoredForms.typeList(try row.string(AuthorizationColumn.readTypes)),
                         share: StoredForms.typeList(try row.string(AuthorizationColumn.shareTypes)),
                         disclosesRead: try row.bool(AuthorizationColumn.disclosesRead))
    }

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
                SELECT \(Self.authorizationColumns), a.token_hash FROM authorizations a JOIN users u ON u.id = a.user_id
                WHERE a.token_hash = ANY(ARRAY(SELECT decode(h, 'hex') FROM unnest($1::text[]) AS h)) AND a.revoked_ms IS NULL
                """, [.text("{" + hashes.map { Hex.encode($0) }.joined(separator: ",") + "}")]) { row in
                (try row.bytes(AuthorizationColumn.tokenHash), try Self.appAuthorization(row))
            }
        }
        let found = Dictionary(confirmed, uniquingKeysWith: { first, _ in first })
        authorizationCache.withLock { cache in
            // A revocation meanwhile may be among the rows read: leave the entries to the next round.
            guard cache.generation == generation else { return }
            for hash in hashes {
                guard let entry = cache.entries[hash] else { continue }
                if let authorization = found[hash] {
                    cache.entries[hash] = (authorization, max(entry.readAt, readAt), entry.usedAt)
                } else {
                    cache.entries[hash] = nil
                }
            }
        }
    }

    /// How long after its last use a cached token is still confirmed by `refreshCachedAuthorizations`.
    static let authorizationRefreshWindow: Int64 = 60_000
}
