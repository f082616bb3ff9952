import HTTP
import HealthModel
import HealthStore
import Identity
import JSON

/// Users, authorizations and the share-status query (docs/api.md, Authorization).
struct AccountRoutes: Sendable {
    let data: HealthData

    static func register(into router: inout Router<Route>, data: HealthData) {
        let routes = AccountRoutes(data: data)
        router.register(.post, "/v1/users", Route(access: .admin, handler: routes.createUser))
        router.register(.post, "/v1/users/{id}/invitation", Route(access: .admin, handler: routes.createInvitation))
        router.register(.post, "/v1/authorizations", Route(access: .admin, handler: routes.createAuthorization))
        router.register(.delete, "/v1/authorizations/{id}", Route(access: .admin, handler: routes.revokeAuthorization))
        router.register(.get, "/v1/authorizations/status", Route(access: .token, handler: routes.authorizationStatus))
    }

    /// `POST /v1/users`: creates a user by name.
    func createUser(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        let name = try RequestBody.decode { () throws(JSONFieldError) in
            let name = try body.requiredString("name")
            try body.finish()
            return name
        }
        if let problem = UserName.problem(name) { throw APIError.invalidField("name", problem) }
        let user = try storeCall { try data.createUser(name: name) }
        let invitation = try storeCall { try Invitations.issue(for: user, in: data) }
        return JSONResponse.write(status: .created) { writer in
            writer.beginObject()
            writer.field("id", user.id)
            writer.field("name", user.name)
            writer.key("invitation")
            Self.write(invitation, into: &writer)
            writer.endObject()
        }
    }

    /// `POST /v1/users/{id}/invitation`: a new invitation for the person; the earlier one stops
    /// working. For an active person this resets the password at activation (their sessions end).
    func createInvitation(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let key = context.parameter("id")
        guard let user = try storeCall({ try data.user(idOrName: key) }) else { throw APIError.notFound("no user '\(key)'") }
        let invitation = try storeCall { try Invitations.issue(for: user, in: data) }
        return JSONResponse.write(status: .created) { writer in Self.write(invitation, into: &writer) }
    }

    /// `{"code","expires"}`.
    static func write(_ invitation: Invitations.Issued, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("code", invitation.code)
        writer.field("expires", invitation.expires)
        writer.endObject()
    }

    /// `POST /v1/authorizations`: turns on the named switches of the user's grant for the app (the
    /// admin acts for the person) and answers a new token, which follows the grant.
    func createAuthorization(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        var body = try RequestBody.json(context.request)
        let (userKey, app, read, share, discloseRead) = try RequestBody.decode { () throws(JSONFieldError) in
            let user = try body.requiredString("user")
            let app = try body.requiredString("app")
            let read = try body.optionalArray("read")?.strings() ?? []
            let share = try body.optionalArray("share")?.strings() ?? []
            // Whether the token may learn its own read list (GET /v1/authorizations/current); off
            // by default: as in HealthKit, read permission is never disclosed to the app.
            let discloseRead = try body.optionalBool("discloseRead") ?? false
            try body.finish()
            return (user, app, read, share, discloseRead)
        }
        if let problem = AppName.problem(app) { throw APIError.invalidField("app", problem) }
        let readTypes = try Self.canonicalTypes(read, field: "read", allowCharacteristics: true)
        let shareTypes = try Self.canonicalTypes(share, field: "share", allowCharacteristics: false)
        guard let user = try storeCall({ try data.user(idOrName: userKey) }) else {
            throw APIError.invalidField("user", "no user '\(userKey)'")
        }
        let created = try storeCall {
            try data.createAuthorization(user: user, app: app, read: readTypes, share: shareTypes, disclosesRead: discloseRead)
        }
        return JSONResponse.write(status: .created) { writer in
            writer.beginObject()
            writer.field("id", created.authorization.id)
            writer.field("token", created.token)
            writer.field("user", user.id)
            writer.field("app", app)
            // The app's switches after this call: what every token of the app may now do.
            writer.key("read"); Self.writeStrings(created.authorization.read.sorted(), into: &writer)
            writer.key("share"); Self.writeStrings(created.authorization.share.sorted(), into: &writer)
            writer.field("discloseRead", discloseRead)
            writer.endObject()
        }
    }

    /// `DELETE /v1/authorizations/{id}`: revokes an active authorization.
    func revokeAuthorization(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let id = context.parameter("id")
        guard try storeCall({ try data.revokeAuthorization(id: id) }) else {
            throw APIError.notFound("no active authorization \(id)")
        }
        return HTTPResponse(status: .noContent)
    }

    /// `GET /v1/authorizations/status`: the token's share (write) status for each requested type.
    func authorizationStatus(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let types = try context.query.list("types") ?? []
        try context.query.rejectUnknown()
        guard !types.isEmpty else { throw APIError.invalidField("types", "is required (a comma list of type ids)") }
        let app = try context.app()
        var resolved: [String] = []
        for name in types {
            guard let type = HealthTypeCatalog.type(name) ?? HealthTypeCatalog.characteristicTypes.first(where: { $0.id == name }) else {
                throw APIError.invalidField("types", "unknown type '\(name)'")
            }
            resolved.append(type.id)
        }
        // Share (write) permission only: as in HealthKit, read permission is never disclosed.
        return JSONResponse.write { writer in
            writer.beginObject()
            for type in resolved {
                writer.field(type, app.mayShare(type) ? "sharingAuthorized" : "sharingDenied")
            }
            writer.endObject()
        }
    }

    /// Canonical ids for a permission list; unknown types are a 400 naming the entry.
    static func canonicalTypes(_ names: [String], field: String, allowCharacteristics: Bool) throws(APIError) -> Set<String> {
        var result: Set<String> = []
        for (index, name) in names.enumerated() {
            if let type = HealthTypeCatalog.type(name) {
                result.insert(type.id)
            } else if let characteristic = HealthTypeCatalog.characteristicTypes.first(where: { $0.id == name || $0.longIdentifier == name }) {
                guard allowCharacteristics else {
                    throw APIError.invalidField("\(field)[\(index)]", "characteristics cannot be shared by apps (as in HealthKit)")
                }
                result.insert(characteristic.id)
            } else {
                throw APIError.invalidField("\(field)[\(index)]", "unknown type '\(name)'")
            }
        }
        return result
    }

    static func writeStrings(_ values: [String], into writer: inout JSONWriter) {
        writer.beginArray()
        for value in values { writer.string(value) }
        writer.endArray()
    }
}
