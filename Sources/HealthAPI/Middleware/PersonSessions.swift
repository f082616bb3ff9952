import HTTP
import HealthStore
import HealthdSettings
import Identity

/// The session a signed-in person's request came with (docs/decisions.md, "People and sign-in").
public struct PersonSession: Sendable {
    /// The stored form of the cookie's token (its SHA-256).
    public let tokenHash: [UInt8]
    /// The cookie goes with `Secure` and the `__Host-` name: the request came over https, as a
    /// trusted proxy said.
    public let secure: Bool
    /// A `Set-Cookie` that renews the idle expiry, sent with this answer (at most once an hour).
    public let renewal: String?
}

/// How sessions are kept.
enum SessionPolicy {
    /// A session's `last used` is written, and the cookie sent again, at most this often.
    static let renewalMilliseconds: Int64 = 3_600_000
    static let idleMilliseconds = PeopleAccounts.sessionIdleMilliseconds
}

/// What a request carries for a `.person` route, checked before any store read: no bearer token,
/// a state-changing request only as JSON, and one well-formed session cookie.
struct PersonCredential {
    let token: SessionToken
    let secure: Bool

    init(method: HTTPMethod, headers: HTTPHeaders, secure: Bool) throws(APIError) {
        if headers.contains("Authorization") {
            throw APIError.authenticationRequired("this endpoint takes the signed-in person's session cookie, not a bearer token "
                                                  + "(apps use the /v1 data routes; people sign in with POST /v1/session)")
        }
        let cookies = headers.values("Cookie")
        if !cookies.isEmpty { try Self.requireJSONIfChanging(method: method, headers: headers) }
        guard let token = SessionCookie.token(fromCookieHeader: cookies.joined(separator: "; "), secure: secure) else {
            throw APIError.authenticationRequired("sign in first (POST /v1/session): this endpoint takes the session cookie "
                                                  + "\(SessionCookie.name(secure: secure))")
        }
        self.token = token
        self.secure = secure
    }

    /// A request that changes something and carries a cookie must be JSON: a plain HTML form (from
    /// another site, or anywhere) can send only form and text bodies, so it cannot post as the person.
    static func requireJSONIfChanging(method: HTTPMethod, headers: HTTPHeaders) throws(APIError) {
        guard method != .get && method != .head && method != .options else { return }
        let mediaType = headers["Content-Type"].flatMap { $0.split(separator: ";", maxSplits: 1).first }
            .map { $0.trimmingASCIIWhitespaceForHeaders().lowercased() }
        guard mediaType == "application/json" else {
            throw APIError.unsupportedMediaType("a request that changes something with the session cookie must send "
                                                + "Content-Type: application/json (a form cannot act for a signed-in person)")
        }
    }
}

extension ClientAddressResolver {
    /// True when the request came over https: healthd itself speaks plain HTTP, so only a trusted
    /// proxy can say so (`X-Forwarded-Proto: https`, or `proto=https` in `Forwarded`, whichever
    /// header `trustedProxyHeader` names the family of), and only its nearest hop's word counts.
    func isHTTPS(peer: String, headers: HTTPHeaders) -> Bool {
        guard !trustedProxies.isEmpty, let address = IPAddress(peer), isTrusted(address) else { return false }
        switch header {
        case .xForwardedFor:
            let hops = headers.values("X-Forwarded-Proto").flatMap { $0.split(separator: ",") }
            return hops.last.map { $0.trimmingASCIIWhitespaceForHeaders().lowercased() == "https" } ?? false
        case .forwarded:
            let elements = headers.values("Forwarded").flatMap { $0.split(separator: ",") }
            guard let nearest = elements.last else { return false }
            return nearest.split(separator: ";").contains { pair in
                let parts = pair.split(separator: "=", maxSplits: 1)
                return parts.count == 2 && parts[0].trimmingASCIIWhitespaceForHeaders().lowercased() == "proto"
                    && parts[1].trimmingASCIIWhitespaceForHeaders().lowercased().trimmingQuotes == "https"
            }
        }
    }
}

extension HealthApplication {
    /// The signed-in person for a `.person` route: the cookie's session, read from the store on
    /// every request (no node caches one, so a sign-out anywhere holds at once), refused when idle
    /// past its lifetime, renewed at most once an hour, and counted against the person's budget.
    func authenticatePerson(_ request: HTTPRequest, peer: String, client: String) throws(APIError) -> Principal {
        let credential = try PersonCredential(method: request.method, headers: request.headers,
                                              secure: clientAddresses.isHTTPS(peer: peer, headers: request.headers))
        // A read per request: an address guessing cookies is refused before it can make one.
        if let wait = rateLimits.peekAddress(client) { throw APIError.rateLimitedAddress(retryAfterSeconds: wait) }
        let hash = credential.token.hash
        let people = data.people
        guard let stored = try storeCall({ try people.session(tokenHash: hash) }) else {
            throw Self.sessionEnded
        }
        let now = StoreClock.nowMilliseconds()
        if now - stored.lastUsedMs >= SessionPolicy.idleMilliseconds {
            _ = try storeCall { try people.deleteSession(tokenHash: hash) }
            throw Self.sessionEnded
        }
        var renewal: String?
        if now - stored.lastUsedMs >= SessionPolicy.renewalMilliseconds {
            try storeCall { try people.touchSession(tokenHash: hash, nowMs: now) }
            renewal = SessionCookie.setCookie(credential.token, secure: credential.secure)
        }
        let principal = Principal.person(stored.user, session: PersonSession(tokenHash: hash, secure: credential.secure, renewal: renewal))
        if let wait = rateLimits.perToken.take(principal.rateLimitKey) {
            throw APIError.rateLimited(retryAfterSeconds: wait, "too many requests in this session; retry in \(wait) s")
        }
        return principal
    }

    static var sessionEnded: APIError {
        APIError.authenticationRequired("the session has ended (signed out, expired, or ended by a password change); sign in again")
    }

    /// `admit` for a `.person` route: the credential's checks at the head, then the session's row
    /// (on a worker), so a request without a live session is answered before its body is read.
    func admitPerson(_ head: HTTPRequestHead, connection: ConnectionInfo, client: String,
                     completion: @escaping @Sendable (HTTPAdmission) -> Void) {
        @Sendable func refuse(_ error: APIError) {
            if error.status == .unauthorized {
                _ = rateLimits.takeFromAddress(client, cost: rateLimits.authenticationFailureCost + 1)
            }
            completion(.refuse(headRefusal(error, head: head, connection: connection, client: client)))
        }
        let credential: PersonCredential
        do throws(APIError) {
            credential = try PersonCredential(method: head.method, headers: head.headers,
                                              secure: clientAddresses.isHTTPS(peer: connection.remoteAddress, headers: head.headers))
        } catch {
            return refuse(error)
        }
        if let wait = rateLimits.peekAddress(client) { return refuse(APIError.rateLimitedAddress(retryAfterSeconds: wait)) }
        let hash = credential.token.hash
        workers.async { [data] in
            do throws(APIError) {
                guard try storeCall({ try data.people.session(tokenHash: hash) }) != nil else { return refuse(Self.sessionEnded) }
                completion(.admit(authenticated: true))
            } catch {
                // The store cannot say (a 503): read the body and let `respond` answer in full.
                completion(.admit(authenticated: true))
            }
        }
    }
}

extension RequestContext {
    /// The `Set-Cookie` renewing a person's session, if this request renewed it; read in place
    /// (no copy of the principal).
    var sessionRenewal: String? {
        if case .person(_, let session)? = principal { return session.renewal }
        return nil
    }
}

extension HTTPResponse {
    /// Adds the session's renewed cookie, if this request renewed it.
    mutating func addSessionRenewal(_ renewal: String?) {
        if let renewal { headers.add("Set-Cookie", renewal) }
    }
}

extension StringProtocol {
    /// Without one pair of surrounding double quotes (a quoted-string parameter value).
    var trimmingQuotes: Substring {
        let text = Substring(self)
        guard text.count >= 2, text.first == "\"", text.last == "\"" else { return text }
        return text.dropFirst().dropLast()
    }
}
