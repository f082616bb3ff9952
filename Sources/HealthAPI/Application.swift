import HealthdSettings
import Dispatch
import Foundation
import HTTP
import HTTPClient
import HealthStore
import JSON
import NetworkPolicy
import Synchronization

/// Who may call a route.
public enum RouteAccess: Sendable {
    /// No token: health check, metrics, OpenAPI document.
    case open
    /// An app token (or the admin token where the handler allows it).
    case token
    /// The admin token only.
    case admin
    /// A signed-in person's session cookie only (`/v1/me...`, sign-out, the permission sheet): a
    /// bearer token here is refused, and a cookie is read nowhere else (Middleware/PersonSessions.swift).
    case person
}

/// Where a handler runs. Cheap, store-free handlers run on the connection's queue; everything
/// that touches SQLite or the disk runs on the worker pool so the I/O queues never block.
public enum RouteExecution: Sendable {
    case inline
    case worker
}

public typealias RouteHandler = @Sendable (inout RequestContext) throws(APIError) -> HTTPResponse

/// A handler that may answer later (long-poll): it either throws before answering or calls
/// `respond` exactly once, from any thread, possibly after it returned.
public typealias DeferredRouteHandler = @Sendable (inout RequestContext, _ respond: @escaping @Sendable (HTTPResponse) -> Void)
    throws(APIError) -> Void

public struct Route: Sendable {
    enum Body: Sendable {
        case immediate(RouteHandler)
        case deferred(DeferredRouteHandler)
    }

    public var access: RouteAccess
    public var execution: RouteExecution
    let body: Body

    public init(access: RouteAccess, execution: RouteExecution = .worker, handler: @escaping RouteHandler) {
        self.access = access
        self.execution = execution
        self.body = .immediate(handler)
    }

    /// A route whose handler answers through a callback; it starts on the worker pool.
    public init(access: RouteAccess, deferred handler: @escaping DeferredRouteHandler) {
        self.access = access
        self.execution = .worker
        self.body = .deferred(handler)
    }
}

/// healthd's HTTP application: routing, authentication, errors, metrics, access logs and the
/// dashboard's static files, on top of any `HTTPServer`.
public final class HealthApplication: HTTPResponder {
    public let configuration: HealthdConfiguration
    /// The only way to the health data: scoped views that decide access (`HealthData`).
    let data: HealthData
    public let metrics: Metrics
    public let connections = ConnectionGauges()
    let router: Router<Route>
    let staticFiles: StaticFileServer?
    let accessLog: AccessLog?
    /// Error and warning lines (internal errors with their request id); written even when the
    /// per-request access log is off.
    let eventLog: AccessLog?
    let adminTokenHash: [UInt8]
    let rateLimits: RateLimits
    let clientAddresses: ClientAddressResolver
    let cors: CORSPolicy
    /// Where every answer leaves: request id and CORS headers, metrics, the access log.
    let recorder: ResponseRecorder
    let workers = DispatchQueue(label: "healthd.workers", qos: .userInitiated, attributes: .concurrent)
    /// Long-polls and event streams of the change feed.
    public let changeFeed: ChangeFeed
    /// Webhook deliveries this node runs.
    public let webhooks: WebhookDelivery
    let requestCounter = RequestCounter()

    /// `webhookTransport` and `resolve` replace the HTTP client and the system resolver in tests.
    public init(configuration: HealthdConfiguration, store: any HealthDataStore, adminToken: String,
                metrics: Metrics = Metrics(), accessLog: AccessLog? = AccessLog(),
                webhookTransport: (any WebhookTransport)? = nil,
                resolve: @escaping @Sendable (String, Int) -> Result<[NetworkPolicy.IPAddress], HTTPClientError> = SystemResolver.resolve) {
        self.configuration = configuration
        self.data = HealthData(store)
        self.metrics = metrics
        self.accessLog = configuration.accessLog ? accessLog : nil
        self.eventLog = accessLog
        self.adminTokenHash = TokenHashing.hash(adminToken)
        self.rateLimits = RateLimits(configuration: configuration)
        self.clientAddresses = ClientAddressResolver(trustedProxies: configuration.trustedProxies,
                                                     header: configuration.trustedProxyHeader)
        self.cors = CORSPolicy(origins: configuration.corsOrigins)
        self.recorder = ResponseRecorder(metrics: metrics, accessLog: self.accessLog, cors: cors)
        self.staticFiles = StaticFileServer(root: configuration.publicDirectory)
        changeFeed = ChangeFeed(data: data, workers: workers, streamBacklogLimit: configuration.maxStreamBacklogBytes / 2,
                                retentionDays: configuration.tombstoneRetentionDays, log: accessLog)
        let policy = SSRFPolicy(allowedHosts: Set(configuration.webhookAllowedHosts))
        var clientConfiguration = HTTPClientConfiguration(policy: policy)
        clientConfiguration.resolve = resolve
        webhooks = WebhookDelivery(data: data, transport: webhookTransport ?? HTTPClient(configuration: clientConfiguration), log: accessLog)
        var router = Router<Route>()
        Self.registerRoutes(into: &router, configuration: configuration, data: data, metrics: metrics,
                            connections: connections, changeFeed: changeFeed)
        WebhookRoutes.register(into: &router, data: data, delivery: webhooks, policy: policy, resolve: resolve)
        self.router = router
        webhooks.start()
        data.recentAccess.onFailure { message, error in accessLog?.event(message, level: "warning", fields: [("error", "\(error)")]) }
        // Purged at start and hourly.
        data.recentAccess.startRetention(days: configuration.accessLogRetentionDays)
    }

    deinit { data.recentAccess.stopRetention() }

    /// Call once the server has stopped, before closing the store: the recent-access counts still
    /// in memory are written (a kill -9 loses at most the last second of them).
    public func flushRecentAccess() {
        do { try data.recentAccess.flush() } catch {
            eventLog?.event("access log flush at shutdown failed", level: "warning", fields: [("error", "\(error)")])
        }
    }

    /// Call before stopping the server: parked long-polls answer now and event streams end, so
    /// they do not hold the graceful stop until its deadline.
    public func beginShutdown() {
        changeFeed.shutdown()
        webhooks.stop()
    }

    /// True when the dashboard folder exists.
    public var hasDashboard: Bool { staticFiles != nil }

    /// Every registered (method, path pattern): the OpenAPI test compares these with the document.
    public var registeredRoutes: [(method: HTTPMethod, pattern: String)] {
        router.registeredRoutes.map { (method: $0.0, pattern: $0.1) }
    }

    /// Which token each registered route takes (for the OpenAPI document's check).
    public var routeAccess: [String: RouteAccess] {
        var access: [String: RouteAccess] = [:]
        for (method, pattern) in router.registeredRoutes {
            // A pattern matches itself: each `{name}` segment is a value for its parameter.
            if case .found(let route, _, _) = router.match(method: method, path: pattern) {
                access["\(method.rawValue) \(pattern)"] = route.access
            }
        }
        return access
    }

    /// The request path as a chain of pieces (Middleware/), each answering the request itself or
    /// passing it on: routing, the address budget, a CORS preflight, then on the route's queue
    /// authentication with the token's rate limit, the handler and the mapping of errors to
    /// problems. Every answer leaves through the recorder (request id, CORS, metrics, access log).
    public func respond(to request: HTTPRequest, connection: ConnectionInfo,
                        completion: @escaping @Sendable (HTTPResponse) -> Void) {
        let chain = ChainContext(client: clientAddresses.clientAddress(peer: connection.remoteAddress, headers: request.headers),
                                 requestID: requestCounter.next(connection: connection.id),
                                 startedAt: Self.monotonicNanoseconds(), completion: completion)
        // A preflight is the CORS policy's to answer whatever the path (its `.notFound` is never
        // read). Not an Optional: destroying an Optional of the match went through the runtime's
        // generic value witnesses. Routed on the raw path's bytes in place.
        let isPreflight = cors.isEnabled && CORSPolicy.isPreflight(request)
        let match = isPreflight ? RouteMatch<Route>.notFound : router.match(method: Self.routingMethod(request), request: request)
        // Consumed: the payload is moved out rather than copied (and the match destroyed after).
        // Each case charges the address budget first (a preflight is `.notFound`), so the route
        // is read once, in place.
        switch consume match {
        case .found(let route, let parameters, let pattern):
            let presentsToken = RateLimits.presentsToken(route, request)
            if refusedAddress(presentsToken: presentsToken, request, chain) { return }
            serve(route, parameters: parameters, pattern: pattern, request, connection: connection, chain, presentsToken: presentsToken)
        case .methodNotAllowed(let allowed):
            if refusedAddress(presentsToken: false, request, chain) { return }
            recorder.finish(APIError.methodNotAllowed(allowed).response, route: "unmatched", request, chain)
        case .notFound:
            if refusedAddress(presentsToken: false, request, chain) { return }
            if isPreflight {
                return recorder.finish(cors.preflightResponse(for: request), route: "preflight", request, chain)
            }
            answerUnmatched(request, chain)
        }
    }

    func context(for route: Route, request: HTTPRequest, parameters: [String: String],
                 problems: ProblemResponder, connection: ConnectionInfo,
                 client: String, hasCredentials: Bool) throws(APIError) -> RequestContext {
        let principal: Principal?
        if route.access == .open {
            // An open route ignores any token (its address was charged in `respond`).
            principal = nil
        } else {
            do throws(APIError) {
                principal = route.access == .person
                    ? try authenticatePerson(request, peer: connection.remoteAddress, client: client)
                    : try authenticate(request, access: route.access, client: client)
            } catch {
                // A failed authentication drains the caller's address budget fast: guessing tokens
                // is throttled by the same O(1) bucket, with no sleeping thread on the server.
                if error.status == .unauthorized {
                    // A request with a token was not counted before routing: it pays for itself too.
                    _ = rateLimits.takeFromAddress(client, cost: rateLimits.authenticationFailureCost + (hasCredentials ? 1 : 0))
                }
                throw error
            }
        }
        let query: [(name: String, value: String)]
        if let raw = request.rawQuery {
            do { query = try HTTPQuery.parse(raw) } catch {
                throw Self.queryProblem(error)
            }
        } else {
            query = []
        }
        return RequestContext(request: request, parameters: parameters, query: QueryParameters(query),
                              problems: problems, principal: principal, connection: connection)
    }
}

extension HealthApplication {
    /// The monotonic clock for a request's latency, read straight from the C library (twice a
    /// request): `DispatchTime.now()` costs about twice as much per read.
    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}

/// Request ids: the connection and a process-wide counter, so a log line and a client's
/// `X-Request-Id` point at each other.
final class RequestCounter: Sendable {
    private let value = Atomic<UInt64>(0)
    func next(connection: UInt64) -> String {
        // An atomic add: the connection queues' threads take ids side by side without a lock.
        let n = value.add(1, ordering: .relaxed).newValue
        // `<connection>-<n>` in base 36, written into one small buffer (this runs for every request).
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 27) { buffer in
            var end = 27
            func prepend(_ number: UInt64) {
                var rest = number
                repeat {
                    end -= 1
                    let digit = UInt8(rest % 36)
                    buffer[end] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
                    rest /= 36
                } while rest > 0
            }
            prepend(n)
            end -= 1
            buffer[end] = UInt8(ascii: "-")
            prepend(connection)
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[end...]), as: UTF8.self)
        }
    }
}

extension HealthApplication {
    /// A query string that cannot be decoded, said so a person can fix it (never a Swift value).
    static func queryProblem(_ error: any Error) -> APIError {
        let piece: String
        if case HTTPQueryError.invalidPercentEncoding(let text) = error { piece = "'\(text)'" } else { piece = "a parameter" }
        let detail = "\(piece) has a % escape that is not two hex digits or does not decode to UTF-8 text; "
            + "percent-encode the UTF-8 bytes (write a literal % as %25)"
        return APIError.invalidArgument("the query string is malformed: \(detail)", errors: [APIError.FieldIssue(field: "query", detail: detail)])
    }
}
