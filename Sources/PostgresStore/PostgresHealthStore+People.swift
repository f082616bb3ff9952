import HealthStore
import PostgreSQL

// People: passwords, invitations, sessions and failed sign-ins (`PeopleAccounts`). Nothing here is
// cached: every node reads the rows, so another node's sign-out or password change holds on the
// very next request.

extension PostgresHealthStore {
    public func signInAccount(name: String) throws -> SignInAccount? {
        try pool.withConnection { connection in
            try connection.first("SELECT \(SignInAccountColumn.selectList) FROM users WHERE name = $1", [.text(name)]) { row in
                try SignInAccount(row: row)
            }
        }
    }

    public func setPassword(userRowID: Int64, hash: String) throws {
        try pool.withConnection { connection in
            _ = try connection.execute("UPDATE users SET password_hash = $1 WHERE id = $2", [.text(hash), .int64(userRowID)])
        }
    }

    public func changePassword(userRowID: Int64, hash: String, keepingSession tokenHash: [UInt8]) throws {
        try pool.transaction { connection in
            _ = try connection.execute("UPDATE users SET password_hash = $1 WHERE id = $2", [.text(hash), .int64(userRowID)])
            _ = try connection.execute("DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2", [.int64(userRowID), .bytes(tokenHash)])
        }
    }

    public func createInvitation(userRowID: Int64, codeHash: [UInt8], expiresMs: Int64) throws {
        try pool.withConnection { connection in
            _ = try connection.execute("""
                INSERT INTO invitations (user_id, code_hash, created_ms, expires_ms) VALUES ($1, $2, $3, $4)
                ON CONFLICT (user_id) DO UPDATE SET code_hash = excluded.code_hash, created_ms = excluded.created_ms,
                    expires_ms = excluded.expires_ms
                """, [.int64(userRowID), .bytes(codeHash), .int64(StoreClock.nowMilliseconds()), .int64(expiresMs)])
        }
    }

    public func invitation(codeHash: [UInt8], nowMs: Int64) throws -> User? {
        try pool.withConnection { connection in
            try connection.first("""
                SELECT u.id, u.external_id, u.name FROM invitations i JOIN users u ON u.id = i.user_id
                WHERE i.code_hash = $1 AND i.expires_ms > $2
                """, [.bytes(codeHash), .int64(nowMs)]) { row in try User(row: row) }
        }
    }

    public func redeemInvitation(codeHash: [UInt8], userRowID: Int64, passwordHash: String, nowMs: Int64) throws -> Bool {
        try pool.transaction { connection in
            // The DELETE takes the row's lock: of two activations at once, the second deletes nothing.
            let deleted = try connection.execute("DELETE FROM invitations WHERE code_hash = $1 AND user_id = $2 AND expires_ms > $3",
                                                 [.bytes(codeHash), .int64(userRowID), .int64(nowMs)])
            guard deleted == 1 else { return false }
            _ = try connection.execute("UPDATE users SET password_hash = $1 WHERE id = $2", [.text(passwordHash), .int64(userRowID)])
            // A new invitation is also how an admin resets a forgotten password: no old session survives it.
            _ = try connection.execute("DELETE FROM sessions WHERE user_id = $1", [.int64(userRowID)])
            return true
        }
    }

    public func createSession(userRowID: Int64, tokenHash: [UInt8], nowMs: Int64) throws {
        try pool.transaction { connection in
            // The person's sessions idle past their lifetime go: no cookie can use them any more.
            _ = try connection.execute("DELETE FROM sessions WHERE user_id = $1 AND last_used_ms <= $2",
                                       [.int64(userRowID), .int64(nowMs - PeopleAccounts.sessionIdleMilliseconds)])
            _ = try connection.execute("INSERT INTO sessions (token_hash, user_id, created_ms, last_used_ms) VALUES ($1, $2, $3, $3)",
                                       [.bytes(tokenHash), .int64(userRowID), .int64(nowMs)])
        }
    }

    /// The columns `session` reads, from `sessions s JOIN users u`, in SELECT order.
    private enum SessionColumn: Int, TableColumns {
        case rowID, id, name, createdMs, lastUsedMs
        static let table = "sessions"
    }

    public func session(tokenHash: [UInt8]) throws -> StoredSession? {
        try pool.withConnection { connection in
            try connection.first("""
                SELECT u.id, u.external_id, u.name, s.created_ms, s.last_used_ms
                FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1
                """, [.bytes(tokenHash)]) { row in
                StoredSession(user: User(rowID: try row.int64(SessionColumn.rowID), id: try row.string(SessionColumn.id),
                                         name: try row.string(SessionColumn.name)),
                              createdMs: try row.int64(SessionColumn.createdMs), lastUsedMs: try row.int64(SessionColumn.lastUsedMs))
            }
        }
    }

    public func touchSession(tokenHash: [UInt8], nowMs: Int64) throws {
        try pool.withConnection { connection in
            _ = try connection.execute("UPDATE sessions SET last_used_ms = greatest(last_used_ms, $1) WHERE token_hash = $2",
                                       [.int64(nowMs), .bytes(tokenHash)])
        }
    }

    public func deleteSession(tokenHash: [UInt8]) throws -> Bool {
        try pool.withConnection { connection in
            try connection.execute("DELETE FROM sessions WHERE token_hash = $1", [.bytes(tokenHash)]) > 0
        }
    }

    private enum FailureColumn: Int, TableColumns {
        case atMs
        static let table = "sign_in_failures"
    }

    public func signInFailures(kind: SignInFailureKind, key: String, sinceMs: Int64) throws -> [Int64] {
        try pool.withConnection { connection in
            try connection.map("SELECT at_ms FROM sign_in_failures WHERE kind = $1 AND key = $2 AND at_ms > $3 ORDER BY at_ms",
                               [.text(kind.rawValue), .text(key), .int64(sinceMs)]) { row in try row.int64(FailureColumn.atMs) }
        }
    }

    public func recordSignInFailure(keys: [(kind: SignInFailureKind, key: String)], atMs: Int64, forgetBeforeMs: Int64) throws {
        try pool.transaction { connection in
            _ = try connection.execute("DELETE FROM sign_in_failures WHERE at_ms <= $1", [.int64(forgetBeforeMs)])
            for (kind, key) in keys {
                _ = try connection.execute("INSERT INTO sign_in_failures (kind, key, at_ms) VALUES ($1, $2, $3)",
                                           [.text(kind.rawValue), .text(key), .int64(atMs)])
            }
        }
    }
}
