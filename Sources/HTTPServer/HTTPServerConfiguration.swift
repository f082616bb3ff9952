import Dispatch
import HTTP

public struct HTTPServerConfiguration: Sendable {
    /// A host name or literal address; "0.0.0.0" or "::" for all interfaces. Resolved with getaddrinfo.
    public var host: String
    /// 0 picks a free port; read it back from `HTTPServer.boundPort`.
    public var port: Int
    public var limits: HTTPLimits
    public var timeouts: HTTPTimeouts
    /// Seconds a connection may make no write progress while output is pending before it is dropped.
    public var writeTimeout: Double
    /// Open connections beyond this get a 503, then are drained briefly and closed (see below).
    public var maxConnections: Int
    /// Open connections one client address may hold; more get a 503 like those over
    /// `maxConnections`. Behind `proxies`, counted per forwarded client address.
    public var maxConnectionsPerAddress: Int
    /// Bytes all request bodies being received may hold at once; past it a request waits (up to
    /// `timeouts.bodyBudgetWait`) for room, then gets a 503.
    public var maxBodyBytesInFlight: Int
    /// Trusted reverse proxies: their connections count against the per-address cap of the
    /// client each request is forwarded for, not against the proxy's own address.
    public var proxies: HTTPProxyPolicy?
    /// Seconds a refused connection is read (and discarded) after its 503 before it is closed, so
    /// its client can finish sending the request and read the answer instead of a reset.
    public var rejectionLingerSeconds: Double
    /// Refused connections that may linger at once; beyond this one is closed right after its 503.
    public var maxLingeringRejections: Int
    /// Unsent bytes a streamed response may queue before `write` fails and the connection closes.
    public var maxStreamBacklogBytes: Int
    /// Serial queues connections are spread over; defaults to the active processor count.
    public var loopCount: Int
    public var listenBacklog: Int32

    public init(host: String = "127.0.0.1", port: Int = 8080, limits: HTTPLimits = .default,
                timeouts: HTTPTimeouts = HTTPTimeouts(), writeTimeout: Double = 30,
                maxConnections: Int = 4096, maxConnectionsPerAddress: Int = 256, maxStreamBacklogBytes: Int = 1024 * 1024,
                loopCount: Int = 0, listenBacklog: Int32 = 1024,
                rejectionLingerSeconds: Double = 2, maxLingeringRejections: Int = 256,
                maxBodyBytesInFlight: Int = 256 * 1024 * 1024, proxies: HTTPProxyPolicy? = nil) {
        self.host = host
        self.port = port
        self.limits = limits
        self.timeouts = timeouts
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.maxStreamBacklogBytes = maxStreamBacklogBytes
        self.loopCount = loopCount
        self.listenBacklog = listenBacklog
        self.rejectionLingerSeconds = rejectionLingerSeconds
        self.maxLingeringRejections = maxLingeringRejections
        self.maxBodyBytesInFlight = maxBodyBytesInFlight
        self.proxies = proxies
    }
}

extension HTTPServerConfiguration {
    /// Descriptors no connection may take: the database's connections, SQLite's files, static
    /// files being sent, the log, webhook deliveries, and libdispatch, whose thread-pool monitor
    /// opens /proc files and ends the process when it cannot.
    public static let descriptorsKeptFree = 128

    /// These settings within an open-file limit of `openFileLimit` descriptors: every connection
    /// holds one, and so does each refused connection lingering after its 503, so both caps shrink
    /// until `descriptorsKeptFree` remain (lingering ones to at most a quarter of the room). A
    /// limit that leaves room for the configured caps changes nothing.
    public func fitted(toOpenFileLimit openFileLimit: UInt64) -> HTTPServerConfiguration {
        let room = Int(clamping: openFileLimit) - Self.descriptorsKeptFree
        var fitted = self
        fitted.maxLingeringRejections = max(0, min(maxLingeringRejections, room / 4))
        fitted.maxConnections = max(1, min(maxConnections, room - fitted.maxLingeringRejections))
        return fitted
    }
}

/// Which peers are trusted reverse proxies, and the client address a proxied request names.
public struct HTTPProxyPolicy: Sendable {
    public var isTrustedProxy: @Sendable (_ peer: String) -> Bool
    /// The client a request from the trusted proxy `peer` was forwarded for (the peer itself
    /// when its headers name none).
    public var clientAddress: @Sendable (_ peer: String, _ headers: HTTPHeaders) -> String

    public init(isTrustedProxy: @escaping @Sendable (String) -> Bool,
                clientAddress: @escaping @Sendable (String, HTTPHeaders) -> String) {
        self.isTrustedProxy = isTrustedProxy
        self.clientAddress = clientAddress
    }
}

public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    case addressInUse(host: String, port: Int)
    case permissionDenied(host: String, port: Int)
    case cannotResolve(host: String, reason: String)
    case alreadyStarted
    /// Any other failing system call, with its errno.
    case systemCall(String, errno: Int32)

    public var description: String {
        switch self {
        case .addressInUse(let host, let port): return "address already in use: \(host):\(port)"
        case .permissionDenied(let host, let port): return "permission denied binding \(host):\(port)"
        case .cannotResolve(let host, let reason): return "cannot resolve host '\(host)': \(reason)"
        case .alreadyStarted: return "the server was already started"
        case .systemCall(let call, let code): return "\(call) failed (errno \(code))"
        }
    }
}

/// A consistent snapshot of the server's counters.
public struct HTTPServerStatistics: Sendable, Equatable {
    public var openConnections: Int
    public var acceptedConnections: Int
    /// Responses the server produced itself (parse errors, timeouts, connection cap), by status code.
    public var serverErrorResponses: [Int: Int]
}

/// One response the server generated on its own, for access logs.
public struct HTTPServerErrorEvent: Sendable {
    public var status: HTTPStatus
    public var detail: String
    public var connectionID: UInt64
    public var remoteAddress: String
}
