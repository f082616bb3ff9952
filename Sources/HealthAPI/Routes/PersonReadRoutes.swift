import HTTP

/// The signed-in person's reads for the dashboard: `/v1/me/summary` and the others mirror the app
/// routes the dashboard calls, with the same handlers and answers, taking the session cookie
/// instead of a token. The handlers read through `RequestContext.app()`, which for a person is
/// `AppAuthorization.personsOwnReads`: all of the person's own data, from every source, and no
/// writes. A cookie still never authorizes the app routes themselves.
enum PersonReadRoutes {
    /// The app routes the dashboard (Public/assets) reads.
    static let mirrored = ["/v1/summary", "/v1/statistics/collection", "/v1/samples", "/v1/activity-summaries", "/v1/workouts",
                           "/v1/heart-rate/zones", "/v1/changes/stream"]

    /// Registers the mirrors; call after the app routes are registered.
    static func register(into router: inout Router<Route>) {
        for pattern in mirrored {
            guard case .found(var route, _, _) = router.match(method: .get, path: pattern) else {
                preconditionFailure("\(pattern) is mirrored for people but not registered")
            }
            route.access = .person
            router.register(.get, "/v1/me" + pattern.dropFirst("/v1".count), route)
        }
    }
}
