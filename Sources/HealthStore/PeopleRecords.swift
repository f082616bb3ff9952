/// A user as the admin's list shows them (`GET /v1/users`).
public struct UserListing: Sendable, Equatable {
    public var user: User
    /// Unix ms.
    public var created: Int64
    /// Whether the person has set a password (activated their invitation).
    public var activated: Bool

    public init(user: User, created: Int64, activated: Bool) {
        self.user = user
        self.created = created
        self.activated = activated
    }
}

/// One live authorization of a user as the admin's list shows it: never its token or hash.
public struct AuthorizationListing: Sendable, Equatable {
    public var id: String
    public var app: String
    public var read: Set<String>
    public var share: Set<String>
    /// Unix ms.
    public var created: Int64
    /// When a request last used a token of the app (Unix ms), if it is known.
    public var lastUsed: Int64?

    public init(id: String, app: String, read: Set<String>, share: Set<String>, created: Int64, lastUsed: Int64?) {
        self.id = id
        self.app = app
        self.read = read
        self.share = share
        self.created = created
        self.lastUsed = lastUsed
    }
}

/// What an erasure deleted: rows per kind (`samples`, `tombstones`, `statisticsRollups`,
/// `authorizations`, `accessLog`, ...), each kind summing the tables that hold it.
public struct ErasureReport: Sendable, Equatable {
    public var rows: [String: Int] = [:]

    public init(rows: [String: Int] = [:]) { self.rows = rows }

    public mutating func add(_ kind: String, _ count: Int) { rows[kind, default: 0] += count }

    public var total: Int { rows.values.reduce(0, +) }
}
