import Dispatch
import Glibc
import HTTP
import Synchronization

/// An HTTP/1.1 server on non-blocking sockets and Dispatch sources.
/// Connections are spread over `loopCount` serial queues; a connection's state is only touched on its queue.
///
///     let server = HTTPServer(configuration: HTTPServerConfiguration(host: "0.0.0.0", port: 8080),
///                             responder: api, errorObserver: { event in log(event) })
///     try server.start()            // throws HTTPServerError
///     ...
///     server.shutdown(deadline: 10) { exit(0) }
public final class HTTPServer: Sendable {
    public let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    let errorObserver: (@Sendable (HTTPServerErrorEvent) -> Void)?
    let loops: [ConnectionQueue]
    private let acceptQueue: DispatchQueue
    /// Rejected connections draining their client's request after the 503 (accept queue only).
    private let rejections: RejectedConnections
    private let lifecycle = Mutex(Lifecycle())
    private let counters = Mutex(Counters())
    let openConnections = Atomic<Int>(0)
    /// Open connections per client address, for `maxConnectionsPerAddress`.
    private let connectionsByAddress: Mutex<HTTPAddressConnectionCounts>
    /// What all request bodies being received may hold at once (`maxBodyBytesInFlight`).
    let bodyBudget: HTTPBodyBudget
    /// Accepting while out of file descriptors (accept queue only).
    private let descriptorShortage: DescriptorShortage
    /// Lock-free copy of the shutdown state for the per-response check.
    let shutdownStarted = Atomic<Bool>(false)
    private let nextConnectionID = Atomic<UInt64>(1)
    private let nextLoopIndex = Atomic<Int>(0)

    private struct Lifecycle {
        var started = false
        var listener: Listener?
        var boundPort = 0
        var shuttingDown = false
        var shutdownCompletion: (@Sendable () -> Void)?
    }

    private struct Counters {
        var accepted = 0
        var errors: [Int: Int] = [:]
    }

    /// `errorObserver` is called (on a server queue) for every response the server generates itself.
    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder,
                errorObserver: (@Sendable (HTTPServerErrorEvent) -> Void)? = nil) {
        self.configuration = configuration
        self.responder = responder
        self.errorObserver = errorObserver
        let acceptQueue = DispatchQueue(label: "healthd.http.accept")
        self.acceptQueue = acceptQueue
        self.rejections = RejectedConnections(queue: acceptQueue, limit: configuration.maxLingeringRejections,
                                              seconds: configuration.rejectionLingerSeconds)
        self.connectionsByAddress = Mutex(HTTPAddressConnectionCounts(limit: configuration.maxConnectionsPerAddress))
        self.bodyBudget = HTTPBodyBudget(limit: configuration.maxBodyBytesInFlight)
        self.descriptorShortage = DescriptorShortage()
        let count = configuration.loopCount > 0 ? configuration.loopCount : max(1, Self.activeProcessorCount())
        self.loops = (0 ..< count).map { ConnectionQueue(index: $0, configuration: configuration) }
    }

    /// Raises the soft limit on open files to the hard limit (a server holds a descriptor per
    /// connection; many systems start services at a soft 1,024). Returns both limits after the
    /// call, and the soft limit before it; nil when they cannot be read.
    public static func raiseOpenFileLimit() -> (previousSoft: UInt64, soft: UInt64, hard: UInt64)? {
        var limits = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limits) == 0 else { return nil }
        let previous = UInt64(limits.rlim_cur)
        if limits.rlim_cur < limits.rlim_max {
            var raised = limits
            raised.rlim_cur = limits.rlim_max
            if setrlimit(resource, &raised) == 0 { limits = raised }
        }
        return (previous, UInt64(limits.rlim_cur), UInt64(limits.rlim_max))
    }

    private static func activeProcessorCount() -> Int {
        Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    /// The port actually bound (useful with port 0); 0 before `start`.
    public var boundPort: Int { lifecycle.withLock { $0.boundPort } }

    public var statistics: HTTPServerStatistics {
        let open = openConnections.load(ordering: .relaxed)
        return counters.withLock { HTTPServerStatistics(openConnections: open, acceptedConnections: $0.accepted, serverErrorResponses: $0.errors) }
    }

    /// Binds, listens and starts accepting. Throws `HTTPServerError`.
    public func start() throws {
        // A peer closing mid-write must not kill the process; sends also pass MSG_NOSIGNAL.
        signal(SIGPIPE, SIG_IGN)
        try lifecycle.withLock { state in
            guard !state.started else { throw HTTPServerError.alreadyStarted }
            let fd = try Self.bindListeningSocket(host: configuration.host, port: configuration.port,
                                                  backlog: configuration.listenBacklog)
            let listener = Listener(fd: fd, queue: acceptQueue)
            state.boundPort = Self.localPort(of: fd)
            state.listener = listener
            state.started = true
            listener.start { [weak self] in self?.acceptConnections(listenFD: fd) }
        }
        for loop in loops { loop.startSweeping() }
    }

    /// Graceful stop: no new connections, idle ones close now, in-flight requests finish and
    /// flush. After `deadline` seconds whatever remains is closed. `completion` runs once, on a server queue.
    public func shutdown(deadline: Double = 10, completion: @escaping @Sendable () -> Void) {
        let listener: Listener?? = lifecycle.withLock { state in
            if state.shuttingDown {
                if let previous = state.shutdownCompletion {
                    state.shutdownCompletion = { previous(); completion() }
                    return nil
                }
                // Already finished: run this completion through the same path, which finds nothing open.
                state.shutdownCompletion = completion
                return .some(nil)
            }
            state.shuttingDown = true
            shutdownStarted.store(true, ordering: .releasing)
            state.shutdownCompletion = completion
            let listener = state.listener
            state.listener = nil
            return .some(listener)
        }
        guard let listener else { return }
        acceptQueue.async {
            listener?.stop()
            for loop in self.loops {
                loop.queue.async { loop.beginShutdown() }
            }
            self.acceptQueue.asyncAfter(deadline: .now() + deadline) {
                for loop in self.loops {
                    loop.queue.async { loop.closeAll() }
                }
            }
            self.checkShutdownComplete()
        }
    }

    var isShuttingDown: Bool { lifecycle.withLock { $0.shuttingDown } }

    /// Runs the shutdown completion once no connection is left.
    func checkShutdownComplete() {
        guard openConnections.load(ordering: .acquiring) == 0 else { return }
        let completion: (@Sendable () -> Void)? = lifecycle.withLock { state in
            guard state.shuttingDown, let completion = state.shutdownCompletion else { return nil }
            state.shutdownCompletion = nil
            return completion
        }
        guard let completion else { return }
        for loop in loops { loop.queue.async { loop.stopSweeping() } }
        acceptQueue.async { completion() }
    }

    func recordServerError(status: HTTPStatus, detail: String, connectionID: UInt64, remoteAddress: String) {
        counters.withLock { $0.errors[status.code, default: 0] += 1 }
        errorObserver?(HTTPServerErrorEvent(status: status, detail: detail, connectionID: connectionID, remoteAddress: remoteAddress))
    }

    /// A proxied connection's latest request came from `client`: it counts there now. False at
    /// that address's cap.
    func moveConnection(from old: String?, to client: String) -> Bool {
        connectionsByAddress.withLock { $0.move(from: old, to: client) }
    }

    func connectionClosed(countedAddress: String?) {
        if let countedAddress { connectionsByAddress.withLock { $0.remove(countedAddress) } }
        if openConnections.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            checkShutdownComplete()
        }
    }

    // MARK: Accepting

    private func acceptConnections(listenFD: Int32) {
        // Connections go to their loops in batches, one block per loop instead of one per
        // connection: a client opening hundreds at once (a load balancer's pool, a load test)
        // then wakes each loop a few times, not once per connection.
        var batches = [[(fd: Int32, info: ConnectionInfo, isProxied: Bool)]](repeating: [], count: loops.count)
        defer { for index in batches.indices where !batches[index].isEmpty { handOver(batches[index], to: loops[index]) } }
        while true {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(listenFD, $0, &length)
                }
            }
            if fd < 0 {
                let code = errno
                if code == EINTR || code == ECONNABORTED { continue }
                // Out of descriptors: the waiting connections stay ready, so retrying at once
                // would spin. Answer them through the spare descriptor, then pause accepting.
                if code == EMFILE || code == ENFILE { shedWhileOutOfDescriptors(listenFD: listenFD) }
                // EAGAIN: drained.
                return
            }
            // accept4 is not exported to Swift here; two fcntl calls per connection are cheap.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var enabled: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &enabled, socklen_t(MemoryLayout<Int32>.size))
            let remote = Self.addressString(address)
            counters.withLock { $0.accepted += 1 }
            let id = nextConnectionID.add(1, ordering: .relaxed).oldValue
            if openConnections.load(ordering: .relaxed) >= configuration.maxConnections || isShuttingDown {
                rejectOverCapacity(fd: fd, id: id, remote: remote, detail: nil)
                continue
            }
            // A trusted proxy's connection counts for the client of each request it forwards (see
            // `Connection.admit`), not for the proxy.
            let isProxied = configuration.proxies?.isTrustedProxy(remote) ?? false
            let admitted = isProxied || connectionsByAddress.withLock { $0.admit(remote) }
            guard admitted else {
                rejectOverCapacity(fd: fd, id: id, remote: remote, detail: "Too many open connections from this address; close some and retry.")
                continue
            }
            openConnections.add(1, ordering: .relaxed)
            let index = nextLoopIndex.add(1, ordering: .relaxed).oldValue % loops.count
            batches[index].append((fd, ConnectionInfo(id: id, remoteAddress: remote), isProxied))
            // Bounded, so the first of a long run of connections is not kept waiting for the last.
            if batches[index].count == Self.acceptBatch {
                handOver(batches[index], to: loops[index])
                batches[index] = []
            }
        }
    }

    /// Connections accepted in one go that a loop takes over in one block.
    static let acceptBatch = 16

    private func handOver(_ accepted: [(fd: Int32, info: ConnectionInfo, isProxied: Bool)], to loop: ConnectionQueue) {
        loop.queue.async {
            for (fd, info, isProxied) in accepted {
                loop.register(Connection(fd: fd, info: info, loop: loop, server: self, isProxied: isProxied))
            }
        }
    }

    /// A 503 the server gives on its own, with `Retry-After`.
    static func unavailableResponse(detail: String) -> HTTPResponse {
        var response = HTTPProblem.response(status: .serviceUnavailable, detail: detail)
        response.headers.add("Retry-After", "1")
        return response
    }

    /// A complete 503 on the wire, for a connection that never gets a state machine.
    private static func unavailableBytes(detail: String) -> [UInt8] {
        let response = unavailableResponse(detail: detail)
        let problem: [UInt8]
        if case .bytes(let bytes) = response.body { problem = bytes } else { problem = [] }
        var bytes = HTTPResponseSerializer.head(status: .serviceUnavailable, headers: response.headers,
                                                framing: .contentLength(problem.count), keepAlive: false,
                                                requestVersion: .http1_1, date: HTTPDate.imfFixdate(unixSeconds: time(nil)))
        bytes.append(contentsOf: problem)
        return bytes
    }

    /// Out of file descriptors (EMFILE/ENFILE on accept). Each waiting connection is taken with
    /// the spare descriptor, answered 503 and closed, a few per pass; then accepting pauses for
    /// a moment, so a full table costs a little work per new client and never a spinning loop.
    private func shedWhileOutOfDescriptors(listenFD: Int32) {
        let detail = "The server is out of file descriptors; try again later."
        let response = Self.unavailableBytes(detail: detail)
        var answered = 0
        while answered < DescriptorShortage.answersPerPass, descriptorShortage.releaseSpare() {
            let fd = accept(listenFD, nil, nil)
            let accepted = fd >= 0
            if accepted {
                counters.withLock { $0.accepted += 1 }
                recordServerError(status: .serviceUnavailable, detail: detail, connectionID: 0, remoteAddress: "")
                DescriptorShortage.answerAndClose(fd: fd, response: response)
                answered += 1
            }
            descriptorShortage.reopenSpare()
            if !accepted { break }
        }
        let listener = lifecycle.withLock { $0.listener }
        listener?.pause(seconds: DescriptorShortage.pauseSeconds, queue: acceptQueue)
    }

    private func rejectOverCapacity(fd: Int32, id: UInt64, remote: String, detail specificDetail: String?) {
        let detail = specificDetail ?? (isShuttingDown ? "The server is shutting down." : "Too many open connections; try again later.")
        let bytes = Self.unavailableBytes(detail: detail)
        // Counted before sending, so the count is visible by the time the client reads the response.
        recordServerError(status: .serviceUnavailable, detail: detail, connectionID: id, remoteAddress: remote)
        // Best effort: a fresh socket's send buffer takes this small response whole.
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        Glibc.shutdown(fd, Int32(SHUT_WR))
        rejections.linger(fd: fd)
    }

    // MARK: Socket helpers

    private static func bindListeningSocket(host: String, port: Int, backlog: Int32) throws -> Int32 {
        guard (0 ... 65535).contains(port) else { throw HTTPServerError.cannotResolve(host: host, reason: "port \(port) out of range") }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            let reason = gai_strerror(status).map { String(cString: $0) } ?? "error \(status)"
            throw HTTPServerError.cannotResolve(host: host, reason: reason)
        }
        defer { freeaddrinfo(first) }
        var lastError = HTTPServerError.cannotResolve(host: host, reason: "no usable address")
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                            info.pointee.ai_protocol)
            guard fd >= 0 else { lastError = .systemCall("socket", errno: errno); continue }
            var enabled: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &enabled, socklen_t(MemoryLayout<Int32>.size))
            if bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                let code = errno
                close(fd)
                switch code {
                case EADDRINUSE: lastError = .addressInUse(host: host, port: port)
                case EACCES, EPERM: lastError = .permissionDenied(host: host, port: port)
                default: lastError = .systemCall("bind", errno: code)
                }
                continue
            }
            guard listen(fd, backlog) == 0 else {
                let code = errno
                close(fd)
                lastError = code == EADDRINUSE ? .addressInUse(host: host, port: port) : .systemCall("listen", errno: code)
                continue
            }
            return fd
        }
        throw lastError
    }

    private static func localPort(of fd: Int32) -> Int {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { return 0 }
        return withUnsafePointer(to: &address) { pointer -> Int in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            default:
                return 0
            }
        }
    }

    private static func addressString(_ storage: sockaddr_storage) -> String {
        var storage = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let ok: Bool = withUnsafePointer(to: &storage) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                    var address = inet.pointee.sin_addr
                    return inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet in
                    var address = inet.pointee.sin6_addr
                    return inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil
                }
            default:
                return false
            }
        }
        guard ok else { return "" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The listening socket and its accept source.
// @unchecked: Dispatch sources are thread-safe objects; Swift just does not mark them Sendable.
final class Listener: @unchecked Sendable {
    let fd: Int32
    private let source: any DispatchSourceRead

    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        self.source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
    }

    /// Suspended by `pause` (accept queue only).
    private var paused = false
    private var stopped = false

    func start(onReadable: @escaping @Sendable () -> Void) {
        let fd = self.fd
        source.setEventHandler(handler: onReadable)
        source.setCancelHandler { close(fd) }
        source.activate()
    }

    /// Stops accepting for `seconds` (on `queue`, the accept queue).
    func pause(seconds: Double, queue: DispatchQueue) {
        guard !paused, !stopped else { return }
        paused = true
        source.suspend()
        queue.asyncAfter(deadline: .now() + seconds) { [self] in
            guard paused else { return }
            paused = false
            source.resume()
        }
    }

    func stop() {
        stopped = true
        source.cancel()
        // A suspended source only completes its cancellation (closing the socket) once resumed.
        if paused {
            paused = false
            source.resume()
        }
    }

    deinit {
        // A server dropped without shutdown must not leave its socket listening.
        source.cancel()
    }
}

/// The spare descriptor kept for running out of them: closed to accept one waiting connection
/// and answer it, then opened again (accept queue only).
// @unchecked: only touched on the accept queue.
final class DescriptorShortage: @unchecked Sendable {
    private var spare: Int32

    /// Connections answered per pass before accepting pauses: a pass costs well under a
    /// millisecond, so a full backlog is answered within a second or two.
    static let answersPerPass = 64
    static let pauseSeconds = 0.1

    init() {
        spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    deinit {
        if spare >= 0 { close(spare) }
    }

    /// Closes the spare so one descriptor is free; false when there is none to give.
    func releaseSpare() -> Bool {
        guard spare >= 0 else {
            reopenSpare()
            return false
        }
        close(spare)
        spare = -1
        return true
    }

    func reopenSpare() {
        if spare < 0 { spare = open("/dev/null", O_RDONLY | O_CLOEXEC) }
    }

    /// Sends the 503, half-closes and closes. The client's request, if it came already, is read
    /// first: closing with unread input would reset the connection, and the client could lose
    /// the answer. Nothing waits here (the accept queue must keep moving), so a request still
    /// on its way may meet a reset; the 503 was sent before it.
    static func answerAndClose(fd: Int32, response: [UInt8]) {
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        for _ in 0 ..< 64 where withUnsafeMutableBytes(of: &buffer, { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
        _ = response.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        Glibc.shutdown(fd, Int32(SHUT_WR))
        close(fd)
    }
}

/// Connections refused with a 503 (over the connection cap, or during shutdown). Closing one at
/// once would answer the request bytes its client is still sending with a reset, and the client
/// fails on its next write without reading the 503. So each is half-closed after the 503 and
/// read (and discarded) until its client closes or `seconds` pass, like the other error paths.
/// At most `limit` linger at once; beyond that a rejection closes at once, so a flood of
/// connections cannot hold more descriptors than the cap plus `limit`, for longer than `seconds`.
// @unchecked: `lingering` and `nextToken` are only touched on `queue`.
final class RejectedConnections: @unchecked Sendable {
    private let queue: DispatchQueue
    private let limit: Int
    private let seconds: Double
    /// By descriptor; the token tells a reused descriptor number from the one a deadline was set for.
    private var lingering: [Int32: (token: UInt64, source: any DispatchSourceRead)] = [:]
    private var nextToken: UInt64 = 0

    init(queue: DispatchQueue, limit: Int, seconds: Double) {
        self.queue = queue
        self.limit = limit
        self.seconds = seconds
    }

    /// Takes over `fd`, already sent its 503 and half-closed (on `queue`).
    func linger(fd: Int32) {
        guard lingering.count < limit, seconds > 0 else {
            close(fd)
            return
        }
        nextToken &+= 1
        let token = nextToken
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        lingering[fd] = (token, source)
        source.setEventHandler { [weak self] in self?.drain(fd: fd, token: token) }
        source.setCancelHandler { close(fd) }
        source.activate()
        // Strong: the deadline must close the descriptor even if the server is gone by then.
        queue.asyncAfter(deadline: .now() + seconds) { [self] in finish(fd: fd, token: token) }
    }

    private func drain(fd: Int32, token: UInt64) {
        // Bounded per event, so one fast sender cannot monopolize the accept queue.
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        for _ in 0 ..< 16 {
            let count = withUnsafeMutableBytes(of: &buffer) { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
            // End of input (the client read its answer and closed) or an error: done.
            finish(fd: fd, token: token)
            return
        }
    }

    private func finish(fd: Int32, token: UInt64) {
        guard let entry = lingering[fd], entry.token == token else { return }
        lingering[fd] = nil
        // The cancel handler closes the descriptor once Dispatch has stopped watching it.
        entry.source.cancel()
    }
}
