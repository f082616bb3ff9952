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

    public func respond(to request: HTTPRequest, connection: ConnectionInfo,
                        completion: @escaping @Sendable (HTTPResponse) -> Void) {
        let startedAt = Self.monotonicNanoseconds()
        let requestID = requestCounter.next(connection: connection.id)
        let problems = ProblemResponder(requestID: requestID, log: eventLog)
        // Behind a trusted reverse proxy, the client it names; otherwise the TCP peer.
        let client = clientAddresses.clientAddress(peer: connection.remoteAddress, headers: request.headers)
        // Local functions rather than closure values: a route answered inline (`/healthz`) then
        // costs no closure allocation; their captures are boxed only where a worker or a deferred
        // handler takes them away.
        // `consuming`: the handler's fresh response is the only owner of its header list, so
        // adding the request id appends in place instead of copying the list first.
        @Sendable func finish(_ response: consuming HTTPResponse, _ pattern: String) {
            response.headers.set("X-Request-Id", requestID)
            if cors.isEnabled { cors.decorate(&response, for: request) }
            let elapsed = Double(Self.monotonicNanoseconds() &- startedAt) / 1e9
            metrics.recordRequest(route: pattern, method: request.method.rawValue, status: response.status.code, seconds: elapsed)
            accessLog?.record(requestID: requestID, method: request.method.rawValue, route: pattern, path: String(request.path),
                              status: response.status.code, seconds: elapsed, remote: client)
            completion(response)
        }

        let isPreflight = cors.isEnabled && CORSPolicy.isPreflight(request)
        // Routed on the raw path's bytes in place; a String of the path is made only where one is
        // needed (an access-log line, a 404's detail).
        let method = request.method == .head ? HTTPMethod.get : request.method
        // A preflight is the CORS policy's to answer whatever the path (its `.notFound` is never
        // read). Not an Optional: destroying an Optional of the match went through the runtime's
        // generic value witnesses.
        let match = isPreflight ? RouteMatch<Route>.notFound : router.match(method: method, request: request)
        // The address budget is for traffic without a valid token, and it is charged here, once,
        // before any work: every request without a token, and one with a token that no token route
        // answers (a preflight, an unmatched path, an open route, which ignores tokens). A token
        // route counts the request against its token once authenticated; a failed authentication
        // charges the address in `context(for:)`. Only a token route looks for the header.
        let hasCredentials: Bool
        if case .found(let route, _, _) = match, route.access != .open {
            hasCredentials = request.headers.contains("Authorization")
        } else {
            hasCredentials = false
        }
        let chargesAddress = !hasCredentials
        if chargesAddress, let wait = rateLimits.takeFromAddress(client) {
            finish(APIError.rateLimitedAddress(retryAfterSeconds: wait).response, "rate-limited")
            return
        }
        if isPreflight {
            finish(cors.preflightResponse(for: request), "preflight")
            return
        }

        // Consumed: the payload is moved out rather than copied (and the match destroyed after).
        switch consume match {
        case .found(let route, let parameters, let pattern):
            @Sendable func run() {
                do throws(APIError) {
                    var context = try self.context(for: route, request: request, parameters: parameters, problems: problems,
                                                   connection: connection, client: client, hasCredentials: hasCredentials)
                    switch route.body {
                    case .immediate(let handler):
                        finish(try handler(&context), pattern)
                    case .deferred(let handler):
                        try handler(&context) { response in finish(response, pattern) }
                    }
                } catch {
                    finish(problems.response(error), pattern)
                }
            }
            switch route.execution {
            case .inline: run()
            case .worker: workers.async { run() }
            }
        case .methodNotAllowed(let allowed):
            finish(APIError.methodNotAllowed(allowed).response, "unmatched")
        case .notFound:
            let path = request.path
            // `/v1/samples/` or `/healthz/`: a route without its trailing slash. Said so, rather than
            // a bare 404 (or the dashboard's "no such file"), since the slash is easy to miss.
            if path.utf8.count > 1, path.hasSuffix("/"), case .found = router.match(method: method, path: path.dropLast()) {
                finish(APIError.notFound("no route for \(request.method.rawValue) \(path): the route is \(path.dropLast()), "
                                         + "without the trailing slash").response, "unmatched")
            } else if !path.hasPrefix("/v1/") && path != "/v1", let staticFiles, method == .get {
                workers.async {
                    let response = staticFiles.response(for: request)
                    finish(response, response.status.code == 404 ? "unmatched" : "static")
                }
            } else {
                finish(APIError.notFound("no route for \(request.method.rawValue) \(path)").response, "unmatched")
            }
        }
    }

    private func context(for route: Route, request: HTTPRequest, parameters: [String: String],
                         problems: ProblemResponder, connection: ConnectionInfo,
                         client: String, hasCredentials: Bool) throws(APIError) -> RequestContext {
        let principal: Principal?
        if route.access == .open {
            // An open route ignores any token (its address was charged in `respond`).
            principal = nil
        } else {
            do throws(APIError) {
                principal = try authenticate(request, access: route.access, client: client)
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

    /// The caller of a token route, counted against its token's bucket.
    private func authenticate(_ request: HTTPRequest, access: RouteAccess, client: String) throws(APIError) -> Principal {
        guard let header = request.headers["Authorization"] else {
            throw APIError.authenticationRequired("send Authorization: Bearer <token>")
        }
        let prefix = "Bearer "
        guard Self.hasBearerPrefix(header) else {
            throw APIError.authenticationRequired("the Authorization header must be 'Bearer <token>'")
        }
        let token = Self.trimmedToken(header.dropFirst(prefix.count))
        let hash = TokenHashing.hash(token)
        let principal: Principal
        if TokenHashing.equals(hash, adminTokenHash) {
            principal = .admin
        } else if let cached = data.cachedAuthorization(tokenHash: hash) {
            principal = .app(cached)
        } else {
            // Only a token not seen lately costs a read: an address out of budget (guessing
            // tokens) is refused before it can make the server read SQLite.
            if let wait = rateLimits.peekAddress(client) { throw APIError.rateLimitedAddress(retryAfterSeconds: wait) }
            // Unknown and revoked tokens look the same: nothing tells an attacker which tokens once existed.
            guard let authorization = try storeCall({ try data.authorization(tokenHash: hash) }) else {
                throw APIError.authenticationRequired("the token is not valid (unknown or revoked)")
            }
            principal = .app(authorization)
        }
        if let wait = rateLimits.perToken.take(principal.rateLimitKey) {
            throw APIError.rateLimited(retryAfterSeconds: wait, "too many requests with this token; retry in \(wait) s")
        }
        if access == .admin, case .app = principal {
            throw APIError.authorizationDenied("this endpoint needs the admin token")
        }
        return principal
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

    /// True when `header` is `Bearer ` (any case) and more. Compared as bytes: a generic
    /// comparison of UTF-8 views cost more than hashing the token.
    static func hasBearerPrefix(_ header: String) -> Bool {
        var header = header
        return header.withUTF8 { bytes in
            let bearer: StaticString = "bearer "
            guard bytes.count > bearer.utf8CodeUnitCount else { return false }
            for index in 0..<bearer.utf8CodeUnitCount {
                let byte = bytes[index]
                if (byte >= 65 && byte <= 90 ? byte + 32 : byte) != bearer.utf8Start[index] { return false }
            }
            return true
        }
    }

    /// The token after `Bearer `, without surrounding whitespace. ASCII tokens (all real ones) are
    /// trimmed as bytes; Foundation's Unicode-aware trim, which costs more than the rest of
    /// authentication, only runs for the odd header with other characters.
    static func trimmedToken(_ text: Substring) -> String {
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return String(text).trimmingCharacters(in: .whitespaces) }
        let utf8 = text.utf8
        let isBlank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = utf8.firstIndex(where: { !isBlank($0) }), let last = utf8.lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(text[first...last])
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
