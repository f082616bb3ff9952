import HTTP
import HealthModel
import HealthStore
import HealthdSettings
import Identity
import JSON
import Statistics

/// The person's data, as docs/api.md gives it ("People: recent access, own data, erasure"): recent
/// access, their own export, deleting what one app saved, erasing the account; and the admin's
/// lists of users and their apps.
struct PeopleDataRoutes: Sendable {
    let data: HealthData
    /// Days the access log keeps (the default range of `GET /v1/me/access`).
    let accessLogRetentionDays: Int
    let addresses: ClientAddressResolver
    /// Where `DELETE /v1/me` checks the password (the sign-in's gate: one hash per core at once).
    let hashing: PasswordHashingGate

    static func register(into router: inout Router<Route>, data: HealthData, configuration: HealthdConfiguration,
                         hashing: PasswordHashingGate) {
        let routes = PeopleDataRoutes(data: data, accessLogRetentionDays: configuration.accessLogRetentionDays,
                                      addresses: ClientAddressResolver(trustedProxies: configuration.trustedProxies,
                                                                       header: configuration.trustedProxyHeader),
                                      hashing: hashing)
        router.register(.get, "/v1/users", Route(access: .admin, handler: routes.listUsers))
        router.register(.get, "/v1/users/{id}/authorizations", Route(access: .admin, handler: routes.listAuthorizations))
        router.register(.delete, "/v1/users/{id}", Route(access: .admin, handler: routes.eraseUser))
        router.register(.get, "/v1/me/access", Route(access: .person, handler: routes.recentAccess))
        router.register(.get, "/v1/me/export", Route(access: .person, handler: routes.export))
        router.register(.delete, "/v1/me/apps/{app}/data", Route(access: .person, handler: routes.deleteAppData))
        router.register(.delete, "/v1/me", Route(access: .person, deferred: routes.eraseSelf))
    }

    // MARK: The admin's lists

    /// `GET /v1/users`: every user, oldest first.
    func listUsers(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let users = try storeCall { try data.users() }
        return JSONResponse.ok(UserListJSON.bytes(users))
    }

    /// `GET /v1/users/{id}/authorizations`: the user's live authorizations (apps), never a token.
    func listAuthorizations(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let user = try existingUser(context.parameter("id"))
        let authorizations = try storeCall { try data.authorizations(of: user) }
        return JSONResponse.write(capacity: 256 + authorizations.count * 256) { writer in
            writer.beginObject()
            writer.key("authorizations")
            writer.beginArray()
            for authorization in authorizations {
                writer.beginObject()
                writer.field("id", authorization.id)
                writer.field("app", authorization.app)
                writer.key("read"); AccountRoutes.writeStrings(authorization.read.sorted(), into: &writer)
                writer.key("share"); AccountRoutes.writeStrings(authorization.share.sorted(), into: &writer)
                writer.field("created", RFC3339.format(authorization.created))
                writer.field("lastUsed", authorization.lastUsed.map(RFC3339.format))
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
    }

    /// `DELETE /v1/users/{id}`: erases the user as `DELETE /v1/me` does.
    func eraseUser(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let user = try existingUser(context.parameter("id"))
        return try erase(user)
    }

    func existingUser(_ key: String) throws(APIError) -> User {
        guard let user = try storeCall({ try data.user(idOrName: key) }) else { throw APIError.notFound("no user \(key)") }
        return user
    }

    // MARK: The person's own data

    /// `DELETE /v1/me` `{"password"}`: erases the signed-in person's account. The password is
    /// checked as at sign-in (the same limiter first, one hash on the hashing gate), so a session
    /// left open on a shared computer cannot erase the account, nor guess the password faster.
    func eraseSelf(_ context: inout RequestContext, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(APIError) {
        try context.query.rejectUnknown()
        let (user, session) = try context.person()
        var body = try RequestBody.json(context.request)
        let password = try RequestBody.decode { () throws(JSONFieldError) in
            let password = try body.requiredString("password")
            try body.finish()
            return password
        }
        guard password.utf8.count <= PasswordPolicy.maximumBytes else {
            throw APIError.invalidField("password", "is longer than any password can be (\(PasswordPolicy.maximumBytes) bytes)")
        }
        let client = addresses.clientAddress(peer: context.connection.remoteAddress, headers: context.request.headers)
        let accountKey = SignInThrottle.accountKey(user.name)
        let addressKey = ClientAddressResolver.rateLimitKey(client)
        let people = data.people
        let throttle = SignInThrottle(people: people)
        if let wait = try storeCall({ try throttle.retryAfter(accountKey: accountKey, addressKey: addressKey, nowMs: StoreClock.nowMilliseconds()) }) {
            throw APIError.rateLimited(retryAfterSeconds: wait, "too many wrong passwords for this account or from this address; retry in \(wait) s")
        }
        let routes = self
        try hashing.answer(problems: context.problems, respond: respond) { () throws(APIError) -> HTTPResponse in
            let stored = try storeCall { try people.signInAccount(name: user.name) }?.passwordHash
            let verified = stored.map { PasswordHashing.verify(password, against: $0) } ?? PasswordHashing.dummyVerify(password)
            guard verified else {
                try storeCall { try throttle.recordFailure(accountKey: accountKey, addressKey: addressKey, nowMs: StoreClock.nowMilliseconds()) }
                throw APIError.authenticationRequired("the password is wrong")
            }
            var answer = try routes.erase(user)
            answer.headers.add("Set-Cookie", SessionCookie.clearCookie(secure: session.secure))
            return answer
        }
    }

    /// Erases the account and answers what was erased, per kind of row.
    func erase(_ user: User) throws(APIError) -> HTTPResponse {
        let report: ErasureReport
        do {
            report = try data.person(user).erase()
        } catch StoreError.notFound {
            throw APIError.notFound("no user \(user.id)")
        } catch {
            throw APIError(storeError: error)
        }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("user", user.id)
            writer.key("erased")
            writer.beginObject()
            for (kind, count) in report.rows.sorted(by: { $0.key < $1.key }) { writer.field(kind, count) }
            writer.endObject()
            writer.endObject()
        }
    }

    /// `GET /v1/me/access`: what the person's apps read and wrote, per app, type and day.
    func recentAccess(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let (user, _) = try context.person()
        let startText = try context.query.string("start")
        let endText = try context.query.string("end")
        let zone = try context.query.string("timeZone")
        try context.query.rejectUnknown()
        let calendar = try SummaryRoutes.bucketCalendar(zone)
        let today = SummaryRoutes.localDay(of: StoreClock.nowMilliseconds(), calendar)
        let last = try endText.map { text throws(APIError) in try Self.day(text, field: "end") } ?? today
        let first = try startText.map { text throws(APIError) in try Self.day(text, field: "start") }
            ?? last - Int64(accessLogRetentionDays) + 1
        guard last >= first else { throw APIError.invalidField("end", "is before start") }
        guard last - first < maximumDays else { throw APIError.invalidField("start", "at most \(maximumDays) days per request") }
        let from = try SummaryRoutes.localMidnight(first, calendar)
        let to = try SummaryRoutes.localMidnight(last + 1, calendar)
        let entries = try storeCall { try data.person(user).recentAccess(from: AccessSlot.start(of: from), to: to) }
        // A quarter hour counts on the local day its start falls in (exactly, for every zone whose
        // offset is a whole number of quarter hours: all of today's).
        let days = RecentAccessDay.summing(entries.filter { $0.slot >= AccessSlot.start(of: from) }) { slot in
            SummaryRoutes.localDay(of: slot, calendar)
        }.filter { $0.day >= first && $0.day <= last }
        return JSONResponse.write(capacity: 128 + days.count * 200) { writer in
            writer.beginObject()
            writer.key("access")
            writer.beginArray()
            for day in days {
                writer.beginObject()
                writer.field("app", day.app)
                writer.field("type", day.type)
                writer.field("day", HealthDay(daysSinceEpoch: day.day).description)
                writer.field("reads", day.counts.reads)
                writer.field("samplesRead", day.counts.samplesRead)
                writer.field("writes", day.counts.writes)
                writer.field("samplesWritten", day.counts.samplesWritten)
                writer.field("lastAccess", RFC3339.format(day.counts.lastAccess))
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
    }

    /// Days one recent-access request may span: 400, or all the log keeps when it keeps more (the
    /// default range is the whole of it).
    var maximumDays: Int64 { max(400, Int64(accessLogRetentionDays)) }

    static func day(_ text: String, field: String) throws(APIError) -> Int64 {
        guard let day = HealthDate.parseDay(text), (1900...2200).contains(day.year) else {
            throw APIError.invalidField(field, "must be a date YYYY-MM-DD in years 1900-2200, not '\(text)'")
        }
        return day.daysSinceEpoch
    }

    /// `GET /v1/me/export`: the person's backup (settings line, then every sample), as `healthd
    /// export --user` writes it.
    func export(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let (user, _) = try context.person()
        let backup = PersonBackup(user: user)
        let data = data
        // The person's own reads: the export ends if the session does (signed out, erased).
        return ExportScope.response(problems: context.problems, stillAllowed: ExportScope.stillAllowed(try context.app(), in: data)) { write in
            try backup.forEachPage(from: data, write)
        }
    }

    /// `DELETE /v1/me/apps/{app}/data`: deletes every sample the app saved for the person.
    func deleteAppData(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let (user, _) = try context.person()
        let app = context.parameter("app")
        let deleted = try storeCall { try data.person(user).deleteSamples(savedBy: app) }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("app", app)
            writer.field("deleted", deleted)
            writer.endObject()
        }
    }
}

/// The body of `GET /v1/users`, which `healthd users --json` prints too.
public enum UserListJSON {
    public static func bytes(_ users: [UserListing]) -> [UInt8] {
        var writer = JSONWriter(capacity: 128 + users.count * 128)
        writer.beginObject()
        writer.key("users")
        writer.beginArray()
        for listing in users {
            writer.beginObject()
            writer.field("id", listing.user.id)
            writer.field("name", listing.user.name)
            writer.field("created", RFC3339.format(listing.created))
            writer.field("activated", listing.activated)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.bytes
    }
}
