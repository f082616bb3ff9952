import Dispatch
import Foundation
import HTTP
import HealthModel
import HealthStore
import JSON
import Synchronization

/// `POST /v1/workout-sessions` and its state changes (docs/api.md, Heart-rate zones and workout sessions).
struct WorkoutSessionRoutes: Sendable {
    let data: HealthData
    let now: @Sendable () -> Int64
    let monitor: WorkoutZoneMonitor

    static func register(into router: inout Router<Route>, data: HealthData, feed: ChangeFeed,
                         now: @escaping @Sendable () -> Int64 = StoreClock.nowMilliseconds) {
        let monitor = WorkoutZoneMonitor(data: data, feed: feed)
        let routes = WorkoutSessionRoutes(data: data, now: now, monitor: monitor)
        router.register(.post, "/v1/workout-sessions", Route(access: .token, handler: routes.startSession))
        router.register(.get, "/v1/workout-sessions/{id}", Route(access: .token, handler: routes.readSession))
        for action in WorkoutSessionAction.allCases {
            router.register(.post, "/v1/workout-sessions/{id}/\(action.rawValue)", Route(access: .token) { context throws(APIError) in
                try routes.changeSession(&context, action: action)
            })
        }
    }

    /// `POST /v1/workout-sessions`: starts a live workout session, optionally with a heart-rate zone to watch.
    func startSession(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        let (activityType, zone) = try Self.decodeStart(context.request)
        let session = try storeCall { try data.app(app).startWorkoutSession(activityType: activityType, zone: zone, at: now()) }
        monitor.sessionStarted(userRowID: app.userRowID)
        return Self.response(session, status: .created)
    }

    /// `GET /v1/workout-sessions/{id}`: one workout session of the app.
    func readSession(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        let id = try Self.sessionID(context)
        guard let session = try storeCall({ try data.app(app).workoutSession(id: id) }) else {
            throw APIError.notFound("no workout session \(id)")
        }
        return Self.response(session)
    }

    /// `POST /v1/workout-sessions/{id}/pause`, `.../resume`, `.../end`: applies `action` to a workout session.
    func changeSession(_ context: inout RequestContext, action: WorkoutSessionAction) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let app = try context.app()
        let id = try Self.sessionID(context)
        // No fields yet; an empty body or {} (anything else is a typo worth hearing about).
        if !context.request.body.isEmpty {
            let body = try RequestBody.json(context.request)
            try RequestBody.decode { () throws(JSONFieldError) in try body.finish() }
        }
        let session: WorkoutSession
        do {
            switch action {
            case .pause, .resume:
                session = try data.app(app).changeWorkoutSession(id: id, action: action, now: now())
            case .end:
                session = try data.app(app).endWorkoutSession(id: id, now: now())
                monitor.sessionEnded(userRowID: app.userRowID)
            }
        } catch let error as WorkoutSessionTransitionError {
            throw APIError.conflict(error.description, errors: [APIError.FieldIssue(field: "state", detail: error.current.rawValue)])
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(storeError: error)
        }
        return Self.response(session)
    }

    /// `{"activityType","zone":{"low","high"}}`; `zone` may be omitted for a session without zone events.
    static func decodeStart(_ request: HTTPRequest) throws(APIError) -> (String, HeartRateZoneBounds?) {
        var body = try RequestBody.json(request)
        return try RequestBody.decode { () throws(JSONFieldError) -> (String, HeartRateZoneBounds?) in
            let text = try body.requiredString("activityType")
            let activityType: String
            do throws(HealthValidationError) { activityType = try HealthValidation.workoutActivityType(text) } catch {
                throw body.error("activityType", error.detail)
            }
            var zone: HeartRateZoneBounds?
            if var reader = try body.optionalObject("zone") {
                let low = try reader.requiredNumber("low")
                let high = try reader.requiredNumber("high")
                try reader.finish()
                let allowed = HeartRateZoneBounds.allowed
                for (key, value) in [("low", low), ("high", high)] where !allowed.contains(value) {
                    throw reader.error(key, "must be from \(Int(allowed.lowerBound)) to \(Int(allowed.upperBound)) beats per minute")
                }
                guard let bounds = HeartRateZoneBounds.validated(low: low, high: high) else {
                    throw reader.error("high", "must be above low")
                }
                zone = bounds
            }
            try body.finish()
            return (activityType, zone)
        }
    }

    /// Ids are uuids; anything else cannot name a session (404 rather than 400: it is a path).
    static func sessionID(_ context: RequestContext) throws(APIError) -> String {
        let text = context.parameter("id")
        guard let uuid = HealthUUID(text) else { throw APIError.notFound("no workout session \(text)") }
        return uuid.lowercasedString
    }

    /// `{"id","state","activityType","start","end","zone","events","workout"}`; `end` and
    /// `workout` (the saved sample's uuid) are null until the session ends, `zone` when it has none.
    static func response(_ session: WorkoutSession, status: HTTPStatus = .ok) -> HTTPResponse {
        JSONResponse.write(status: status) { writer in
            writer.beginObject()
            writer.field("id", session.id)
            writer.field("state", session.state.rawValue)
            writer.field("activityType", session.activityType)
            writer.field("start", RFC3339.format(session.timeline.start))
            writer.field("end", session.timeline.end.map(RFC3339.format))
            writer.key("zone")
            if let zone = session.zone {
                writer.beginObject()
                writer.field("low", zone.low)
                writer.field("high", zone.high)
                writer.endObject()
            } else {
                writer.null()
            }
            writer.key("events")
            writer.beginArray()
            for event in session.timeline.events {
                writer.beginObject()
                writer.field("type", event.type.rawValue)
                writer.field("date", RFC3339.format(event.date))
                writer.endObject()
            }
            writer.endArray()
            writer.field("workout", session.workoutUUID?.lowercasedString)
            writer.endObject()
        }
    }
}
