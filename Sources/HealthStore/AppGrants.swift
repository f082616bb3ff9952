/// The person's switches for one app (the Health app's Settings › Health › Data Access & Devices):
/// what every token of that app may read and share. Permissions belong to the (person, app) pair,
/// not to a token: the admin's tokens, the ones the permission sheet issues and the seeder's all
/// read their access from here, so one change of a switch reaches every token of the app.
///
/// A type is *decided* once the person (or the admin acting for them) has answered for it, on or
/// off; the sheet asks again only for types not decided yet, as HealthKit shows its sheet only for
/// types the person has not answered.
public struct AppGrant: Sendable, Equatable {
    public var app: String
    /// The name the app asked to be shown by (the sheet's and the apps page's title); the app's id
    /// when it never gave one.
    public var displayName: String
    /// Switched on.
    public var read: Set<String>
    public var share: Set<String>
    /// Answered, on or off: a superset of `read` / `share`.
    public var decidedRead: Set<String>
    public var decidedShare: Set<String>
    /// Unix milliseconds.
    public var created: Int64
    /// When a token of the app last called (Unix milliseconds, written at most once a minute per
    /// token); nil when none has.
    public var lastUsed: Int64?

    public init(app: String, displayName: String, read: Set<String> = [], share: Set<String> = [],
                decidedRead: Set<String> = [], decidedShare: Set<String> = [], created: Int64, lastUsed: Int64? = nil) {
        self.app = app
        self.displayName = displayName
        self.read = read
        self.share = share
        self.decidedRead = decidedRead.union(read)
        self.decidedShare = decidedShare.union(share)
        self.created = created
        self.lastUsed = lastUsed
    }

    /// Whether the app may read or write some type now (a grant of refusals only allows nothing).
    public var allowsAny: Bool { !read.isEmpty || !share.isEmpty }

    /// The admin's `POST /v1/authorizations` acts for the person: it turns on each switch it names
    /// (and marks it decided) and leaves every other switch as the person set it.
    public mutating func turnOn(read newRead: Set<String>, share newShare: Set<String>) {
        read.formUnion(newRead)
        share.formUnion(newShare)
        decidedRead.formUnion(newRead)
        decidedShare.formUnion(newShare)
    }

    /// Of the asked types, those the person has not answered yet: what the sheet shows.
    public func undecided(share askedShare: [String], read askedRead: [String]) -> (share: [String], read: [String]) {
        (askedShare.filter { !decidedShare.contains($0) }, askedRead.filter { !decidedRead.contains($0) })
    }

    /// The person's answer on the sheet for the types it showed (`shown`): with Allow, the types
    /// they turned on are on and the other shown types off; with Don't Allow, every shown type is
    /// off. Types already decided before keep their switches (the apps page changes those).
    public mutating func answer(shown: (share: [String], read: [String]), allow: Bool,
                                share allowedShare: Set<String>, read allowedRead: Set<String>) {
        for type in shown.share where !decidedShare.contains(type) {
            decidedShare.insert(type)
            if allow && allowedShare.contains(type) { share.insert(type) }
        }
        for type in shown.read where !decidedRead.contains(type) {
            decidedRead.insert(type)
            if allow && allowedRead.contains(type) { read.insert(type) }
        }
    }

    /// Why a change of switches is refused: it names a type the app never asked for.
    public struct UnknownSwitch: Error, Sendable, Equatable {
        public var field: String
        public var type: String
    }

    /// The apps page's change: the switches become exactly `read` / `share`. Only types the app
    /// has a switch for (decided ones) can be turned on, as in the Health app, which lists only
    /// the types the app asked for.
    public mutating func setSwitches(read newRead: Set<String>, share newShare: Set<String>) throws(UnknownSwitch) {
        if let type = newShare.sorted().first(where: { !decidedShare.contains($0) }) { throw UnknownSwitch(field: "share", type: type) }
        if let type = newRead.sorted().first(where: { !decidedRead.contains($0) }) { throw UnknownSwitch(field: "read", type: type) }
        read = newRead
        share = newShare
    }

    /// True when the tokens of the app may now do less or more than under `other`: their
    /// in-flight streams must end (`HealthDataStore.addAuthorizationObserver`).
    public func changesAccess(from other: AppGrant) -> Bool { read != other.read || share != other.share }
}

/// How often a token's use is written to the store: at most once a minute per token, so the apps
/// page's "last used" costs one write a minute per active token, not one per request.
public enum UsageStamp {
    public static let interval: Int64 = 60_000

    /// True when a use at `now` should be written, the last one written at `lastWritten` (nil: never).
    public static func isDue(lastWritten: Int64?, now: Int64) -> Bool {
        guard let lastWritten else { return true }
        return now - lastWritten >= interval || now < lastWritten
    }
}

/// A permission request (RFC 8628's device authorization) as the stores keep it. The device code
/// is kept only as its SHA-256; the user code as its 8 letters. The poll's rules live in
/// `Identity.DeviceAuthorization`: the API converts to it and back inside the store's transaction.
public struct AuthorizationRequestRecord: Sendable, Equatable {
    public enum State: String, Sendable, Equatable {
        case pending, allowed, denied, issued
    }

    public var id: String
    /// The user code's 8 letters, upper case, no dash.
    public var userCode: String
    public var app: String
    public var displayName: String
    public var reason: String
    /// What the app asked for, in its order (canonical type ids).
    public var share: [String]
    public var read: [String]
    /// Unix milliseconds.
    public var created: Int64
    /// Seconds the app must wait between polls (grows by 5 with each slow_down).
    public var interval: Int
    public var lastPoll: Int64?
    public var state: State
    /// The person who answered (set with the answer).
    public var userRowID: Int64?
    /// What the person turned on for this request, once allowed.
    public var grantedShare: [String]
    public var grantedRead: [String]

    public init(id: String, userCode: String, app: String, displayName: String, reason: String, share: [String], read: [String],
                created: Int64, interval: Int, lastPoll: Int64? = nil, state: State = .pending, userRowID: Int64? = nil,
                grantedShare: [String] = [], grantedRead: [String] = []) {
        self.id = id
        self.userCode = userCode
        self.app = app
        self.displayName = displayName
        self.reason = reason
        self.share = share
        self.read = read
        self.created = created
        self.interval = interval
        self.lastPoll = lastPoll
        self.state = state
        self.userRowID = userRowID
        self.grantedShare = grantedShare
        self.grantedRead = grantedRead
    }

    /// How long a record is kept after it was made: past its 600 s life it still answers
    /// `expired_token` (rather than an unknown code) for a while, then it is purged.
    public static let retention: Int64 = 3_600_000
}

/// What a poll did in the store (`HealthDataStore.pollAuthorizationRequest`).
public enum AuthorizationPollOutcome: Sendable {
    /// No request has this device code (or it was purged).
    case unknown
    /// The request after the poll; no token was made.
    case polled(AuthorizationRequestRecord)
    /// The token was made in the poll's transaction: shown now, never again.
    case issued(AuthorizationRequestRecord, authorization: AppAuthorization, token: String)
}
