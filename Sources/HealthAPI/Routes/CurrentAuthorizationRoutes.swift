import HTTP
import HealthStore
import JSON

/// `GET /v1/authorizations/current`: what the calling token was granted, so a client can tell "not
/// shared with this app" from "no data yet". `share` always comes back: write status is no secret
/// (`/v1/authorizations/status` says the same per type). `read` comes back only when the admin
/// opted the authorization in (`discloseRead`), and is otherwise left out: as in HealthKit, read
/// permission is never disclosed to an app, since a denial could hint at what the user keeps
/// private. A personal dashboard, the user's own viewer, is the case the opt-in is for.
struct CurrentAuthorizationRoutes: Sendable {
    static func register(into router: inout Router<Route>) {
        let routes = CurrentAuthorizationRoutes()
        router.register(.get, "/v1/authorizations/current", Route(access: .token, handler: routes.currentAuthorization))
    }

    /// `GET /v1/authorizations/current`: the token's own authorization: user, app, share list, and read list when disclosed.
    func currentAuthorization(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        return JSONResponse.write { writer in
            writer.beginObject()
            writer.field("id", app.id)
            writer.field("user", app.userID)
            writer.field("app", app.appName)
            writer.field("discloseRead", app.disclosesRead)
            if app.disclosesRead {
                writer.key("read"); AccountRoutes.writeStrings(app.read.sorted(), into: &writer)
            }
            writer.key("share"); AccountRoutes.writeStrings(app.share.sorted(), into: &writer)
            writer.endObject()
        }
    }
}
