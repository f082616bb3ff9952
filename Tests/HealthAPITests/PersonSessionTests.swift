import Dispatch
import Foundation
import Synchronization
import Testing
@testable import HTTP
@testable import HealthAPI
@testable import HealthStore
import HealthdSettings
import Identity
import PostgresTestSupport

/// Sessions and sign-in (docs/decisions.md, "People and sign-in"), on SQLite and, when a server
/// is given, on PostgreSQL.
@Suite struct PersonSessionTests {
    static let backends: [TestServer.Backend] = TestPostgres.isAvailable ? [.sqlite, .postgres] : [.sqlite]
    static let password = "correct horse battery staple"

    /// A server with one user, `jane`, whose password is set through the store.
    static func server(_ backend: TestServer.Backend, configure: (inout HealthdConfiguration) -> Void = { _ in })
        throws -> (TestServer, User) {
        let server = try TestServer(backend: backend, configure: configure)
        _ = server.createUser("jane")
        let people = HealthData(server.backend).people
        let user = try #require(try people.signInAccount(name: "jane")?.user)
        try people.setPassword(userRowID: user.rowID, hash: try PasswordHashing.hash(password).phc)
        return (server, user)
    }

    static func signIn(_ server: TestServer, name: String = "jane", password: String = password,
                       headers: [(String, String)] = [], remote: String = "127.0.0.1") -> TestServer.Reply {
        let body = #"{"name":\#(jsonString(name)),"password":\#(jsonString(password))}"#
        return server.request(.post, "/v1/session", json: body, headers: headers, remote: remote)
    }

    static func jsonString(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// `name=value` of the answer's session cookie.
    static func cookie(_ reply: TestServer.Reply) -> String? {
        reply.headers.values("Set-Cookie").first.flatMap { $0.split(separator: ";").first.map(String.init) }
    }

    static func me(_ server: TestServer, cookie: String, headers: [(String, String)] = []) -> TestServer.Reply {
        server.request(.get, "/v1/me", headers: [("Cookie", cookie)] + headers)
    }

    @Test("sign-in answers 204 and an HttpOnly, SameSite=Strict cookie that signs the person in", arguments: backends)
    func signInSetsTheCookie(backend: TestServer.Backend) throws {
        let (server, user) = try Self.server(backend)
        let reply = Self.signIn(server)
        #expect(reply.status == 204)
        let setCookie = try #require(reply.headers.values("Set-Cookie").first)
        #expect(setCookie.hasPrefix("healthd_session="))
        #expect(setCookie.contains("; Path=/; Max-Age=2592000; HttpOnly; SameSite=Strict"))
        #expect(!setCookie.contains("Secure"))
        let cookie = try #require(Self.cookie(reply))
        let me = Self.me(server, cookie: cookie)
        #expect(me.status == 200)
        #expect(me["id"]?.stringValue == user.id)
        #expect(me["name"]?.stringValue == "jane")
        // Only the token's SHA-256 is stored.
        let token = try #require(SessionToken(presented: cookie.dropFirst("healthd_session=".count)))
        #expect(try HealthData(server.backend).people.session(tokenHash: token.hash)?.user == user)
    }

    @Test("a wrong name and a wrong password get byte-identical 401s", arguments: backends)
    func wrongNameAndWrongPasswordLookTheSame(backend: TestServer.Backend) throws {
        let (server, _) = try Self.server(backend)
        _ = server.createUser("inactive")  // no password yet: the same as no account
        let wrongPassword = Self.signIn(server, password: "not the password at all")
        let wrongName = Self.signIn(server, name: "nobody")
        let inactive = Self.signIn(server, name: "inactive", password: Self.password)
        for reply in [wrongPassword, wrongName, inactive] {
            #expect(reply.status == 401)
            #expect(reply.body == wrongPassword.body)
            #expect(reply.headers.values("Set-Cookie").isEmpty)
        }
        #expect(wrongPassword.code == "errorAuthenticationRequired")
    }

    @Test("a name longer than any account's is a 400 and stores no failure under it", arguments: backends)
    func overlongNamesAreRefusedBeforeTheLimiter(backend: TestServer.Backend) throws {
        let (server, _) = try Self.server(backend)
        let long = String(repeating: "n", count: UserName.maximumLength + 1)
        let reply = Self.signIn(server, name: long, password: "not the password at all")
        #expect(reply.status == 400 && reply.code == "errorInvalidArgument")
        let throttle = SignInThrottle(people: HealthData(server.backend).people)
        #expect(try throttle.people.signInFailures(kind: .account, key: SignInThrottle.accountKey(long), sinceMs: 0).isEmpty)
    }

    @Test("a cookie sent at sign-in is never the session after it, and it ends", arguments: backends)
    func noSessionFixation(backend: TestServer.Backend) throws {
        let (server, _) = try Self.server(backend)
        let first = try #require(Self.cookie(Self.signIn(server)))
        let planted = "healthd_session=" + SessionToken.random().value
        for presented in [first, planted] {
            let second = try #require(Self.cookie(Self.signIn(server, headers: [("Cookie", presented)])))
            #expect(second != presented)
            #expect(Self.me(server, cookie: second).status == 200)
            #expect(Self.me(server, cookie: presented).status == 401)
        }
    }

    @Test("a cookie never authorizes an app route, and a bearer token never a person's", arguments: backends)
    func cookieAndTokenStayApart(backend: TestServer.Backend) throws {
        let (server, user) = try Self.server(backend)
        let cookie = try #require(Self.cookie(Self.signIn(server)))
        #expect(server.request(.get, "/v1/samples?type=stepCount", headers: [("Cookie", cookie)]).status == 401)
        #expect(server.request(.get, "/v1/statistics?type=stepCount", headers: [("Cookie", cookie)]).status == 401)
        let token = server.token(user: user.id, app: "app", read: ["stepCount"], share: [])
        let withBearer = server.request(.get, "/v1/me", token: token, headers: [("Cookie", cookie)])
        #expect(withBearer.status == 401)
        #expect(withBearer.text.contains("not a bearer token"))
        #expect(server.request(.get, "/v1/me", token: TestServer.adminToken).status == 401)
        #expect(server.request(.get, "/v1/me").status == 401)
    }

    @Test("a state-changing request with the cookie must be JSON: text, form and no type are 415", arguments: backends)
    func cookieWritesMustBeJSON(backend: TestServer.Backend) throws {
        let (server, _) = try Self.server(backend)
        let cookie = try #require(Self.cookie(Self.signIn(server)))
        for type in [nil, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            var headers = [("Cookie", cookie)]
            if let type { headers.append(("Content-Type", type)) }
            let reply = server.request(.delete, "/v1/session", headers: headers)
            #expect(reply.status == 415, "\(type ?? "no type")")
            #expect(reply.code == "errorUnsupportedMediaType")
        }
        #expect(Self.me(server, cookie: cookie).status == 200)
        let signOut = server.request(.delete, "/v1/session", headers: [("Cookie", cookie), ("Content-Type", "application/json")])
        #expect(signOut.status == 204)
        #expect(signOut.headers.values("Set-Cookie").first?.hasPrefix("healthd_session=; Path=/; Max-Age=0") == true)
        #expect(Self.me(server, cookie: cookie).status == 401)
        // Sign-in is JSON only as well (a form cannot sign a browser into someone else's account).
        let form = server.request(.post, "/v1/session", headers: [("Content-Type", "application/x-www-form-urlencoded")])
        #expect(form.status == 415)
    }

    @Test("behind a trusted proxy that says https the cookie is Secure and named __Host-", arguments: backends)
    func secureCookieBehindTrustedProxy(backend: TestServer.Backend) throws {
        let (server, _) = try Self.server(backend) { $0.trustedProxies = [CIDRBlock("10.0.0.0/8")!] }
        let https = [("X-Forwarded-Proto", "https"), ("X-Forwarded-For", "192.0.2.7")]
        let reply = Self.signIn(server, headers: https, remote: "10.1.2.3")
        #expect(reply.status == 204)
        let setCookie = try #require(reply.headers.values("Set-Cookie").first)
        #expect(setCookie.hasPrefix("__Host-healthd_session="))
        #expect(setCookie.hasSuffix("; HttpOnly; SameSite=Strict; Secure"))
        let cookie = try #require(Self.cookie(reply))
        #expect(server.request(.get, "/v1/me", headers: [("Cookie", cookie)] + https, remote: "10.1.2.3").status == 200)
        // An untrusted peer cannot claim https.
        let direct = Self.signIn(server, headers: https, remote: "192.0.2.9")
        #expect(direct.headers.values("Set-Cookie").first?.hasPrefix("healthd_session=") == true)
    }

    @Test("a sign-in deletes the person's sessions idle past 30 days, and only those", arguments: backends)
    func signInForgetsExpiredSessions(backend: TestServer.Backend) throws {
        let (server, _) = try Self.server(backend)
        let people = HealthData(server.backend).people
        func token(_ reply: TestServer.Reply) throws -> SessionToken {
            let cookie = try #require(Self.cookie(reply))
            return try #require(SessionToken(presented: cookie.dropFirst("healthd_session=".count)))
        }
        let forgotten = try token(Self.signIn(server))
        let recent = try token(Self.signIn(server))
        func age(_ token: SessionToken, by milliseconds: Int64) throws {
            let hex = token.hash.map { String(format: "%02x", $0) }.joined()
            try server.executeBehindTheServersBack(
                sqlite: "UPDATE sessions SET last_used_ms = CAST(? AS INTEGER) WHERE hex(token_hash) = upper('\(hex)')",
                postgres: "UPDATE sessions SET last_used_ms = $1::bigint WHERE token_hash = decode('\(hex)', 'hex')",
                String(StoreClock.nowMilliseconds() - milliseconds))
        }
        try age(forgotten, by: PeopleAccounts.sessionIdleMilliseconds + 60_000)
        try age(recent, by: PeopleAccounts.sessionIdleMilliseconds - 3_600_000)
        #expect(try people.session(tokenHash: forgotten.hash) != nil)
        #expect(Self.signIn(server).status == 204)
        #expect(try people.session(tokenHash: forgotten.hash) == nil)
        #expect(try people.session(tokenHash: recent.hash) != nil)
    }

    @Test("an idle session past 30 days is refused and deleted; one idle over an hour is renewed", arguments: backends)
    func idleExpiryAndRenewal(backend: TestServer.Backend) throws {
        let (server, _) = try Self.server(backend)
        let people = HealthData(server.backend).people
        let cookie = try #require(Self.cookie(Self.signIn(server)))
        let token = try #require(SessionToken(presented: cookie.dropFirst("healthd_session=".count)))
        let hex = token.hash.map { String(format: "%02x", $0) }.joined()
        func setLastUsed(ago milliseconds: Int64) throws {
            let at = String(StoreClock.nowMilliseconds() - milliseconds)
            try server.executeBehindTheServersBack(sqlite: "UPDATE sessions SET last_used_ms = CAST(? AS INTEGER) WHERE hex(token_hash) = upper('\(hex)')",
                                                   postgres: "UPDATE sessions SET last_used_ms = $1::bigint WHERE token_hash = decode('\(hex)', 'hex')", at)
        }
        // Used a minute ago: no renewal.
        try setLastUsed(ago: 60_000)
        let fresh = Self.me(server, cookie: cookie)
        #expect(fresh.status == 200)
        #expect(fresh.headers.values("Set-Cookie").isEmpty)
        // Two hours ago: renewed, with the same token and a new Max-Age.
        try setLastUsed(ago: 7_200_000)
        let renewed = Self.me(server, cookie: cookie)
        #expect(renewed.status == 200)
        #expect(renewed.headers.values("Set-Cookie").first?.hasPrefix(cookie + "; Path=/; Max-Age=2592000") == true)
        let lastUsed = try #require(try people.session(tokenHash: token.hash)?.lastUsedMs)
        #expect(StoreClock.nowMilliseconds() - lastUsed < 60_000)
        // Thirty days ago: gone.
        try setLastUsed(ago: SessionPolicy.idleMilliseconds + 1_000)
        #expect(Self.me(server, cookie: cookie).status == 401)
        #expect(try people.session(tokenHash: token.hash) == nil)
    }

    @Test("after 10 failures for a name, even the right password is a 429 with Retry-After, from any address",
          arguments: backends)
    func accountLimit(backend: TestServer.Backend) throws {
        let (server, _) = try Self.server(backend)
        for attempt in 0 ..< SignInLimiter.accountLimit {
            // Names compare case-insensitively for the budget, and addresses differ: all count.
            let reply = Self.signIn(server, name: attempt.isMultiple(of: 2) ? "jane" : "JANE", password: "wrong password \(attempt)",
                                    remote: "192.0.2.\(attempt + 1)")
            #expect(reply.status == 401)
        }
        let locked = Self.signIn(server, remote: "198.51.100.1")
        #expect(locked.status == 429)
        #expect(locked.code == "errorRateLimited")
        let wait = try #require(locked.headers["Retry-After"].flatMap(Int.init))
        #expect(wait > 0 && wait <= 900)
        // An unknown name is limited the same way.
        for _ in 0 ..< SignInLimiter.accountLimit { _ = Self.signIn(server, name: "ghost", password: "whatever it is") }
        #expect(Self.signIn(server, name: "ghost", password: "whatever it is").status == 429)
    }

    @Test("a name that reads like the account's signs in to it; two old lookalike accounts sign in by exact name only",
          arguments: backends)
    func lookalikeNamesSignInToTheOneAccount(backend: TestServer.Backend) throws {
        let (server, user) = try Self.server(backend)
        // A phone's keyboard capitalizes; a full-width keyboard types other code points.
        for typed in ["Jane", "JANE", "\u{FF4A}\u{FF41}\u{FF4E}\u{FF45}"] {
            let reply = Self.signIn(server, name: typed)
            #expect(reply.status == 204, "\(typed): \(reply.text)")
            let cookie = try #require(Self.cookie(reply))
            #expect(Self.me(server, cookie: cookie)["id"]?.stringValue == user.id)
        }
        #expect(Self.signIn(server, name: "Janet").status == 401)
        // Two accounts that read alike, made before such names were refused (written here behind
        // the server's back): a lookalike guess picks neither; each exact name still works.
        try server.executeBehindTheServersBack(
            sqlite: "INSERT INTO users (external_id, name, created_ms) VALUES (lower(hex(randomblob(16))), ?, 0)",
            postgres: "INSERT INTO users (id, external_id, name, created_ms) VALUES (floor(random() * 1e15)::bigint + 1, md5(random()::text), $1, 0)",
            "JANE")
        let people = HealthData(server.backend).people
        let twin = try #require(try people.signInAccount(name: "JANE")?.user)
        try people.setPassword(userRowID: twin.rowID, hash: try PasswordHashing.hash(Self.password).phc)
        #expect(Self.signIn(server, name: "Jane").status == 401)
        #expect(try people.signInAccount(name: "jane")?.user == user)
        #expect(try people.signInAccount(name: "JANE")?.user == twin)
    }

    @Test("the stored throttle answers as SignInLimiter does, for any sequence of failures")
    func storedThrottleMatchesTheLimiter() {
        var generator = SystemRandomNumberGenerator()
        let address = IPAddress("2001:db8::1")!
        for _ in 0 ..< 50 {
            var limiter = SignInLimiter()
            var accountTimes: [Int64] = []
            var addressTimes: [Int64] = []
            var now: Int64 = 1_000_000_000
            for _ in 0 ..< 60 {
                now += Int64.random(in: 0 ... 60_000, using: &generator)
                let sameName = Bool.random(using: &generator)
                let name = sameName ? "jane" : "other"
                if sameName { accountTimes.append(now) }
                addressTimes.append(now)
                limiter.recordFailure(name: name, address: address, at: Double(now) / 1000)
                let probe = now + Int64.random(in: 0 ... 120_000, using: &generator)
                let stored = SignInThrottle.retryAfter(accountFailures: accountTimes.filter { $0 > probe - SignInThrottle.windowMilliseconds },
                                                       addressFailures: addressTimes.filter { $0 > probe - SignInThrottle.windowMilliseconds },
                                                       nowMs: probe)
                #expect(stored == limiter.retryAfter(name: "jane", address: address, at: Double(probe) / 1000))
            }
        }
    }

    @Test("at most `width` hashes run at once; the rest wait, and past the queue a job is refused")
    func hashingGateBoundsConcurrency() {
        let gate = PasswordHashingGate(width: 2, maximumWaiting: 3)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        let ran = Mutex<[Int]>([])
        var accepted: [Bool] = []
        for index in 0 ..< 6 {
            finished.enter()
            let took = gate.submit {
                release.wait()
                ran.withLock { $0.append(index) }
                finished.leave()
            }
            if !took { finished.leave() }
            accepted.append(took)
        }
        #expect(accepted == [true, true, true, true, true, false])
        for _ in 0 ..< 5 { release.signal() }
        finished.wait()
        #expect(gate.peakRunning == 2)
        #expect(ran.withLock { $0.sorted() } == [0, 1, 2, 3, 4])
    }

    @Test("at the head, a person's route without a live session is refused before its body", arguments: backends)
    func headAdmission(backend: TestServer.Backend) throws {
        let (server, _) = try Self.server(backend)
        let cookie = try #require(Self.cookie(Self.signIn(server)))
        func admit(_ extra: [(String, String)]) -> Int {
            var headers = HTTPHeaders()
            headers.add("Host", "test")
            for (name, value) in extra { headers.add(name, value) }
            let head = HTTPRequestHead(method: .delete, target: "/v1/session", version: .http1_1, headers: headers,
                                       framing: .contentLength(100), keepAlive: true, expectsContinue: true)
            let status = Mutex(-1)
            let done = DispatchSemaphore(value: 0)
            server.application.admit(head, connection: ConnectionInfo(id: 1, remoteAddress: "127.0.0.1")) { admission in
                switch admission {
                case .admit: status.withLock { $0 = 0 }
                case .refuse(let response): status.withLock { $0 = response.status.code }
                }
                done.signal()
            }
            done.wait()
            return status.withLock { $0 }
        }
        let json = ("Content-Type", "application/json")
        #expect(admit([("Cookie", cookie), json]) == 0)
        #expect(admit([json]) == 401)
        #expect(admit([("Cookie", "healthd_session=" + SessionToken.random().value), json]) == 401)
        #expect(admit([("Cookie", cookie), ("Content-Type", "text/plain")]) == 415)
        #expect(admit([("Cookie", cookie), ("Authorization", "Bearer \(TestServer.adminToken)"), json]) == 401)
    }
}
