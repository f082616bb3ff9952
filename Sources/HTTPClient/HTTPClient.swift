import Dispatch
import Glibc
import NetworkPolicy
import Synchronization

// The outbound HTTP/1.1 client webhook deliveries use: non-blocking sockets driven by Dispatch
// sources on one serial queue, like the server's connections. It resolves the receiver's name,
// checks every address with the SSRF policy and connects to the checked address itself (so a
// second DNS answer cannot switch it), never follows redirects (a 3xx is an answer like any
// other), keeps connections alive per receiver, and bounds every step in time.

public struct HTTPClientConfiguration: Sendable {
    public var policy: SSRFPolicy
    /// Per address tried.
    public var connectTimeout: Double = 5
    /// From the call to the complete answer: resolving, connecting, sending and reading.
    public var exchangeTimeout: Double = 10
    /// An idle kept-alive connection is closed after this long.
    public var idleTimeout: Double = 30
    public var maximumIdleConnectionsPerReceiver = 2
    public var responseLimits = HTTPResponseParser.Limits()
    public var userAgent = "healthd-webhooks"
    /// Name to addresses; the system resolver unless a test puts its own here.
    public var resolve: @Sendable (_ host: String, _ port: Int) -> Result<[IPAddress], HTTPClientError> = SystemResolver.resolve

    public init(policy: SSRFPolicy) {
        self.policy = policy
    }
}

public enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The SSRF policy refused the receiver (address nil: refused by name, like `localhost`).
    case refused(host: String, address: IPAddress?, AddressClass)
    /// https needs the forward proxy, which this client does not have yet.
    case httpsNeedsForwardProxy
    case resolutionFailed(host: String, detail: String)
    case connectionFailed(detail: String)
    case connectTimedOut
    /// No complete answer within the exchange timeout.
    case timedOut
    case malformedResponse(HTTPResponseParseError)
    /// The receiver closed the connection before a complete answer.
    case connectionClosed
    /// A header name or value that would break the request's framing.
    case invalidRequest

    public var description: String {
        switch self {
        case .refused(let host, let address, let addressClass):
            // A name's addresses stay unsaid: the answer would map the server's network for whoever
            // holds a token. A literal host is its address already.
            guard let address, ReceiverURL.isLiteralHost(host) else {
                return "Refused to connect to \(host): it resolves to \(addressClass.withArticle) address; "
                    + "list the host in webhookAllowedHosts to allow it."
            }
            return "Refused to connect to \(host) (\(address)): \(addressClass.withArticle) address; list the host in webhookAllowedHosts to allow it."
        case .httpsNeedsForwardProxy: return "https receivers need the forward proxy."
        case .resolutionFailed(let host, let detail): return "Could not resolve \(host): \(detail)."
        case .connectionFailed(let detail): return "Could not connect: \(detail)."
        case .connectTimedOut: return "Connecting timed out."
        case .timedOut: return "No complete answer in time."
        case .malformedResponse(let error): return "The receiver's answer was not valid HTTP/1.1 (\(error))."
        case .connectionClosed: return "The receiver closed the connection before answering."
        case .invalidRequest: return "The request has a header that is not valid."
        }
    }
}

public struct HTTPClientRequest: Sendable {
    public var method: String
    public var url: ReceiverURL
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String = "POST", url: ReceiverURL, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The bytes on the wire; nil when a header would break the framing.
    func serialized(userAgent: String) -> [UInt8]? {
        func valid(_ text: String) -> Bool { text.utf8.allSatisfy { $0 == 9 || ($0 >= 0x20 && $0 != 0x7f) } }
        guard !method.isEmpty, method.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) else { return nil }
        var head = "\(method) \(url.target) HTTP/1.1\r\nHost: \(url.authority)\r\nUser-Agent: \(userAgent)\r\n"
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: ":") }), valid(value) else { return nil }
            let lowered = name.lowercased()
            // The client frames the message itself.
            guard lowered != "content-length", lowered != "transfer-encoding", lowered != "host", lowered != "connection" else { return nil }
            head += "\(name): \(value)\r\n"
        }
        head += "Content-Length: \(body.count)\r\n\r\n"
        return Array(head.utf8) + body
    }
}

public struct HTTPClientStatistics: Sendable, Equatable {
    public var connectionsOpened: Int
    public var connectionsReused: Int
    public var idleConnections: Int
}

// @unchecked: every mutable property is only touched on `queue`.
public final class HTTPClient: @unchecked Sendable {
    public let configuration: HTTPClientConfiguration
    let queue = DispatchQueue(label: "healthd.http-client")
    /// Idle kept-alive connections by receiver ("scheme://host:port").
    private var idle: [String: [IdleConnection]] = [:]
    private var nextIdleToken: UInt64 = 0
    private var closed = false
    private let opened = Atomic<Int>(0)
    private let reused = Atomic<Int>(0)
    private let idleCount = Atomic<Int>(0)

    struct IdleConnection {
        let socket: ClientSocket
        let token: UInt64
    }

    public init(configuration: HTTPClientConfiguration) {
        self.configuration = configuration
        // A receiver closing mid-write must not kill the process; sends also pass MSG_NOSIGNAL.
        signal(SIGPIPE, SIG_IGN)
    }

    public var statistics: HTTPClientStatistics {
        HTTPClientStatistics(connectionsOpened: opened.load(ordering: .relaxed), connectionsReused: reused.load(ordering: .relaxed),
                             idleConnections: idleCount.load(ordering: .relaxed))
    }

    /// Sends one request; `completion` runs once, on a global queue.
    public func send(_ request: HTTPClientRequest, completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void) {
        queue.async {
            Exchange(client: self, request: request, completion: completion).start()
        }
    }

    public func send(_ request: HTTPClientRequest) async -> Result<HTTPClientResponse, HTTPClientError> {
        await withCheckedContinuation { continuation in
            send(request) { continuation.resume(returning: $0) }
        }
    }

    /// Closes the idle connections; exchanges in flight finish.
    public func closeIdleConnections() {
        queue.async {
            for connections in self.idle.values { for connection in connections { connection.socket.close() } }
            self.idle.removeAll()
            self.idleCount.store(0, ordering: .relaxed)
        }
    }

    static func receiverKey(_ url: ReceiverURL) -> String { "\(url.scheme.rawValue)://\(url.host):\(url.port)" }

    func noteOpened() { opened.add(1, ordering: .relaxed) }

    /// An idle connection to the receiver that has not been closed by its peer (on `queue`).
    func takeIdleConnection(for key: String) -> ClientSocket? {
        while var connections = idle[key], let connection = connections.popLast() {
            idle[key] = connections.isEmpty ? nil : connections
            idleCount.subtract(1, ordering: .relaxed)
            if connection.socket.isOpenAndQuiet() {
                reused.add(1, ordering: .relaxed)
                return connection.socket
            }
            connection.socket.close()
        }
        return nil
    }

    /// Keeps a connection for the next request to the same receiver (on `queue`).
    func putIdleConnection(_ socket: ClientSocket, for key: String) {
        var connections = idle[key] ?? []
        guard connections.count < configuration.maximumIdleConnectionsPerReceiver else {
            socket.close()
            return
        }
        nextIdleToken += 1
        let token = nextIdleToken
        connections.append(IdleConnection(socket: socket, token: token))
        idle[key] = connections
        idleCount.add(1, ordering: .relaxed)
        queue.asyncAfter(deadline: .now() + configuration.idleTimeout) { [weak self] in
            guard let self, var connections = self.idle[key], let index = connections.firstIndex(where: { $0.token == token }) else { return }
            connections.remove(at: index).socket.close()
            self.idle[key] = connections.isEmpty ? nil : connections
            self.idleCount.subtract(1, ordering: .relaxed)
        }
    }
}

/// The system resolver (`getaddrinfo`), which blocks: the client calls it off its queue.
public enum SystemResolver {
    public static func resolve(host: String, port: Int) -> Result<[IPAddress], HTTPClientError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return .failure(.resolutionFailed(host: host, detail: String(cString: gai_strerror(status))))
        }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = current.pointee.ai_addr, let ip = IPAddress(socketAddress: address), !addresses.contains(ip) {
                addresses.append(ip)
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { return .failure(.resolutionFailed(host: host, detail: "no addresses")) }
        return .success(addresses)
    }
}

extension IPAddress {
    init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let value = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
            self = .v4(UInt32(bigEndian: value))
        case AF_INET6:
            let bytes = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
            }
            self = .v6(bytes)
        default:
            return nil
        }
    }

    /// Calls `body` with this address and `port` as a socket address.
    func withSocketAddress<T>(port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        switch self {
        case .v4(let value):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = value.bigEndian
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .v6(let bytes):
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            withUnsafeMutableBytes(of: &address.sin6_addr) { raw in
                for index in 0..<min(16, bytes.count) { raw[index] = bytes[index] }
            }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    var family: Int32 {
        switch self {
        case .v4: AF_INET
        case .v6: AF_INET6
        }
    }
}
