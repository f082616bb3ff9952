import Crypto
import Foundation
import HealthModel

/// A person whose data the server holds.
public struct User: Sendable, Equatable {
    /// Internal row id: never leaves the server.
    public var rowID: Int64
    /// The id clients see.
    public var id: String
    public var name: String

    public init(rowID: Int64, id: String, name: String) {
        self.rowID = rowID
        self.id = id
        self.name = name
    }

    /// Whether `text` can be a person's or an app's name: one line, no control characters. Names
    /// are shown on the dashboard and written to logs, and PostgreSQL text cannot hold a NUL, so
    /// the HTTP API refuses any other name, and a lookup by such a text finds no one on either
    /// store without asking it.
    public static func canBeName(_ text: String) -> Bool {
        !text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}" }
    }
}

/// Names that read alike: an account's, an app's id or the name it asks to be shown by.
public enum LookalikeNames {
    /// What two names that read alike share: compatibility-normalized (NFKC: "é" typed as one code
    /// point or as "e" and an accent, full-width "ｍａｙａ" and "maya") and case-folded ("Maya" and
    /// "maya"). Accents stay (José and Jose are two people). An account is not made under a name
    /// whose key another account's name has: the person signs in with it, the admin finds people
    /// by it, and the sign-in limiter counts failures per key.
    public static func key(_ name: String) -> String {
        name.precomposedStringWithCompatibilityMapping.folding(options: [.caseInsensitive, .widthInsensitive], locale: nil)
    }

    /// The name among `names` that `name` would be taken for, if any.
    public static func existing(_ name: String, among names: some Sequence<String>) -> String? {
        let wanted = Self.key(name)
        return names.first { Self.key($0) == wanted }
    }
}

/// One app acting for one user, with what its token may read and share (`access`).
public struct AppAuthorization: Sendable, Equatable {
    public var id: String
    public var userRowID: Int64
    public var userID: String
    /// The app's name: what samples it saves show as their source.
    public var appName: String
    /// The source row this app writes as, for this user.
    public var sourceRowID: Int64
    public var access: AccessPolicy
    /// Whether the token may learn its own read list. Off unless the admin opted in: as in
    /// HealthKit, an app is never told what it may read (a denial could hint at private data).
    public var disclosesRead: Bool

    public init(id: String, userRowID: Int64, userID: String, appName: String, sourceRowID: Int64,
                read: Set<String>, share: Set<String>, disclosesRead: Bool = false) {
        self.id = id
        self.userRowID = userRowID
        self.userID = userID
        self.appName = appName
        self.sourceRowID = sourceRowID
        self.access = AccessPolicy(read: read, share: share, ownSourceRowID: sourceRowID)
        self.disclosesRead = disclosesRead
    }

    public var read: Set<String> { access.read }
    public var share: Set<String> { access.share }
    public func mayRead(_ type: String) -> Bool { access.mayRead(type) }
    public func mayShare(_ type: String) -> Bool { access.mayShare(type) }
}

/// What one token may read and share, and the one place that says what that means (docs/api.md,
/// Authorization). The `HealthData` façade applies it on every read and write, above the stores,
/// so a route cannot forget it (reads hand the stores a `ReadVisibility` made from it):
/// - read privacy, as in HealthKit: for a type the token may not read, data of that type is
///   narrowed to the token's own source, as if nothing else existed (not an error);
/// - writes and deletes of a type the token may not share are refused with `SharingDenied`.
public struct AccessPolicy: Sendable, Equatable {
    public var read: Set<String>
    public var share: Set<String>
    /// The source row the token writes as: what it always sees of its own data.
    public var ownSourceRowID: Int64

    public init(read: Set<String>, share: Set<String>, ownSourceRowID: Int64) {
        self.read = read
        self.share = share
        self.ownSourceRowID = ownSourceRowID
    }

    public func mayRead(_ type: String) -> Bool { read.contains(type) }
    public func mayShare(_ type: String) -> Bool { share.contains(type) }

    /// Throws `SharingDenied` unless the token may share `type`; `detail` says what was refused.
    public func requireShare(_ type: String, detail: String? = nil) throws(SharingDenied) {
        guard mayShare(type) else {
            throw SharingDenied(type: type, index: nil, detail: detail ?? "this token may not share (write or delete) \(type)")
        }
    }

    /// Throws `SharingDenied` naming the first sample of `samples` (or object of a correlation)
    /// whose type the token may not share.
    public func requireShare(_ samples: [HealthSample]) throws(SharingDenied) {
        // The sample's own type first, then its objects'. Per sample no array, and no set lookup
        // while the type repeats: a batch holds thousands of samples of a few types.
        var lastShared: String?
        for (index, sample) in samples.enumerated() {
            if sample.type != lastShared {
                guard mayShare(sample.type) else {
                    throw SharingDenied(type: sample.type, index: index, detail: "this token may not share \(sample.type)")
                }
                lastShared = sample.type
            }
            guard case .correlation(let objects) = sample.content else { continue }
            for object in objects where !mayShare(object.type) {
                throw SharingDenied(type: object.type, index: index, detail: "this token may not share \(object.type)")
            }
        }
    }
}

/// Whose data a read covers, for reads that serve both a token and the admin's command line.
public enum ReadScope: Sendable, Equatable {
    /// One app's token: read privacy applies (`AccessPolicy`).
    case app(AppAuthorization)
    /// All of one user's data: the admin's own export (`healthd export`), which has no token.
    case wholeUser(User)

    public var userRowID: Int64 {
        switch self {
        case .app(let app): return app.userRowID
        case .wholeUser(let user): return user.rowID
        }
    }

    public var userExternalID: String {
        switch self {
        case .app(let app): return app.userID
        case .wholeUser(let user): return user.id
        }
    }

    /// What a read in this scope sees.
    public var visibility: ReadVisibility {
        switch self {
        case .app(let app): return ReadVisibility(app: app)
        case .wholeUser(let user): return ReadVisibility(wholeUser: user)
        }
    }
}
/// A write or delete of a type the token may not share: a 403 (docs/api.md, Authorization).
public struct SharingDenied: Error, Sendable, Equatable, CustomStringConvertible {
    public var type: String
    /// The refused sample's position in its batch, when a batch was refused.
    public var index: Int?
    public var detail: String

    public var description: String { detail }
}

public enum TokenHashing {
    /// Tokens are 256 random bits, so one SHA-256 is enough: no slow KDF is needed against guessing.
    public static func hash(_ token: String) -> [UInt8] { SHA256.hash(token.utf8) }
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool { constantTimeEquals(a, b) }
}

/// A token hash as a dictionary key: its 32 bytes as four words, hashed and compared as such
/// (an array key is hashed byte by byte, on every authenticated request).
package struct TokenHashKey: Hashable, Sendable {
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// Nil unless `hash` is a SHA-256 digest (32 bytes).
    package init?(_ hash: [UInt8]) {
        guard hash.count == SHA256.digestByteCount else { return nil }
        words = hash.withUnsafeBytes { raw in
            (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
             raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        }
    }

    package static func == (lhs: TokenHashKey, rhs: TokenHashKey) -> Bool {
        lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}

/// A write for a user whose account was erased while the request was in flight: the token or
/// session it came with no longer exists, and nothing is stored (the API answers 401, as for a
/// revoked token).
public struct AccountErased: Error, Sendable, Equatable, CustomStringConvertible {
    public init() {}
    public var description: String { "the account was erased" }
}

/// Store errors the API maps to statuses.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    case notFound(String)
    case conflict(String)
    case forbidden(String)
    case invalid(String)

    public var description: String {
        switch self {
        case .notFound(let s), .conflict(let s), .forbidden(let s), .invalid(let s): return s
        }
    }
}

extension StoreError {
    /// A new account's name that an existing one's reads like (`LookalikeNames.key`).
    public static func nameTaken(_ name: String, by existing: String) -> StoreError {
        existing == name ? .conflict("a user named '\(name)' exists")
            : .conflict("the name '\(name)' reads like an existing user's, '\(existing)'")
    }
}
