import Dispatch
import Glibc
import NetworkPolicy

/// One request and its answer: check, resolve, connect (or reuse), send, read. Lives on the
/// client's queue; it ends exactly once, through `finish`.
// @unchecked: every mutable property is only touched on `client.queue`.
final class Exchange: @unchecked Sendable {
    private let client: HTTPClient
    private let request: HTTPClientRequest
    private let completion: @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void
    private let key: String
    private var configuration: HTTPClientConfiguration { client.configuration }
    private var queue: DispatchQueue { client.queue }

    private var finished = false
    private var socket: ClientSocket?
    /// The connection came from the idle pool: if it turns out closed before any answer, the
    /// request goes again on a new one (once).
    private var onReusedConnection = false
    private var retriedOnNewConnection = false
    private var addresses: [IPAddress] = []
    private var nextAddress = 0
    /// Tells a connect timer which connect attempt it was set for.
    private var connectAttempt = 0
    private var output: [UInt8] = []
    private var written = 0
    private var parser: HTTPResponseParser
    private var receivedAnything = false

    init(client: HTTPClient, request: HTTPClientRequest,
         completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void) {
        self.client = client
        self.request = request
        self.completion = completion
        key = HTTPClient.receiverKey(request.url)
        parser = HTTPResponseParser(limits: client.configuration.responseLimits, noBodyExpected: request.method == "HEAD")
    }

    func start() {
        queue.asyncAfter(deadline: .now() + configuration.exchangeTimeout) { [weak self] in self?.finish(.failure(.timedOut)) }
        guard request.url.scheme == .http else { return finish(.failure(.httpsNeedsForwardProxy)) }
        guard let bytes = request.serialized(userAgent: configuration.userAgent) else { return finish(.failure(.invalidRequest)) }
        output = bytes
        if case .refuse(let address, let addressClass) = configuration.policy.check(request.url) {
            return finish(.failure(.refused(host: request.url.host, address: address, addressClass)))
        }
        if let socket = client.takeIdleConnection(for: key) {
            onReusedConnection = true
            use(socket)
            return
        }
        resolveAndConnect()
    }

    private func resolveAndConnect() {
        if let literal = request.url.literalAddress {
            return connect(to: [literal])
        }
        let resolve = configuration.resolve
        let host = request.url.host
        let port = request.url.port
        DispatchQueue.global().async { [self] in
            let result = resolve(host, port)
            queue.async { [self] in
                guard !finished else { return }
                switch result {
                case .failure(let error):
                    finish(.failure(error))
                case .success(let addresses):
                    if case .refuse(let address, let addressClass) = configuration.policy.check(host: host, addresses: addresses) {
                        return finish(.failure(.refused(host: host, address: address, addressClass)))
                    }
                    connect(to: addresses)
                }
            }
        }
    }

    /// Tries the checked addresses in order; only these, never a fresh lookup.
    private func connect(to addresses: [IPAddress]) {
        self.addresses = addresses
        nextAddress = 0
        connectNext(lastError: "no addresses")
    }

    private func connectNext(lastError: String) {
        guard !finished else { return }
        guard nextAddress < addresses.count else { return finish(.failure(.connectionFailed(detail: lastError))) }
        let address = addresses[nextAddress]
        nextAddress += 1
        guard let socket = ClientSocket.make(family: address.family, queue: queue) else {
            return connectNext(lastError: String(cString: strerror(errno)))
        }
        client.noteOpened()
        self.socket = socket
        let result = address.withSocketAddress(port: request.url.port) { Glibc.connect(socket.fd, $0, $1) }
        if result == 0 { return use(socket) }
        guard errno == EINPROGRESS else {
            let detail = String(cString: strerror(errno))
            socket.close()
            self.socket = nil
            return connectNext(lastError: detail)
        }
        connectAttempt += 1
        let attempt = connectAttempt
        queue.asyncAfter(deadline: .now() + configuration.connectTimeout) { [weak self] in
            guard let self, !self.finished, self.connectAttempt == attempt, let socket = self.socket, !self.connected else { return }
            socket.close()
            self.socket = nil
            if self.nextAddress < self.addresses.count {
                self.connectNext(lastError: "timed out")
            } else {
                self.finish(.failure(.connectTimedOut))
            }
        }
        socket.onWritable { [self] in
            guard !finished, self.socket === socket else { return }
            socket.stopWriting()
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socket.fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else {
                let detail = String(cString: strerror(error))
                socket.close()
                self.socket = nil
                return connectNext(lastError: detail)
            }
            use(socket)
        }
    }

    private var connected = false

    /// A connected socket: send the request, then read the answer.
    private func use(_ socket: ClientSocket) {
        connected = true
        self.socket = socket
        written = 0
        socket.onReadable { [self] in readAvailable() }
        writeAvailable()
    }

    private func writeAvailable() {
        guard !finished, let socket else { return }
        while written < output.count {
            let sent = output.withUnsafeBytes { raw in
                send(socket.fd, raw.baseAddress.map { $0 + written }, output.count - written, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                written += sent
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                socket.onWritable { [self] in
                    self.socket?.stopWriting()
                    writeAvailable()
                }
                return
            } else if sent < 0 && errno == EINTR {
                continue
            } else {
                return connectionLost(detail: String(cString: strerror(errno)))
            }
        }
    }

    private func readAvailable() {
        guard !finished, let socket else { return }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while !finished {
            let count = chunk.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                receivedAnything = true
                do {
                    if case .complete(let response) = try parser.consume(chunk[0..<count]) {
                        return succeed(response)
                    }
                } catch {
                    return finish(.failure(.malformedResponse(error)))
                }
            } else if count == 0 {
                guard receivedAnything else { return connectionLost(detail: nil) }
                do {
                    if case .complete(let response) = try parser.endOfInput() { return succeed(response) }
                } catch {
                    return finish(.failure(error == .truncated ? .connectionClosed : .malformedResponse(error)))
                }
                return finish(.failure(.connectionClosed))
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                return
            } else {
                return connectionLost(detail: String(cString: strerror(errno)))
            }
        }
    }

    /// The connection ended before any answer: on a reused connection the receiver most likely
    /// closed it while idle, so the request goes once more on a new connection.
    private func connectionLost(detail: String?) {
        if onReusedConnection && !receivedAnything && !retriedOnNewConnection {
            retriedOnNewConnection = true
            onReusedConnection = false
            socket?.close()
            socket = nil
            connected = false
            return resolveAndConnect()
        }
        finish(.failure(detail.map { .connectionFailed(detail: $0) } ?? .connectionClosed))
    }

    private func succeed(_ response: HTTPClientResponse) {
        guard !finished, let socket else { return }
        finished = true
        socket.stopReading()
        socket.stopWriting()
        self.socket = nil
        if response.reusable && written == output.count {
            client.putIdleConnection(socket, for: key)
        } else {
            socket.close()
        }
        let completion = self.completion
        DispatchQueue.global().async { completion(.success(response)) }
    }

    private func finish(_ result: Result<HTTPClientResponse, HTTPClientError>) {
        guard !finished else { return }
        if case .success(let response) = result { return succeed(response) }
        finished = true
        socket?.close()
        socket = nil
        let completion = self.completion
        DispatchQueue.global().async { completion(result) }
    }
}
