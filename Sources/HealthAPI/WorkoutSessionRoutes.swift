import Dispatch
import Foundation
import HTTP
import HealthModel
import HealthStore
import JSON
import Synchronization

/// Publishes `event: zone` on the change streams while workout sessions run. Driven by the store's
/// commit observer: a commit touching `heartRate` for a user with an active session makes the
/// store judge that user's new readings (`advanceWorkoutZones`), and the changes go to the user's
/// streams whose app may read heart rate. One judgement runs per user at a time, on the worker
/// pool; a commit meanwhile makes it run once more, so readings are judged in commit order.
final class WorkoutZoneMonitor: Sendable {
    static let eventName = "zone"

    let store: HealthStore
    let feed: ChangeFeed
    private let state: Mutex<State>

    private struct State {
        /// Running or paused sessions per user: commits of other users cost a dictionary lookup.
        /// nil while unknown (the store could not be read at startup): then every heart-rate
        /// commit is judged, and the counts are read again at the next judgement.
        var activeSessions: [Int64: Int]?
        var judging: Set<Int64> = []
        var pending: Set<Int64> = []
    }

    init(store: HealthStore, feed: ChangeFeed) {
        self.store = store
        self.feed = feed
        state = Mutex(State(activeSessions: nil))
        // Starting with no sessions would silence the zone events of every session that was
        // running before a restart: unknown counts judge every heart-rate commit instead.
        loadActiveSessions()
        store.addCommitObserver { [weak self] change in self?.committed(change) }
    }

    private func loadActiveSessions() {
        do {
            let counts = try store.activeWorkoutSessionCounts()
            state.withLock { $0.activeSessions = counts }
        } catch {
            feed.log?.event("cannot read the active workout sessions; judging every heart-rate commit until it works",
                            level: "warning", fields: [("error", String(describing: error))])
        }
    }

    func sessionStarted(userRowID: Int64) {
        state.withLock { $0.activeSessions?[userRowID, default: 0] += 1 }
    }

    func sessionEnded(userRowID: Int64) {
        state.withLock { state in
            guard state.activeSessions != nil else { return }
            let remaining = (state.activeSessions?[userRowID] ?? 1) - 1
            state.activeSessions?[userRowID] = remaining > 0 ? remaining : nil
        }
    }

    private func committed(_ change: CommittedChange) {
        guard change.typeIDs.contains("heartRate") else { return }
        let user = change.userRowID
        let start = state.withLock { state -> Bool in
            if let counts = state.activeSessions, counts[user] == nil { return false }
            if state.judging.contains(user) {
                state.pending.insert(user)
                return false
            }
            state.judging.insert(user)
            return true
        }
        // The observer runs on the committing request's thread: the judgement goes to the pool.
        if start { feed.workers.async { [self] in judge(user: user) } }
    }

    private func judge(user: Int64) {
        while true {
            let countsUnknown = state.withLock { state -> Bool in
                state.pending.remove(user)
                return state.activeSessions == nil
            }
            if countsUnknown { loadActiveSessions() }
            let changes: [WorkoutZoneChange]
            do {
                changes = try store.advanceWorkoutZones(userRowID: user)
            } catch {
                // The stored progress is as it was (judging and progress share one transaction):
                // the user's next heart-rate commit judges these readings again.
                feed.log?.event("workout zone judgement failed; the next heart-rate commit retries it", level: "warning",
                                fields: [("error", String(describing: error))])
                changes = []
            }
            for change in changes {
                feed.publish(event: Self.eventName, data: Self.eventData(change), userRowID: user, readableType: "heartRate")
            }
            let again = state.withLock { state -> Bool in
                if state.pending.contains(user) { return true }
                state.judging.remove(user)
                return false
            }
            if !again { return }
        }
    }

    /// `{"session","heartRate","state","date","zone":{"low","high"}}`.
    static func eventData(_ change: WorkoutZoneChange) -> [UInt8] {
        var writer = JSONWriter(capacity: 128)
        writer.beginObject()
        writer.field("session", change.session)
        writer.field("heartRate", change.heartRate)
        writer.field("state", change.state.rawValue)
        writer.field("date", RFC3339.format(change.date))
        writer.key("zone")
        writer.beginObject()
        writer.field("low", change.zone.low)
        writer.field("high", change.zone.high)
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }
}

/// `POST /v1/workout-sessions` and its state changes (API.md, Heart-rate zones and workout sessions).
enum WorkoutSessionRoutes {
    static func register(into router: inout Router<Route>, store: HealthStore, feed: ChangeFeed,
                         now: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }) {
        let monitor = WorkoutZoneMonitor(store: store, feed: feed)

        router.register(.post, "/v1/workout-sessions", Route(access: .token) { context throws(APIError) in
            try context.query.rejectUnknown()
            let app = try context.app()
            let (activityType, zone) = try decodeStart(context.request)
            let session = try storeCall { try store.startWorkoutSession(app: app, activityType: activityType, zone: zone, at: now()) }
            monitor.sessionStarted(userRowID: app.userRowID)
            return response(session, status: .created)
        })

        router.register(.get, "/v1/workout-sessions/{id}", Route(access: .token) { context throws(APIError) in
            try context.query.rejectUnknown()
            let app = try context.app()
            let id = try sessionID(context)
            guard let session = try storeCall({ try store.workoutSession(id: id, app: app) }) else {
                throw APIError.notFound("no workout session \(id)")
            }
            return response(session)
        })

        for action in WorkoutSessionAction.allCases {
            router.register(.post, "/v1/workout-sessions/{id}/\(action.rawValue)", Route(access: .token) { context throws(APIError) in
                try context.query.rejectUnknown()
                let app = try context.app()
                let id = try sessionID(context)
                // No fields yet; an empty body or {} (anything else is a typo worth hearing about).
                if !context.request.body.isEmpty {
                    let body = try RequestBody.json(context.request)
                    try RequestBody.decode { () throws(JSONFieldError) in try body.finish() }
                }
                let session: WorkoutSession
                do {
                    switch action {
                    case .pause, .resume:
                        session = try store.changeWorkoutSession(id: id, app: app, action: action, now: now())
                    case .end:
                        session = try store.endWorkoutSession(id: id, app: app, now: now())
                        monitor.sessionEnded(userRowID: app.userRowID)
                    }
                } catch let error as WorkoutSessionTransitionError {
                    throw APIError.conflict(error.description, errors: [APIError.FieldIssue(field: "state", detail: error.current.rawValue)])
                } catch let error as APIError {
                    throw error
                } catch {
                    throw APIError(storeError: error)
                }
                return response(session)
            })
        }
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
            writer.key("end")
            if let end = session.timeline.end { writer.string(RFC3339.format(end)) } else { writer.null() }
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
            writer.key("workout")
            if let uuid = session.workoutUUID { writer.string(uuid.lowercasedString) } else { writer.null() }
            writer.endObject()
        }
    }
}
