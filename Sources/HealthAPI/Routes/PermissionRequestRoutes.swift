import Foundation
import HTTP
import HealthModel
import HealthStore
import HealthdSettings
import Identity
import JSON

/// RFC 8628's device grant shaped like HealthKit's `requestAuthorization(toShare:read:)`: an app
/// asks without a token (`POST /v1/authorization-requests`), the person answers on the sheet, and
/// the app polls `POST /v1/authorization-requests/token` until it gets its token, exactly once.
/// The answer names only the share types granted: the read decision is never disclosed.
struct PermissionRequestRoutes: Sendable {
    let data: HealthData
    let clientAddresses: ClientAddressResolver
    /// New requests per client address (IPv6 per /64): each one stores a row, so an address gets a
    /// handful at once and then one every few seconds, far below the general address budget.
    let requestLimiter: TokenBucketLimiter
    /// Unix milliseconds (tests fix it).
    let now: @Sendable () -> Int64

    static let requestsPerAddress = TokenBucketLimiter.Limit(perSecond: 0.2, burst: 10)
    static let maximumDisplayName = 100
    static let maximumReason = 1_000

    static func register(into router: inout Router<Route>, data: HealthData, configuration: HealthdConfiguration,
                         now: @escaping @Sendable () -> Int64 = StoreClock.nowMilliseconds) {
        let routes = PermissionRequestRoutes(
            data: data,
            clientAddresses: ClientAddressResolver(trustedProxies: configuration.trustedProxies, header: configuration.trustedProxyHeader),
            requestLimiter: TokenBucketLimiter(limit: requestsPerAddress), now: now)
        router.register(.post, "/v1/authorization-requests", Route(access: .open, handler: routes.create))
        router.register(.post, "/v1/authorization-requests/token", Route(access: .open, handler: routes.poll))
        // The person's side, with the session cookie.
        let sheet = PermissionSheet(data: data, now: now)
        router.register(.get, "/v1/me/authorization-requests/{userCode}", Route(access: .person) { context throws(APIError) in
            try context.query.rejectUnknown()
            return try sheet.show(userCode: context.parameter("userCode"), for: try context.person().user)
        })
        router.register(.post, "/v1/me/authorization-requests/{userCode}", Route(access: .person) { context throws(APIError) in
            try context.query.rejectUnknown()
            return try sheet.answer(userCode: context.parameter("userCode"), request: context.request, for: try context.person().user)
        })
        router.register(.get, "/v1/me/apps", Route(access: .person) { context throws(APIError) in
            try context.query.rejectUnknown()
            return try sheet.apps(for: try context.person().user)
        })
        router.register(.put, "/v1/me/apps/{app}", Route(access: .person) { context throws(APIError) in
            try context.query.rejectUnknown()
            return try sheet.change(app: context.parameter("app"), request: context.request, for: try context.person().user)
        })
        router.register(.delete, "/v1/me/apps/{app}", Route(access: .person) { context throws(APIError) in
            try context.query.rejectUnknown()
            return try sheet.revoke(app: context.parameter("app"), for: try context.person().user)
        })
    }

    // MARK: The app asks

    /// `POST /v1/authorization-requests`: stores the request and answers its codes.
    func create(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let client = clientAddresses.clientAddress(peer: context.connection.remoteAddress, headers: context.request.headers)
        if let wait = requestLimiter.take(ClientAddressResolver.rateLimitKey(client)) {
            throw APIError.rateLimited(retryAfterSeconds: wait, "too many permission requests from this address; retry in \(wait) s")
        }
        var body = try RequestBody.json(context.request)
        let (app, displayName, share, read, reason) = try RequestBody.decode { () throws(JSONFieldError) in
            let app = try body.requiredString("app")
            let displayName = try body.optionalString("displayName")
            let share = try body.optionalArray("share")?.strings() ?? []
            let read = try body.optionalArray("read")?.strings() ?? []
            let reason = try body.requiredString("reason")
            try body.finish()
            return (app, displayName, share, read, reason)
        }
        if let problem = AppName.problem(app) { throw APIError.invalidField("app", problem) }
        if let problem = VisibleName.problem(displayName ?? app, maximumLength: Self.maximumDisplayName) {
            throw APIError.invalidField("displayName", problem)
        }
        try Self.requireReason(reason)
        let shareTypes = try Self.orderedTypes(share, field: "share", allowCharacteristics: false)
        let readTypes = try Self.orderedTypes(read, field: "read", allowCharacteristics: true)
        guard !shareTypes.isEmpty || !readTypes.isEmpty else {
            throw APIError.invalidArgument("ask for at least one type in share or read")
        }
        let created = now()
        let deviceCode = DeviceCode.random()
        var userCode = UserCode.random()
        // A user code still held by a live request is drawn again (34.6 bits: almost never).
        for attempt in 0..<5 {
            if attempt > 0 { userCode = UserCode.random() }
            let record = AuthorizationRequestRecord(
                id: UUID().uuidString.lowercased(), userCode: userCode.letters, app: app, displayName: displayName ?? app, reason: reason,
                share: shareTypes, read: readTypes, created: created, interval: DeviceAuthorization.initialInterval)
            guard try storeCall({ try data.createAuthorizationRequest(record, deviceCodeHash: deviceCode.hash) }) else { continue }
            let https = clientAddresses.isHTTPS(peer: context.connection.remoteAddress, headers: context.request.headers)
            let base = Self.verificationURI(host: context.request.headers["Host"], https: https)
            return JSONResponse.write(status: .created) { writer in
                writer.beginObject()
                writer.field("deviceCode", deviceCode.value)
                writer.field("userCode", userCode.description)
                writer.field("verificationURI", base)
                writer.field("verificationURIComplete", base + "?code=" + userCode.description)
                writer.field("expiresIn", Int64(DeviceAuthorization.lifetime))
                writer.field("interval", Int64(DeviceAuthorization.initialInterval))
                writer.endObject()
            }
        }
        throw APIError.internalError(describing: "no free user code was found in five draws")
    }

    /// Where the person answers: the dashboard's sheet, on the address the app reached the server
    /// by (`Host`, and https when a trusted proxy says so; a value that is not a host and port falls
    /// back to a path on the same origin).
    static func verificationURI(host: String?, https: Bool) -> String {
        let path = "/#/authorize"
        guard let host, !host.isEmpty, host.utf8.count <= 255,
              host.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ".-:[]".unicodeScalars.contains($0)) })
        else { return path }
        return (https ? "https://" : "http://") + host + path
    }

    /// The reason shown on the sheet under the app's name: not empty, at most `maximumReason`
    /// characters, shown as written (`VisibleName.textProblem`). HTML is stored as given and only
    /// ever returned as JSON text.
    static func requireReason(_ reason: String) throws(APIError) {
        guard !reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { throw APIError.invalidField("reason", "must not be empty") }
        guard reason.count <= maximumReason else { throw APIError.invalidField("reason", "must be at most \(maximumReason) characters") }
        if let problem = VisibleName.textProblem(reason) { throw APIError.invalidField("reason", problem) }
    }

    /// Canonical type ids in the order given, each once; an unknown type is a 400 naming the entry.
    static func orderedTypes(_ names: [String], field: String, allowCharacteristics: Bool) throws(APIError) -> [String] {
        var ordered: [String] = []
        for (index, name) in names.enumerated() {
            let id: String
            if let type = HealthTypeCatalog.type(name), type.kind != .characteristic {
                id = type.id
            } else if let characteristic = HealthTypeCatalog.characteristicTypes.first(where: { $0.id == name || $0.longIdentifier == name }) {
                guard allowCharacteristics else {
                    throw APIError.invalidField("\(field)[\(index)]", "characteristics cannot be shared by apps (as in HealthKit)")
                }
                id = characteristic.id
            } else {
                throw APIError.invalidField("\(field)[\(index)]", "unknown type '\(name)'")
            }
            if !ordered.contains(id) { ordered.append(id) }
        }
        return ordered
    }

    // MARK: The app polls

    /// `POST /v1/authorization-requests/token`: RFC 8628 section 3.4/3.5. A 400 with an OAuth
    /// `error` until the person allowed; then the token once, with the granted share types only.
    func poll(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        let presented = try RequestBody.decode { () throws(JSONFieldError) in
            let code = try body.requiredString("deviceCode")
            try body.finish()
            return code
        }
        guard let deviceCode = DeviceCode(presented: presented) else {
            return Self.oauthError("invalid_grant", "the device code is not one this server issued")
        }
        let seconds = Double(now()) / 1000
        var answer = DeviceAuthorization.PollAnswer.invalidGrant
        let outcome = try storeCall {
            try data.pollAuthorizationRequest(deviceCodeHash: deviceCode.hash) { record in
                var device = DeviceAuthorization(record)
                answer = device.poll(at: seconds)
                device.write(into: &record)
                if case .issue = answer { return true }
                return false
            }
        }
        switch outcome {
        case .unknown:
            return Self.oauthError("invalid_grant", "the device code is not one this server issued, or it was purged")
        case .polled:
            if case .issue = answer { return Self.oauthError("access_denied", nil) }  // the person revoked the app meanwhile
            return Self.pollError(answer)
        case .issued(let record, let authorization, let token):
            // The share types this request was granted that the token may still share; never the reads.
            let share = record.grantedShare.filter(authorization.share.contains)
            return JSONResponse.write { writer in
                writer.beginObject()
                writer.field("token", token)
                writer.field("user", authorization.userID)
                writer.field("app", authorization.appName)
                writer.key("share"); AccountRoutes.writeStrings(share, into: &writer)
                writer.endObject()
            }
        }
    }

    static func pollError(_ answer: DeviceAuthorization.PollAnswer) -> HTTPResponse {
        switch answer {
        case .slowDown(let interval):
            // The new interval too, so a client need not count the 5 s steps itself.
            return JSONResponse.write(status: .badRequest) { writer in
                writer.beginObject()
                writer.field("error", "slow_down")
                writer.field("interval", Int64(interval))
                writer.endObject()
            }
        case .authorizationPending: return oauthError("authorization_pending", nil)
        case .accessDenied: return oauthError("access_denied", nil)
        case .expiredToken: return oauthError("expired_token", nil)
        case .invalidGrant: return oauthError("invalid_grant", "the device code was already exchanged for a token")
        case .issue: return oauthError("invalid_grant", nil)
        }
    }

    /// RFC 6749 section 5.2's error answer.
    static func oauthError(_ error: String, _ description: String?) -> HTTPResponse {
        JSONResponse.write(status: .badRequest) { writer in
            writer.beginObject()
            writer.field("error", error)
            if let description { writer.field("error_description", description) }
            writer.endObject()
        }
    }
}

extension DeviceAuthorization {
    /// The stored request as the poll's value (times in seconds).
    init(_ record: AuthorizationRequestRecord) {
        let state: State = switch record.state {
        case .pending: .pending
        case .allowed: .allowed(share: record.grantedShare, read: record.grantedRead)
        case .denied: .denied
        case .issued: .issued
        }
        self.init(state: state, created: Double(record.created) / 1000, interval: record.interval,
                  lastPoll: record.lastPoll.map { Double($0) / 1000 })
    }

    /// Writes the poll's or the answer's changes back into the stored request.
    func write(into record: inout AuthorizationRequestRecord) {
        record.interval = interval
        record.lastPoll = lastPoll.map { Int64(($0 * 1000).rounded()) }
        switch state {
        case .pending: record.state = .pending
        case .allowed(let share, let read):
            record.state = .allowed
            record.grantedShare = share
            record.grantedRead = read
        case .denied: record.state = .denied
        case .issued: record.state = .issued
        }
    }
}
