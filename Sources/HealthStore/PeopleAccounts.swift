import Crypto
import HealthModel

/// A person's account as sign-in sees it: the user and their stored password (a PHC string),
/// nil until the person has activated the account with an invitation.
public struct SignInAccount: Sendable, Equatable {
    public var user: User
    public var passwordHash: String?

    public init(user: User, passwordHash: String?) {
        self.user = user
        self.passwordHash = passwordHash
    }
}

/// A signed-in person's session as stored (by its token's SHA-256, never the token itself).
public struct StoredSession: Sendable, Equatable {
    public var user: User
    public var createdMs: Int64
    public var lastUsedMs: Int64

    public init(user: User, createdMs: Int64, lastUsedMs: Int64) {
        self.user = user
        self.createdMs = createdMs
        self.lastUsedMs = lastUsedMs
    }
}

/// Failed sign-ins are counted under two kinds of key: the account name (lowercased, whether or
/// not an account has it) and the client address (IPv6 by its /64).
public enum SignInFailureKind: String, Sendable, CaseIterable {
    case account
    case address
}

/// The people's side of accounts (docs/decisions.md, "People and sign-in"): passwords,
/// invitations, sessions and the failed sign-ins the limiter counts. Only hashes are stored: the
/// password's Argon2id string, and the SHA-256 of session tokens and invitation codes. Sessions
/// and failures live in the database, not in a node's memory, so every node serving the same data
/// sees a sign-out, a password change and a guess at once.
public struct PeopleAccounts: Sendable {
    let store: any HealthDataStore

    /// A session unused this long has ended (`SessionToken.idleLifetime`: 30 days).
    public static let sessionIdleMilliseconds: Int64 = 30 * 24 * 3_600_000

    // MARK: Passwords

    /// The account `name` signs in to: the one with that exact name, else the one account whose
    /// name reads like it (`LookalikeNames.key`: a phone's keyboard capitalizes "maya" to "Maya").
    /// Nil when there is none, or when two accounts made before lookalikes were refused read
    /// like it and neither is named exactly so: then no guess picks one.
    public func signInAccount(name: String) throws -> SignInAccount? {
        guard User.canBeName(name) else { return nil }
        if let exact = try store.signInAccount(name: name) { return exact }
        let key = LookalikeNames.key(name)
        let alike = try store.users().filter { LookalikeNames.key($0.user.name) == key }
        guard alike.count == 1, let only = alike.first else { return nil }
        return try store.signInAccount(name: only.user.name)
    }

    /// Stores a new password hash (a rehash at a sign-in, or a test's setup).
    public func setPassword(userRowID: Int64, hash: String) throws { try store.setPassword(userRowID: userRowID, hash: hash) }

    /// Stores a new password hash and ends every other session of the person, in one transaction:
    /// a stolen session does not outlive the password change meant to end it.
    public func changePassword(userRowID: Int64, hash: String, keepingSession tokenHash: [UInt8]) throws {
        try store.changePassword(userRowID: userRowID, hash: hash, keepingSession: tokenHash)
    }

    // MARK: Invitations

    /// Makes `codeHash` the person's one invitation, voiding any earlier one.
    public func createInvitation(userRowID: Int64, codeHash: [UInt8], expiresMs: Int64) throws {
        try store.createInvitation(userRowID: userRowID, codeHash: codeHash, expiresMs: expiresMs)
    }

    /// The person an unexpired invitation is for, or nil (unknown, used, voided or expired).
    public func invitation(codeHash: [UInt8], nowMs: Int64) throws -> User? {
        try store.invitation(codeHash: codeHash, nowMs: nowMs)
    }

    /// Uses the invitation up, sets the password and ends any session of the person, in one
    /// transaction; false when the invitation was used, voided or expired meanwhile (a replay, or
    /// two activations at once: one wins).
    public func redeemInvitation(codeHash: [UInt8], userRowID: Int64, passwordHash: String, nowMs: Int64) throws -> Bool {
        try store.redeemInvitation(codeHash: codeHash, userRowID: userRowID, passwordHash: passwordHash, nowMs: nowMs)
    }

    // MARK: Sessions

    public func createSession(userRowID: Int64, tokenHash: [UInt8], nowMs: Int64) throws {
        try store.createSession(userRowID: userRowID, tokenHash: tokenHash, nowMs: nowMs)
    }

    /// The session with this token hash, read from the database (never a cache), or nil.
    public func session(tokenHash: [UInt8]) throws -> StoredSession? { try store.session(tokenHash: tokenHash) }

    /// Records a use (the idle expiry restarts from here).
    public func touchSession(tokenHash: [UInt8], nowMs: Int64) throws { try store.touchSession(tokenHash: tokenHash, nowMs: nowMs) }

    /// False when there was no such session. What the session's own reads have in flight (the
    /// person's change stream) ends at once, before the write waits for the writer; the stream
    /// would otherwise end at the next check of open streams (`liveAuthorizations`).
    @discardableResult
    public func deleteSession(tokenHash: [UInt8]) throws -> Bool {
        store.endInFlight(authorizationIDs: [AppAuthorization.personsOwnReadsID(sessionTokenHash: tokenHash)])
        return try store.deleteSession(tokenHash: tokenHash)
    }

    // MARK: Failed sign-ins

    /// The times (ms) of failures under `key` of `kind` after `sinceMs`, oldest first.
    public func signInFailures(kind: SignInFailureKind, key: String, sinceMs: Int64) throws -> [Int64] {
        try store.signInFailures(kind: kind, key: key, sinceMs: sinceMs)
    }

    /// Records one failure under each of `keys`, and forgets failures from before `forgetBeforeMs`.
    public func recordSignInFailure(keys: [(kind: SignInFailureKind, key: String)], atMs: Int64, forgetBeforeMs: Int64) throws {
        try store.recordSignInFailure(keys: keys, atMs: atMs, forgetBeforeMs: forgetBeforeMs)
    }
}

extension AppAuthorization {
    /// The person's own reads, signed in with the session `sessionTokenHash`, as the read routes'
    /// handlers take an authorization: every type readable (all of the person's own data, every
    /// source, characteristics too), nothing writable, no source of its own. Its id names the
    /// session, so `HealthData.liveAuthorizations` answers for it from the sessions table: a
    /// change stream opened with the cookie ends when the session does, on any node.
    public static func personsOwnReads(user: User, sessionTokenHash: [UInt8]) -> AppAuthorization {
        AppAuthorization(id: personsOwnReadsID(sessionTokenHash: sessionTokenHash), userRowID: user.rowID, userID: user.id,
                         appName: "", sourceRowID: 0, read: everyType, share: [])
    }

    /// The id `personsOwnReads` gives the session's reads.
    static func personsOwnReadsID(sessionTokenHash: [UInt8]) -> String { sessionPrefix + Hex.encode(sessionTokenHash) }

    /// True for `personsOwnReads`: the person reading their own data, which is not an app's access.
    public var isPersonsOwnReads: Bool { id.hasPrefix(Self.sessionPrefix) }

    /// The session token hash of a `personsOwnReads` id, or nil for an app's authorization.
    static func sessionTokenHash(ofPersonsOwnReads id: String) -> [UInt8]? {
        guard id.hasPrefix(sessionPrefix) else { return nil }
        let digits = Array(id.utf8.dropFirst(sessionPrefix.count))
        guard digits.count == 64 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0") ... UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a") ... UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    static let sessionPrefix = "session:"
    static let everyType = Set(HealthTypeCatalog.all.map(\.id))
}
