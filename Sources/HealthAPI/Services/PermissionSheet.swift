import HTTP
import HealthModel
import HealthStore
import Identity
import JSON
import Synchronization

/// The person's side of the permission model, for a signed-in person: the sheet (HealthKit's
/// authorization sheet, answering an app's permission request by its user code) and the apps page
/// (Settings › Health › Data Access & Devices: each app's switches, changed or revoked).
final class PermissionSheet: Sendable {
    let data: HealthData
    /// Unix milliseconds (tests fix it).
    let now: @Sendable () -> Int64
    /// Wrong user codes per person: a user code is 8 letters of 20 (34.6 bits), so guessing one is
    /// hopeless at 10 tries per 15 minutes, and the code lives 600 s.
    let attempts = Mutex(AttemptWindow(limit: PermissionSheet.attemptLimit, window: PermissionSheet.attemptWindow))

    static let attemptLimit = 10
    static let attemptWindow: Double = 15 * 60

    init(data: HealthData, now: @escaping @Sendable () -> Int64 = StoreClock.nowMilliseconds) {
        self.data = data
        self.now = now
    }

    // MARK: The sheet

    /// `GET /v1/me/authorization-requests/{userCode}`: what the sheet shows: the app's name and
    /// reason (text: the dashboard renders them with textContent), the asked types the person
    /// has not decided yet, since when the app has access already (null when it has none), and
    /// another allowed app whose name this one's reads like (null when none).
    func show(userCode input: String, for user: User) throws(APIError) -> HTTPResponse {
        let record = try pendingRequest(input, for: user)
        let grants = try storeCall { try data.person(user).appGrants() }
        let grant = grants.first { $0.app == record.app }
        let lookalike = Self.lookalike(of: record, among: grants)
        let shown = grant?.undecided(share: record.share, read: record.read) ?? (share: record.share, read: record.read)
        let remaining = max(0, Int64(((Double(record.created) / 1000 + DeviceAuthorization.lifetime) - Double(now()) / 1000).rounded(.down)))
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("userCode", UserCode(record.userCode)?.description ?? record.userCode)
            writer.field("app", record.app)
            writer.field("displayName", record.displayName)
            writer.field("reason", record.reason)
            writer.key("share"); AccountRoutes.writeStrings(shown.share, into: &writer)
            writer.key("read"); AccountRoutes.writeStrings(shown.read, into: &writer)
            writer.field("expiresIn", remaining)
            // Anyone can ask in an app's name (the device flow cannot prove who the app is), and
            // allowing gives the device showing this code the access the app already has: the
            // sheet warns when there is some.
            writer.field("allowedBefore", grant.flatMap { $0.allowsAny ? RFC3339.format($0.created) : nil })
            // Another app's name, read alike: how one app would pass for another on the sheet.
            writer.key("readsLike")
            if let lookalike {
                writer.beginObject()
                writer.field("app", lookalike.app)
                writer.field("displayName", lookalike.displayName)
                writer.endObject()
            } else {
                writer.null()
            }
            writer.endObject()
        }
    }

    /// An app the person allowed (it may read or write now) that is not the asking app, but whose
    /// id or shown name reads like the request's id or shown name (`LookalikeNames.key`: another
    /// case, full-width letters, a decomposed accent). Asking as "Runner" with the name "Runner"
    /// while the person allowed "runner" is how an app would be allowed in another's place.
    static func lookalike(of request: AuthorizationRequestRecord, among grants: [AppGrant]) -> AppGrant? {
        let asked = Set([LookalikeNames.key(request.app), LookalikeNames.key(request.displayName)])
        return grants.first { grant in
            grant.app != request.app && grant.allowsAny
                && !asked.isDisjoint(with: [LookalikeNames.key(grant.app), LookalikeNames.key(grant.displayName)])
        }
    }

    /// `POST /v1/me/authorization-requests/{userCode}` `{"allow","share","read"}`: the person's
    /// answer. `share`/`read` are the switches turned on, a subset of what was asked (more is a 400).
    /// The types shown are decided: on as sent with Allow, off otherwise.
    func answer(userCode input: String, request: HTTPRequest, for user: User) throws(APIError) -> HTTPResponse {
        var body = try RequestBody.json(request)
        let (allow, share, read) = try RequestBody.decode { () throws(JSONFieldError) in
            let allow = try body.requiredBool("allow")
            let share = try body.optionalArray("share")?.strings() ?? []
            let read = try body.optionalArray("read")?.strings() ?? []
            try body.finish()
            return (allow, share, read)
        }
        let shareTypes = try PermissionRequestRoutes.orderedTypes(share, field: "share", allowCharacteristics: false)
        let readTypes = try PermissionRequestRoutes.orderedTypes(read, field: "read", allowCharacteristics: true)
        let asked = try pendingRequest(input, for: user)
        if let extra = shareTypes.first(where: { !asked.share.contains($0) }) {
            throw APIError.invalidField("share", "'\(extra)' was not asked for to share; send a subset of the request's types")
        }
        if let extra = readTypes.first(where: { !asked.read.contains($0) }) {
            throw APIError.invalidField("read", "'\(extra)' was not asked for to read; send a subset of the request's types")
        }
        let at = now()
        let answered = try storeCall {
            try data.person(user).answerAuthorizationRequest(userCode: asked.userCode) { record, grant in
                let shown = grant.undecided(share: record.share, read: record.read)
                grant.answer(shown: shown, allow: allow, share: Set(shareTypes), read: Set(readTypes))
                grant.displayName = record.displayName
                var device = DeviceAuthorization(record)
                do throws(DeviceAuthorization.DecisionError) {
                    // What the token will carry for this request: the asked types now switched on.
                    try device.decide(allow: allow, share: record.share.filter(grant.share.contains),
                                      read: record.read.filter(grant.read.contains), at: Double(at) / 1000)
                } catch {
                    switch error {
                    case .expired: throw APIError.notFound("the permission request has expired; ask the app to request again")
                    case .alreadyDecided: throw APIError.conflict("this permission request was already answered")
                    }
                }
                device.write(into: &record)
                record.userRowID = user.rowID
            }
        }
        guard answered != nil else { throw APIError.notFound("no permission request has this code") }
        return HTTPResponse(status: .noContent)
    }

    /// The pending, unexpired request for a code the person typed. Unknown, malformed and expired
    /// codes count against the person's attempts (429 with Retry-After past the limit); a request
    /// already answered is a 409.
    private func pendingRequest(_ input: String, for user: User) throws(APIError) -> AuthorizationRequestRecord {
        let seconds = Double(now()) / 1000
        if let wait = attempts.withLock({ $0.retryAfter(user.id, at: seconds) }) {
            throw APIError.rateLimited(retryAfterSeconds: wait, "too many wrong codes; retry in \(wait) s")
        }
        func wrong(_ detail: String) -> APIError {
            attempts.withLock { window in
                window.recordFailure(user.id, at: seconds)
                window.prune(at: seconds)
            }
            return APIError.notFound(detail)
        }
        guard let code = UserCode(input) else { throw wrong("no permission request has this code (8 letters, XXXX-XXXX)") }
        guard let record = try storeCall({ try data.authorizationRequest(userCode: code.letters) }) else {
            throw wrong("no permission request has this code")
        }
        guard !DeviceAuthorization(record).isExpired(at: seconds) else {
            throw wrong("the permission request has expired; ask the app to request again")
        }
        guard record.state == .pending else { throw APIError.conflict("this permission request was already answered") }
        return record
    }

    // MARK: The apps page

    /// `GET /v1/me/apps`: every app with switches, oldest first.
    func apps(for user: User) throws(APIError) -> HTTPResponse {
        let grants = try storeCall { try data.person(user).appGrants() }
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.key("apps")
            writer.beginArray()
            for grant in grants { Self.write(grant, into: &writer) }
            writer.endArray()
            writer.endObject()
        }
    }

    /// `PUT /v1/me/apps/{app}` `{"share","read"}`: the switches become exactly these (each a type
    /// the app has a switch for); a narrowing ends the app's open streams and long-polls at once.
    func change(app: String, request: HTTPRequest, for user: User) throws(APIError) -> HTTPResponse {
        var body = try RequestBody.json(request)
        let (share, read) = try RequestBody.decode { () throws(JSONFieldError) in
            let share = try body.requiredArray("share").strings()
            let read = try body.requiredArray("read").strings()
            try body.finish()
            return (share, read)
        }
        let shareTypes = Set(try PermissionRequestRoutes.orderedTypes(share, field: "share", allowCharacteristics: false))
        let readTypes = Set(try PermissionRequestRoutes.orderedTypes(read, field: "read", allowCharacteristics: true))
        let saved = try storeCall {
            try data.person(user).updateAppGrant(app: app) { grant in
                do throws(AppGrant.UnknownSwitch) {
                    try grant.setSwitches(read: readTypes, share: shareTypes)
                } catch {
                    throw APIError.invalidField(error.field, "'\(error.type)' has no switch for this app (it never asked for it)")
                }
            }
        }
        guard let saved else { throw APIError.notFound("no app '\(app)' has permissions of yours") }
        return JSONResponse.write { writer in Self.write(saved, into: &writer) }
    }

    /// `DELETE /v1/me/apps/{app}`: revokes every token of the app (their streams end at once) and
    /// forgets its switches.
    func revoke(app: String, for user: User) throws(APIError) -> HTTPResponse {
        guard try storeCall({ try data.person(user).revokeApp(app) }) else {
            throw APIError.notFound("no app '\(app)' has permissions of yours")
        }
        return HTTPResponse(status: .noContent)
    }

    /// `{"app","displayName","share","read","created","lastUsed","switches":{"share":{type:bool},"read":{...}}}`:
    /// the switches that are on, and every switch (on or off) for the apps page to draw.
    static func write(_ grant: AppGrant, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("app", grant.app)
        writer.field("displayName", grant.displayName)
        writer.key("share"); AccountRoutes.writeStrings(grant.share.sorted(), into: &writer)
        writer.key("read"); AccountRoutes.writeStrings(grant.read.sorted(), into: &writer)
        writer.field("created", RFC3339.format(grant.created))
        writer.field("lastUsed", grant.lastUsed.map(RFC3339.format))
        writer.key("switches")
        writer.beginObject()
        for (name, decided, on) in [("share", grant.decidedShare, grant.share), ("read", grant.decidedRead, grant.read)] {
            writer.key(name)
            writer.beginObject()
            for type in decided.sorted() {
                writer.key(type)
                writer.bool(on.contains(type))
            }
            writer.endObject()
        }
        writer.endObject()
        writer.endObject()
    }
}
