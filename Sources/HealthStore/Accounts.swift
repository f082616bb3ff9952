import Crypto

/// A person whose data the server holds.
public struct User: Sendable, Equatable {
    /// Internal row id: never leaves the server.
    public var rowID: Int64
    /// The id clients see.
    public var id: String
    public var name: String
}

/// One app acting for one user, with the types it may read and share (write).
public struct AppAuthorization: Sendable, Equatable {
    public var id: String
    public var userRowID: Int64
    public var userID: String
    public var app: String
    /// The source row this app writes as, for this user.
    public var sourceRowID: Int64
    public var read: Set<String>
    public var share: Set<String>

    public func mayRead(_ type: String) -> Bool { read.contains(type) }
    public func mayShare(_ type: String) -> Bool { share.contains(type) }
}

public enum TokenHashing {
    /// Tokens are 256 random bits, so one SHA-256 is enough: no slow KDF is needed against guessing.
    public static func hash(_ token: String) -> [UInt8] { SHA256.hash(Array(token.utf8)) }
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool { constantTimeEquals(a, b) }
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
