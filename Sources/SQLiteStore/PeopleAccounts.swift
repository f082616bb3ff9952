import HealthStore
import SQLite

// People: passwords, invitations, sessions and failed sign-ins (`PeopleAccounts`). Only hashes
// are kept: the password's Argon2id string, the SHA-256 of session tokens and invitation codes.

extension SQLiteHealthStore {
    public func signInAccount(name: String) throws -> SignInAccount? {
        try pool.read { db in
            try db.first("SELECT \(SignInAccountColumn.selectList) FROM users WHERE name = ?", [.text(name)]) { row in
                try SignInAccount(row: row)
            }
        }
    }

    public func setPassword(userRowID: Int64, hash: String) throws {
        try pool.write { db in
            try db.execute("UPDATE users SET password_hash = ? WHERE id = ?", [.text(hash), .integer(userRowID)])
        }
    }

    public func changePassword(userRowID: Int64, hash: String, keepingSession tokenHash: [UInt8]) throws {
        try pool.write { db in
            try db.execute("UPDATE users SET password_hash = ? WHERE id = ?", [.text(hash), .integer(userRowID)])
            try db.execute("DELETE FROM sessions WHERE user_id = ? AND token_hash <> ?", [.integer(userRowID), .blob(tokenHash)])
        }
    }

    public func createInvitation(userRowID: Int64, codeHash: [UInt8], expiresMs: Int64) throws {
        try pool.write { db in
            try db.execute("""
                INSERT INTO invitations (user_id, code_hash, created_ms, expires_ms) VALUES (?, ?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET code_hash = excluded.code_hash, created_ms = excluded.created_ms,
                    expires_ms = excluded.expires_ms
                """, [.integer(userRowID), .blob(codeHash), .integer(Self.nowMilliseconds()), .integer(expiresMs)])
        }
    }

    /// `u.id, u.external_id, u.name`: `UserColumn`'s order, so `User(row:)` reads them.
    public func invitation(codeHash: [UInt8], nowMs: Int64) throws -> User? {
        try pool.read { db in
            try db.first("""
                SELECT u.id, u.external_id, u.name FROM invitations i JOIN users u ON u.id = i.user_id WHERE i.code_hash = ? AND i.expires_ms > ?
                """, [.blob(codeHash), .integer(nowMs)]) { row in try User(row: row) }
        }
    }

    public func redeemInvitation(codeHash: [UInt8], userRowID: Int64, passwordHash: String, nowMs: Int64) throws -> Bool {
        try pool.write { db in
            try db.execute("DELETE FROM invitations WHERE code_hash = ? AND user_id = ? AND expires_ms > ?",
                           [.blob(codeHash), .integer(userRowID), .integer(nowMs)])
            guard db.changes == 1 else { return false }
            try db.execute("UPDATE users SET password_hash = ? WHERE id = ?", [.text(passwordHash), .integer(userRowID)])
            // A new invitation is also how an admin resets a forgotten password: no old session survives it.
            try db.execute("DELETE FROM sessions WHERE user_id = ?", [.integer(userRowID)])
            return true
        }
    }

    public func createSession(userRowID: Int64, tokenHash: [UInt8], nowMs: Int64) throws {
        try pool.write { db in
            // The person's sessions idle past their lifetime go: no cookie can use them any more.
            try db.execute("DELETE FROM sessions WHERE user_id = ? AND last_used_ms <= ?",
                           [.integer(userRowID), .integer(nowMs - PeopleAccounts.sessionIdleMilliseconds)])
            try db.execute("INSERT INTO sessions (token_hash, user_id, created_ms, last_used_ms) VALUES (?, ?, ?, ?)",
                           [.blob(tokenHash), .integer(userRowID), .integer(nowMs), .integer(nowMs)])
        }
    }

    /// The columns `session` reads, from `sessions s JOIN users u`, in SELECT order.
    private enum SessionColumn: Int, TableColumns {
        case rowID, id, name, createdMs, lastUsedMs
        static let table = "sessions"
    }

    public func session(tokenHash: [UInt8]) throws -> StoredSession? {
        try pool.read { db in
            try db.first("""
                SELECT u.id, u.external_id, u.name, s.created_ms, s.last_used_ms
                FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?
                """, [.blob(tokenHash)]) { row in
                StoredSession(user: User(rowID: try row.int64(SessionColumn.rowID), id: try row.string(SessionColumn.id),
                                         name: try row.string(SessionColumn.name)),
                              createdMs: try row.int64(SessionColumn.createdMs), lastUsedMs: try row.int64(SessionColumn.lastUsedMs))
            }
        }
    }

    public func touchSession(tokenHash: [UInt8], nowMs: Int64) throws {
        try pool.write { db in
            try db.execute("UPDATE sessions SET last_used_ms = max(last_used_ms, ?) WHERE token_hash = ?", [.integer(nowMs), .blob(tokenHash)])
        }
    }

    public func deleteSession(tokenHash: [UInt8]) throws -> Bool {
        try pool.write { db in
            try db.execute("DELETE FROM sessions WHERE token_hash = ?", [.blob(tokenHash)])
            return db.changes > 0
        }
    }

    private enum FailureColumn: Int, TableColumns {
        case atMs
        static let table = "sign_in_failures"
    }

    public func signInFailures(kind: SignInFailureKind, key: String, sinceMs: Int64) throws -> [Int64] {
        try pool.read { db in
            try db.map("SELECT at_ms FROM sign_in_failures WHERE kind = ? AND key = ? AND at_ms > ? ORDER BY at_ms",
                       [.text(kind.rawValue), .text(key), .integer(sinceMs)]) { row in
                try row.int64(FailureColumn.atMs)
            }
        }
    }

    public func recordSignInFailure(keys: [(kind: SignInFailureKind, key: String)], atMs: Int64, forgetBeforeMs: Int64) throws {
        try pool.write { db in
            try db.execute("DELETE FROM sign_in_failures WHERE at_ms <= ?", [.integer(forgetBeforeMs)])
            for (kind, key) in keys {
                try db.execute("INSERT INTO sign_in_failures (kind, key, at_ms) VALUES (?, ?, ?)",
                               [.text(kind.rawValue), .text(key), .integer(atMs)])
            }
        }
    }
}
