import HTTP
import HealthStore
import HealthdSettings
import Identity
import JSON

/// Signing in and out (docs/api.md, People): `POST /v1/session`, `DELETE /v1/session`, `GET /v1/me`.
struct SessionRoutes: Sendable {
    let data: HealthData
    let addresses: ClientAddressResolver
    let hashing: PasswordHashingGate

    static func register(into router: inout Router<Route>, data: HealthData, configuration: HealthdConfiguration,
                         hashing: PasswordHashingGate) {
        let routes = SessionRoutes(data: data, addresses: ClientAddressResolver(trustedProxies: configuration.trustedProxies,
                                                                                header: configuration.trustedProxyHeader),
                                   hashing: hashing)
        router.register(.post, "/v1/session", Route(access: .open, deferred: routes.signIn))
        router.register(.delete, "/v1/session", Route(access: .person, handler: routes.signOut))
        router.register(.get, "/v1/me", Route(access: .person, handler: routes.me))
    }

    /// `POST /v1/session` `{"name","password"}`: 204 and a new session cookie. In order: the
    /// limiter (429 even for the right password while locked), then one hash whether or not the
    /// name has a password, so a wrong name and a wrong password take the same time and get the
    /// same 401.
    func signIn(_ context: inout RequestContext, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(APIError) {
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        let (name, password) = try RequestBody.decode { () throws(JSONFieldError) in
            let name = try body.requiredString("name")
            let password = try body.requiredString("password")
            try body.finish()
            return (name, password)
        }
        guard password.utf8.count <= PasswordPolicy.maximumBytes else {
            throw APIError.invalidField("password", "is longer than any password can be (\(PasswordPolicy.maximumBytes) bytes)")
        }
        let request = context.request
        let peer = context.connection.remoteAddress
        let client = addresses.clientAddress(peer: peer, headers: request.headers)
        let secure = addresses.isHTTPS(peer: peer, headers: request.headers)
        let accountKey = SignInLimiter.accountKey(name)
        let addressKey = ClientAddressResolver.rateLimitKey(client)
        let people = data.people
        let throttle = SignInThrottle(people: people)
        let started = StoreClock.nowMilliseconds()
        if let wait = try storeCall({ try throttle.retryAfter(accountKey: accountKey, addressKey: addressKey, nowMs: started) }) {
            throw APIError.rateLimited(retryAfterSeconds: wait, "too many failed sign-ins for this name or from this address; retry in \(wait) s")
        }
        // A session the browser already had is ended, never kept: sign-in always makes a new one.
        let presented = SessionCookie.token(fromCookieHeader: request.headers.values("Cookie").joined(separator: "; "), secure: secure)
        let problems = context.problems
        let accepted = hashing.submit {
            let response: HTTPResponse
            do throws(APIError) {
                let account = try storeCall { try people.signInAccount(name: name) }
                let verified = if let stored = account?.passwordHash {
                    PasswordHashing.verify(password, against: stored)
                } else {
                    PasswordHashing.dummyVerify(password)
                }
                guard verified, let account else {
                    try storeCall { try throttle.recordFailure(accountKey: accountKey, addressKey: addressKey, nowMs: StoreClock.nowMilliseconds()) }
                    throw Self.wrongNameOrPassword
                }
                // Raised parameters take effect here, the one moment the password is at hand.
                if let stored = account.passwordHash, PasswordHashing.needsRehash(stored), let fresh = try? PasswordHashing.hash(password) {
                    try storeCall { try people.setPassword(userRowID: account.user.rowID, hash: fresh.phc) }
                }
                let token = SessionToken.random()
                try storeCall { try people.createSession(userRowID: account.user.rowID, tokenHash: token.hash, nowMs: StoreClock.nowMilliseconds()) }
                if let presented { _ = try storeCall { try people.deleteSession(tokenHash: presented.hash) } }
                var answer = HTTPResponse(status: .noContent)
                answer.headers.add("Set-Cookie", SessionCookie.setCookie(token, secure: secure))
                answer.headers.add("Cache-Control", "no-store")
                response = answer
            } catch {
                response = problems.response(error)
            }
            respond(response)
        }
        guard accepted else { throw Self.busy }
    }

    /// The one answer for a name without an account, an account not activated yet, and a wrong password.
    static var wrongNameOrPassword: APIError { APIError.authenticationRequired("the name or the password is wrong") }

    static var busy: APIError {
        var headers = HTTPHeaders()
        headers.set("Retry-After", "1")
        return APIError(status: .serviceUnavailable, code: "errorUnavailable",
                        detail: "too many sign-ins are being checked at once; retry in a second", headers: headers)
    }

    /// `DELETE /v1/session`: ends this session; the cookie is cleared.
    func signOut(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let (_, session) = try context.person()
        let people = data.people
        _ = try storeCall { try people.deleteSession(tokenHash: session.tokenHash) }
        var response = HTTPResponse(status: .noContent)
        response.headers.add("Set-Cookie", SessionCookie.clearCookie(secure: session.secure))
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    /// `GET /v1/me`: who is signed in.
    func me(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let (user, _) = try context.person()
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("id", user.id)
            writer.field("name", user.name)
            writer.endObject()
        }
    }
}
