import HealthdSettings
import Foundation
import HTTP
import HealthStore
import JSON
import Synchronization

extension HealthApplication {
    /// The whole API surface in one place; docs/api.md describes each route.
    static func registerRoutes(into router: inout Router<Route>, configuration: HealthdConfiguration,
                               data: HealthData, metrics: Metrics, connections: ConnectionGauges, changeFeed: ChangeFeed) {
        OperationsRoutes.register(into: &router, configuration: configuration, data: data, metrics: metrics,
                                  connections: connections, changeFeed: changeFeed)
        AccountRoutes.register(into: &router, data: data)
        let passwordHashing = PasswordHashingGate()
        PersonAccountRoutes.register(into: &router, data: data, configuration: configuration, hashing: passwordHashing)
        PeopleDataRoutes.register(into: &router, data: data, configuration: configuration, hashing: passwordHashing)
        PermissionRequestRoutes.register(into: &router, data: data, configuration: configuration)
        CurrentAuthorizationRoutes.register(into: &router)
        SampleRoutes.register(into: &router, data: data, configuration: configuration)
        CatalogRoutes.register(into: &router, data: data)
        IMURoutes.register(into: &router, data: data)
        HealthAutoExportRoutes.register(into: &router, data: data)
        HeartRateZoneRoutes.register(into: &router, data: data)
        ChangeRoutes.register(into: &router, feed: changeFeed)
        ExportRoutes.register(into: &router, data: data)
        StatisticsRoutes.register(into: &router, data: data)
        SummaryRoutes.register(into: &router, data: data)
        WorkoutSessionRoutes.register(into: &router, data: data, feed: changeFeed)
        WorkoutRoutes.register(into: &router, data: data, now: StoreClock.nowMilliseconds)
        PersonReadRoutes.register(into: &router)
    }
}

/// JSON response helpers shared by every route.
enum JSONResponse {
    static func ok(_ body: [UInt8], status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers, bytes: body)
    }

    /// The fields of every JSON answer, built once: a response shares them until it adds its own
    /// (the request id), which copies them in one allocation instead of adding them one by one.
    private static let headers: HTTPHeaders = {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json")
        headers.add("Cache-Control", "no-store")
        return headers
    }()

    /// `capacity`: the expected body size, so large bodies (a page of samples) do not regrow.
    static func write(status: HTTPStatus = .ok, capacity: Int = 1024, _ build: (inout JSONWriter) -> Void) -> HTTPResponse {
        var writer = JSONWriter(capacity: capacity)
        build(&writer)
        return ok(writer.bytes, status: status)
    }
}

struct OperationsRoutes: Sendable {
    let data: HealthData
    let metrics: Metrics
    let connections: ConnectionGauges
    let changeFeed: ChangeFeed
    let healthy: [UInt8]
    let openAPIPath: String

    static func register(into router: inout Router<Route>, configuration: HealthdConfiguration, data: HealthData,
                         metrics: Metrics, connections: ConnectionGauges, changeFeed: ChangeFeed) {
        let openAPIPath = URL(fileURLWithPath: configuration.publicDirectory).appendingPathComponent("openapi.json").path
        let routes = OperationsRoutes(data: data, metrics: metrics, connections: connections, changeFeed: changeFeed,
                                      healthy: Array(#"{"status":"ok"}"#.utf8), openAPIPath: openAPIPath)
        router.register(.get, "/healthz", Route(access: .open, execution: .inline, handler: routes.health))
        router.register(.get, "/metrics", Route(access: .open, handler: routes.renderMetrics))
        router.register(.get, "/openapi.json", Route(access: .open, handler: routes.openAPIDocument))
    }

    /// `GET /healthz`: a fixed ok for liveness probes.
    func health(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        JSONResponse.ok(healthy)
    }

    /// `GET /metrics`: Prometheus text: request counters plus connection, store-size and change-feed gauges.
    func renderMetrics(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        let server = connections.read()
        var gauges = Metrics.Gauges(openConnections: server.open, acceptedConnections: server.accepted,
                                    storeBytes: try storeCall { try data.storedBytes() })
        gauges.parkedLongPolls = changeFeed.parkedCount
        gauges.openChangeStreams = changeFeed.streamCount
        gauges.statisticsCache = data.statisticsCacheFigures
        let text = metrics.render(gauges: gauges)
        var headers = HTTPHeaders()
        headers.add("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        headers.add("Cache-Control", "no-store")
        return HTTPResponse(status: .ok, headers: headers, bytes: Array(text.utf8))
    }

    /// `GET /openapi.json`: the installed OpenAPI document.
    func openAPIDocument(_ context: inout RequestContext) throws(APIError) -> HTTPResponse {
        try context.query.rejectUnknown()
        guard let data = FileManager.default.contents(atPath: openAPIPath) else {
            throw APIError.notFound("the OpenAPI document is not installed (\(openAPIPath))")
        }
        var response = JSONResponse.ok([UInt8](data))
        response.headers.set("Cache-Control", "no-cache")
        return response
    }
}

/// The server's connection counts, read at scrape time. The server is created after the
/// application (it needs the application as its responder), so it is connected afterwards.
public final class ConnectionGauges: Sendable {
    private let source = Mutex<(@Sendable () -> (open: Int, accepted: UInt64))?>(nil)
    public init() {}
    public func connect(_ read: @escaping @Sendable () -> (open: Int, accepted: UInt64)) { source.withLock { $0 = read } }
    func read() -> (open: Int, accepted: UInt64) { source.withLock { $0 }?() ?? (0, 0) }
}
