import HTTP
import HealthStore
import HealthdSettings
import Identity
import JSON

/// A person's account (docs/api.md, People): activation with an invitation, signing in and out,
/// who is signed in, and changing the password. Every password hash runs on `hashing`.
struct PersonAccountRoutes: Sendable {
    let data: HealthData
    let addresses: ClientAddressResolver
    let hashing: PasswordHashingGate

    static func register(into router: inout Router<Route>, data: HealthData, configuration: HealthdConfiguration,
                         hashing: PasswordHashingGate) {
        let routes = PersonAccountRoutes(data: data, addresses: ClientAddressResolver(trustedProxies: configuration.trustedProxies,
                                                                                header: configuration.trustedProxyHeader),
                                   hashing: hashing)
        router.register(.post, "/v1/session", Route(access: .open, deferred: routes.signIn))
        router.register(.delete, "/v1/session", Route(access: .person, handler: routes.signOut))
        router.register(.get, "/v1/me", Route(access: .person, handler: routes.me))
        router.register(.post, "/v1/people/activate", Route(access: .open, deferred: routes.activate))
        router.register(.put, "/v1/me/password", Route(access: .person, deferred: routes.changePassword))
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
        // No account has a longer name, and each failure stores the name as its limiter key.
        guard name.count <= UserName.maximumLength else {
            throw APIError.invalidField("name", "is longer than any account name can be (\(UserName.maximumLength) characters)")
        }
        let request = context.request
        let peer = context.connection.remoteAddress
        let client = addresses.clientAddress(peer: peer, headers: request.headers)
        let secure = addresses.isHTTPS(peer: peer, headers: request.headers)
        let accountKey = SignInThrottle.accountKey(name)
        let addressKey = ClientAddressResolver.rateLimitKey(client)
        let people = data.people
        let throttle = SignInThrottle(people: people)
        let started = StoreClock.nowMilliseconds()
        if let wait = try storeCall({ try throttle.retryAfter(accountKey: accountKey, addressKey: addressKey, nowMs: started) }) {
            throw APIError.rateLimited(retryAfterSeconds: wait, "too many failed sign-ins for this name or from this address; retry in \(wait) s")
        }
        // A session the browser already had is ended, never kept: sign-in always makes a new one.
        let presented = SessionCookie.token(fromCookieHeader: request.headers.values("Cookie").joined(separator: "; "), secure: secure)
        try hashing.answer(problems: context.problems, respond: respond) { () throws(APIError) -> HTTPResponse in
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
            return answer
        }
    }

    /// The one answer for a name without an account, an account not activated yet, and a wrong password.
    static var wrongNameOrPassword: APIError { APIError.authenticationRequired("the name or the password is wrong") }

    static var busy: APIError { APIError.busy("too many sign-ins are being checked at once; retry in a second") }

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

    /// `POST /v1/people/activate` `{"code","password"}`: sets the password of the person the
    /// invitation is for and uses the invitation up (one transaction: a replay, or a second
    /// activation racing the first, finds nothing). Unknown, used, replaced and expired codes get
    /// one answer.
    func activate(_ context: inout RequestContext, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(APIError) {
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        let (codeText, password) = try RequestBody.decode { () throws(JSONFieldError) in
            let code = try body.requiredString("code")
            let password = try body.requiredString("password")
            try body.finish()
            return (code, password)
        }
        let people = data.people
        guard let code = InvitationCode(presented: codeText),
              let user = try storeCall({ try people.invitation(codeHash: code.hash, nowMs: StoreClock.nowMilliseconds()) }) else {
            throw Self.invalidInvitation
        }
        if let refusal = PasswordPolicy.standard.refusal(of: password, name: user.name) {
            throw APIError.invalidField("password", refusal.reason)
        }
        try hashing.answer(problems: context.problems, respond: respond) { () throws(APIError) -> HTTPResponse in
            let hash: PasswordHash
            do { hash = try PasswordHashing.hash(password) } catch { throw APIError.internalError(error) }
            guard try storeCall({
                try people.redeemInvitation(codeHash: code.hash, userRowID: user.rowID, passwordHash: hash.phc,
                                            nowMs: StoreClock.nowMilliseconds())
            }) else { throw Self.invalidInvitation }
            return JSONResponse.write { writer in
                writer.beginObject()
                writer.field("id", user.id)
                writer.field("name", user.name)
                writer.endObject()
            }
        }
    }

    static var invalidInvitation: APIError {
        APIError.authenticationRequired("the invitation code is not valid: unknown, already used, replaced by a newer one, "
                                        + "or expired; ask for a new one")
    }

    /// `PUT /v1/me/password` `{"current","new"}`: the current password first (a wrong one counts
    /// as a failed sign-in and is limited the same way), then the new one against the policy; every
    /// other session of the person ends, this one stays.
    func changePassword(_ context: inout RequestContext, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(APIError) {
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        let (current, new) = try RequestBody.decode { () throws(JSONFieldError) in
            let current = try body.requiredString("current")
            let new = try body.requiredString("new")
            try body.finish()
            return (current, new)
        }
        let (user, session) = try context.person()
        guard current.utf8.count <= PasswordPolicy.maximumBytes else { throw Self.wrongCurrentPassword }
        if let refusal = PasswordPolicy.standard.refusal(of: new, name: user.name) {
            throw APIError.invalidField("new", refusal.reason)
        }
        let people = data.people
        let throttle = SignInThrottle(people: people)
        let accountKey = SignInThrottle.accountKey(user.name)
        let addressKey = ClientAddressResolver.rateLimitKey(addresses.clientAddress(peer: context.connection.remoteAddress,
                                                                                    headers: context.request.headers))
        if let wait = try storeCall({ try throttle.retryAfter(accountKey: accountKey, addressKey: addressKey, nowMs: StoreClock.nowMilliseconds()) }) {
            throw APIError.rateLimited(retryAfterSeconds: wait, "too many wrong passwords for this account or from this address; retry in \(wait) s")
        }
        try hashing.answer(problems: context.problems, respond: respond) { () throws(APIError) -> HTTPResponse in
            let stored = try storeCall { try people.signInAccount(name: user.name) }?.passwordHash
            let verified = stored.map { PasswordHashing.verify(current, against: $0) } ?? PasswordHashing.dummyVerify(current)
            guard verified else {
                try storeCall { try throttle.recordFailure(accountKey: accountKey, addressKey: addressKey, nowMs: StoreClock.nowMilliseconds()) }
                throw Self.wrongCurrentPassword
            }
            let hash: PasswordHash
            do { hash = try PasswordHashing.hash(new) } catch { throw APIError.internalError(error) }
            try storeCall { try people.changePassword(userRowID: user.rowID, hash: hash.phc, keepingSession: session.tokenHash) }
            var answer = HTTPResponse(status: .noContent)
            answer.headers.add("Cache-Control", "no-store")
            return answer
        }
    }

    /// A 403, not a 401: the session is fine, the password given for the change is not.
    static var wrongCurrentPassword: APIError { APIError.authorizationDenied("the current password is wrong") }

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
