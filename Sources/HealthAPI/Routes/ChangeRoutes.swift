import HTTP
import HealthModel
import HealthStore

/// The change feed (docs/api.md, Change feed): anchored queries with long-poll, and Server-Sent Events.
struct ChangeRoutes: Sendable {
    let feed: ChangeFeed
    let data: HealthData

    static let defaultLimit = 1_000
    static let maxLimit = 10_000
    static let maxWaitSeconds = 60
    /// Changes per stream event: keeps one event well under the server's stream backlog cap.
    static let streamPageSize = 500

    static func register(into router: inout Router<Route>, feed: ChangeFeed) {
        let routes = ChangeRoutes(feed: feed, data: feed.data)
        router.register(.get, "/v1/changes", Route(access: .token, deferred: routes.changes))
        router.register(.get, "/v1/changes/stream", Route(access: .token, handler: routes.streamChanges))
    }

    /// `GET /v1/changes`: an anchored query of added and deleted objects, long-polling up to `wait` seconds when there are none.
    func changes(_ context: inout RequestContext, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(APIError) {
        let app = try context.app()
        let types = try Self.requestedTypes(&context.query)
        let limit = try context.query.integer("limit", in: 1...Self.maxLimit) ?? Self.defaultLimit
        let anchorText = try context.query.string("anchor")
        let wait = try context.query.integer("wait", in: 0...Self.maxWaitSeconds) ?? 0
        try context.query.rejectUnknown()
        let subscriber = ChangeSubscriber(app: app, types: types, limit: limit, secret: data.secret, problems: context.problems)
        let position = try anchorText.map { text throws(APIError) in try subscriber.position(fromAnchor: text, field: "anchor") }
        try feed.longPoll(subscriber, after: position, wait: wait, disconnect: context.connection.disconnect, respond: respond)
    }

    /// `GET /v1/changes/stream`: the same changes as Server-Sent Events, from an anchor onwards.
    func streamChanges(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        let app = try context.app()
        let types = try Self.requestedTypes(&context.query)
        let anchorText = try context.query.string("anchor")
        try context.query.rejectUnknown()
        let subscriber = ChangeSubscriber(app: app, types: types, limit: Self.streamPageSize, secret: data.secret, problems: context.problems)
        // A reconnecting EventSource keeps the URL it first used and adds Last-Event-ID, the newer position.
        var position: ChangePosition?
        if let lastEventID = context.request.headers["Last-Event-ID"], !lastEventID.isEmpty {
            position = try subscriber.position(fromAnchor: lastEventID, field: "Last-Event-ID")
        } else if let anchorText {
            position = try subscriber.position(fromAnchor: anchorText, field: "anchor")
        }
        // Expired or not is decided now, while a 410 can still be the status line.
        let start: ChangePosition
        if let position {
            let probe = ChangeSubscriber(app: app, types: types, limit: 1, secret: data.secret, problems: context.problems)
            _ = try probe.read(after: position, data: data)
            start = position
        } else {
            start = try storeCall { try data.app(app).currentChangePosition() }
        }
        var headers = HTTPHeaders()
        headers.add("Content-Type", "text/event-stream; charset=utf-8")
        headers.add("Cache-Control", "no-store")
        // Tells nginx-style proxies not to buffer the stream.
        headers.add("X-Accel-Buffering", "no")
        let announce = position == nil
        return HTTPResponse(status: .ok, headers: headers, body: .stream { output in
            feed.openStream(subscriber, from: start, announce: announce, output: output)
        })
    }

    /// `types=a,b`: sample types of the catalog, deduplicated; absent means every type.
    static func requestedTypes(_ query: inout QueryParameters) throws(APIError) -> Set<String>? {
        guard let list = try query.list("types") else { return nil }
        var types = Set<String>()
        for name in list {
            guard let type = HealthTypeCatalog.type(name) else {
                throw APIError.invalidField("types", "unknown type '\(name)'")
            }
            guard type.kind != .characteristic else {
                throw APIError.invalidField("types", "\(name) is a characteristic, not a sample type; see /v1/characteristics")
            }
            types.insert(name)
        }
        return types
    }
}
