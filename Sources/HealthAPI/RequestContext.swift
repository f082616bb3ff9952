import HTTP
import HealthStore

/// Who is calling: the admin (the server's operator), one app acting for one user, or a person
/// signed in with the session cookie (on `.person` routes only).
public enum Principal: Sendable {
    case admin
    case app(AppAuthorization)
    case person(User, session: PersonSession)

    public var appAuthorization: AppAuthorization? {
        if case .app(let authorization) = self { return authorization }
        return nil
    }

    /// The signed-in person, on a `.person` route.
    public var person: (user: User, session: PersonSession)? {
        if case .person(let user, let session) = self { return (user, session) }
        return nil
    }
}

/// Query parameters of one request. Handlers read the ones they know and then call
/// `rejectUnknown()`, so a misspelt parameter (`strictStartdate`) is a 400, never silently ignored.
public struct QueryParameters: Sendable {
    private var pairs: [(name: String, value: String)]
    /// Names read so far; a handful per request, so a list beats hashing each one.
    private var consumed: [String] = []

    public init(_ pairs: [(name: String, value: String)]) { self.pairs = pairs }

    /// The value of `name`; a parameter given twice is a 400 (which one would win is a guess).
    public mutating func string(_ name: String) throws(APIError) -> String? {
        if !consumed.contains(name) { consumed.append(name) }
        var found: String?
        for pair in pairs where pair.name == name {
            guard found == nil else { throw APIError.invalidField(name, "given more than once") }
            found = pair.value
        }
        return found
    }

    public mutating func requiredString(_ name: String) throws(APIError) -> String {
        guard let value = try string(name), !value.isEmpty else { throw APIError.invalidField(name, "is required") }
        return value
    }

    public mutating func integer(_ name: String, in range: ClosedRange<Int>) throws(APIError) -> Int? {
        guard let text = try string(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw APIError.invalidField(name, "must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }

    public mutating func boolean(_ name: String) throws(APIError) -> Bool? {
        guard let text = try string(name) else { return nil }
        switch text {
        case "true", "1": return true
        case "false", "0": return false
        default: throw APIError.invalidField(name, "must be true or false, not '\(text)'")
        }
    }

    /// A comma-separated list; empty items are a 400.
    public mutating func list(_ name: String) throws(APIError) -> [String]? {
        guard let text = try string(name) else { return nil }
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard !items.contains(where: \.isEmpty) else { throw APIError.invalidField(name, "has an empty item") }
        return items
    }

    public func rejectUnknown() throws(APIError) {
        for pair in pairs where !consumed.contains(pair.name) {
            throw APIError.invalidField(pair.name, "is not a parameter of this endpoint")
        }
    }
}

/// What a handler receives: the request, its route parameters and query, and the caller.
public struct RequestContext: Sendable {
    public let request: HTTPRequest
    public let parameters: [String: String]
    public var query: QueryParameters
    /// Renders this request's errors (and logs server failures under its id).
    public let problems: ProblemResponder
    public let principal: Principal?
    public let connection: ConnectionInfo

    /// The id in `X-Request-Id` and in the log lines about this request.
    public var requestID: String { problems.requestID }

    public func parameter(_ name: String) -> String { parameters[name] ?? "" }

    /// The calling app's authorization; admin-only and public routes never ask for it.
    /// The signed-in person; only `.person` routes have one.
    public func person() throws(APIError) -> (user: User, session: PersonSession) {
        guard let person = principal?.person else {
            throw APIError.authenticationRequired("sign in first (POST /v1/session): this endpoint takes the session cookie")
        }
        return person
    }

    /// On a person's read route (`/v1/me/...`), the person's own reads (`personsOwnReads`): the
    /// app routes' handlers then serve all of the person's data, read-only.
    public func app() throws(APIError) -> AppAuthorization {
        if case .person(let user, let session)? = principal {
            return AppAuthorization.personsOwnReads(user: user, sessionTokenHash: session.tokenHash)
        }
        guard let app = principal?.appAuthorization else {
            throw APIError.authorizationDenied("this endpoint is for app tokens; the admin token acts through PUT/POST admin routes only")
        }
        return app
    }
}
