import HTTP
import HealthStore
import JSON

/// `GET /v1/authorizations/current`: what the calling token was granted, so a client can tell "not
/// shared with this app" from "no data yet". This discloses nothing about the user's data: the
/// same lists came back with the token when it was issued (`POST /v1/authorizations`), and they
/// say what the admin granted, not what exists. HealthKit hides read authorization because a
/// user's denial of one type could hint at what the user keeps private; here no user decides per
/// app at runtime, so the grant is the app's own configuration. Read privacy of samples is
/// unchanged.
enum CurrentAuthorizationRoutes {
    static func register(into router: inout Router<Route>) {
        router.register(.get, "/v1/authorizations/current", Route(access: .token) { context throws(APIError) in
            try context.query.rejectUnknown()
            let app = try context.app()
            return JSONResponse.write { writer in
                writer.beginObject()
                writer.field("id", app.id)
                writer.field("user", app.userID)
                writer.field("app", app.appName)
                writer.key("read"); AccountRoutes.writeStrings(app.read.sorted(), into: &writer)
                writer.key("share"); AccountRoutes.writeStrings(app.share.sorted(), into: &writer)
                writer.endObject()
            }
        })
    }
}
