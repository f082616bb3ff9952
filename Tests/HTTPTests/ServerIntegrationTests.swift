import Dispatch
import Glibc
import HTTP
import HTTPServer
import Synchronization
import Testing

/// Waits for a semaphore with a generous cap, so a bug fails the test instead of hanging the run.
private func waitBriefly(_ semaphore: DispatchSemaphore) -> Bool {
    semaphore.wait(timeout: .now() + 10) == .success
}

struct TestResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { headers.first { $0.name.asciiCaseInsensitiveEquals(name) }?.value }
}

/// A blocking socket client that understands just enough HTTP/1.1 to read responses.
final class TestClient {
    private(set) var fd: Int32
    private var buffer: [UInt8] = []

    init?(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        // A receive cap keeps a broken server from hanging the test run.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            // deinit also runs for a failed class initializer: hand it nothing to close twice.
            close(fd)
            fd = -1
            return nil
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) { _ = sendAll(bytes) }

    func sendAll(_ text: String) -> Bool { sendAll(Array(text.utf8)) }

    /// Sends everything; false when the socket refused some of it (a reset or broken pipe).
    func sendAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// True once something (or end of input) is ready to read, within the safety timeout.
    func waitUntilReadable() -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 10_000) == 1
    }

    /// Reads more bytes; false on EOF, error or the safety timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[0 ..< count])
        return true
    }

    private func readLine() -> String? {
        while true {
            if let index = findCRLF() {
                let line = String(decoding: buffer[0 ..< index], as: UTF8.self)
                buffer.removeFirst(index + 2)
                return line
            }
            guard fill() else { return nil }
        }
    }

    private func findCRLF() -> Int? {
        guard buffer.count >= 2 else { return nil }
        for index in 0 ..< buffer.count - 1 where buffer[index] == 13 && buffer[index + 1] == 10 { return index }
        return nil
    }

    private func readBytes(_ count: Int) -> [UInt8]? {
        while buffer.count < count { guard fill() else { return nil } }
        let bytes = Array(buffer[0 ..< count])
        buffer.removeFirst(count)
        return bytes
    }

    func readResponse(bodyExpected: Bool = true) -> TestResponse? {
        guard let statusLine = readLine() else { return nil }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        var headers: [(name: String, value: String)] = []
        while let line = readLine(), !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append((String(line[..<colon]), String(line[line.index(after: colon)...].drop { $0 == " " })))
        }
        var response = TestResponse(status: status, headers: headers, body: [])
        guard bodyExpected, status >= 200, status != 204, status != 304 else { return response }
        if response.header("Transfer-Encoding") == "chunked" {
            while let sizeLine = readLine(), let size = Int(sizeLine, radix: 16) {
                if size == 0 {
                    _ = readLine()
                    return response
                }
                guard let chunk = readBytes(size), readLine() == "" else { return nil }
                response.body += chunk
            }
            return nil
        }
        if let length = response.header("Content-Length").flatMap({ Int($0) }) {
            guard let body = readBytes(length) else { return nil }
            response.body = body
            return response
        }
        while fill() {}
        response.body = buffer
        buffer = []
        return response
    }

    /// True once the server closed the connection (EOF), after discarding anything still unread.
    func waitForClose() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }
}

/// 2 MiB with a pattern whose period (251) does not divide any buffer size, so misplaced bytes show.
let bigBody: [UInt8] = (0 ..< 2 * 1024 * 1024).map { UInt8(truncatingIfNeeded: $0 % 251) }

final class TestResponder: HTTPResponder {
    let held = Mutex<[@Sendable (HTTPResponse) -> Void]>([])
    let requestHeld = DispatchSemaphore(value: 0)
    let floodStopped = DispatchSemaphore(value: 0)
    let floodClosedByServer = Atomic<Bool>(false)

    func respond(to request: HTTPRequest, connection: ConnectionInfo, completion: @escaping @Sendable (HTTPResponse) -> Void) {
        switch request.path {
        case "/hello":
            completion(HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain"], bytes: Array("hello".utf8)))
        case "/echo":
            completion(HTTPResponse(status: .ok, bytes: request.body))
        case "/target":
            // Alternate synchronous and asynchronous completion: order must hold either way.
            let response = HTTPResponse(status: .ok, bytes: Array(request.target.utf8))
            if request.target.hasSuffix("1") || request.target.hasSuffix("3") {
                DispatchQueue.global().async { completion(response) }
            } else {
                completion(response)
            }
        case "/stream":
            completion(HTTPResponse(status: .ok, body: .stream { stream in
                DispatchQueue.global().async {
                    for index in 0 ..< 3 { stream.write(Array("chunk\(index);".utf8)) }
                    stream.finish()
                }
            }))
        case "/sized":
            // Written in pieces, the last one past the announced length (dropped).
            completion(HTTPResponse(status: .ok, body: .sizedStream(length: 12) { stream in
                DispatchQueue.global().async {
                    stream.write(Array("sized-".utf8))
                    stream.write(Array("body!!extra".utf8))
                    stream.finish()
                }
            }))
        case "/short":
            completion(HTTPResponse(status: .ok, body: .sizedStream(length: 100) { stream in
                DispatchQueue.global().async {
                    stream.write(Array("only this".utf8))
                    stream.finish()
                }
            }))
        case "/flood":
            completion(HTTPResponse(status: .ok, body: .stream { stream in
                stream.onClose { self.floodClosedByServer.store(true, ordering: .relaxed) }
                DispatchQueue.global().async {
                    let block = [UInt8](repeating: 120, count: 64 * 1024)
                    while stream.write(block) {}
                    self.floodStopped.signal()
                }
            }))
        case "/big":
            // Far more than a socket buffer takes at once: exercises partial sends and the write source.
            completion(HTTPResponse(status: .ok, bytes: bigBody))
        case "/hold":
            held.withLock { $0.append(completion) }
            requestHeld.signal()
        default:
            completion(HTTPProblem.response(status: .notFound, detail: "No route."))
        }
    }

    func releaseHeld(_ response: HTTPResponse) {
        let completions = held.withLock { held in
            defer { held = [] }
            return held
        }
        for completion in completions { completion(response) }
    }
}

/// Runs `body` while a connection that completed a request stays open, so a server with
/// `maxConnections = 1` is full.
private func whileHoldingTheOnlyConnection(_ server: HTTPServer, _ body: () throws -> Void) throws {
    let first = try #require(TestClient(port: server.boundPort))
    first.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(first.readResponse()?.status == 200)
    try withExtendedLifetime(first) { try body() }
}

/// Starts a server on a free port, runs `body`, then shuts it down.
private func withServer(_ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
                        observer: (@Sendable (HTTPServerErrorEvent) -> Void)? = nil,
                        _ body: (HTTPServer, TestResponder) throws -> Void) throws {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, loopCount: 2)
    configure(&configuration)
    let responder = TestResponder()
    let server = HTTPServer(configuration: configuration, responder: responder, errorObserver: observer)
    try server.start()
    defer {
        let done = DispatchSemaphore(value: 0)
        server.shutdown(deadline: 1) { done.signal() }
        _ = waitBriefly(done)
    }
    try body(server, responder)
}

@Suite("HTTPServer integration")
struct ServerIntegrationTests {
    @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            for _ in 0 ..< 3 {
                client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
                let response = try #require(client.readResponse())
                #expect(response.status == 200)
                #expect(response.text == "hello")
                #expect(response.header("Connection") == nil)
                #expect(response.header("Date")?.hasSuffix(" GMT") == true)
            }
            client.send("HEAD /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            let head = try #require(client.readResponse(bodyExpected: false))
            #expect(head.header("Content-Length") == "5")
            #expect(head.header("Connection") == "close")
            #expect(client.waitForClose())
            #expect(server.statistics.acceptedConnections == 1)
        }
    }

    @Test func pipelinedResponsesKeepRequestOrder() throws {
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send((0 ..< 6).map { "GET /target?i=\($0) HTTP/1.1\r\nHost: t\r\n\r\n" }.joined())
            for index in 0 ..< 6 {
                let response = try #require(client.readResponse())
                #expect(response.text == "/target?i=\(index)")
            }
        }
    }

    @Test func aLongPipelinedBurstIsAnsweredInOrderOverSeveralTurns() throws {
        // Far more pipelined requests in one read than one turn on the queue answers: the rest
        // wait for later turns, and none is lost, reordered or left behind by the end of input.
        try withServer({ $0.loopCount = 1 }) { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send((0 ..< 100).map { "GET /target?i=\($0) HTTP/1.1\r\nHost: t\r\n\r\n" }.joined())
            Glibc.shutdown(client.fd, Int32(SHUT_WR))
            for index in 0 ..< 100 {
                #expect(client.readResponse()?.text == "/target?i=\(index)")
            }
            #expect(client.waitForClose())
        }
    }

    @Test func largeResponsesSurvivePartialWrites() throws {
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\nGET /big HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            for _ in 0 ..< 2 {
                let response = try #require(client.readResponse())
                #expect(response.body.count == bigBody.count)
                #expect(response.body == bigBody)
            }
            #expect(client.readResponse()?.text == "hello")
        }
    }

    @Test func aResponseThatWaitedForTheSocketStillClosesTheConnection() throws {
        // Far more than the socket takes at once, so output waits for writability (the write
        // source is made then); closing must still cancel every source and close the descriptor.
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            let response = try #require(client.readResponse())
            #expect(response.body == bigBody)
            #expect(response.header("Connection") == "close")
            #expect(client.waitForClose())
        }
    }

    @Test func aBurstOfConnectionsIsServedOnEveryLoop() throws {
        // More connections at once than one accept batch holds, over both loops.
        try withServer { server, _ in
            let clients = try (0 ..< 40).map { _ in try #require(TestClient(port: server.boundPort)) }
            for (index, client) in clients.enumerated() {
                client.send("GET /target?i=\(index) HTTP/1.1\r\nHost: t\r\n\r\n")
            }
            for (index, client) in clients.enumerated() {
                #expect(client.readResponse()?.text == "/target?i=\(index)")
            }
            #expect(server.statistics.acceptedConnections == 40)
            #expect(server.statistics.openConnections == 40)
        }
    }

    @Test func expectContinueGetsAnInterimResponse() throws {
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            let interim = try #require(client.readResponse())
            #expect(interim.status == 100)
            client.send("hello")
            let response = try #require(client.readResponse())
            #expect(response.status == 200)
            #expect(response.text == "hello")
        }
    }

    @Test func tooLargeIsRefusedBeforeTheBodyIsSent() throws {
        let events = Mutex<[Int]>([])
        try withServer(observer: { event in events.withLock { $0.append(event.status.code) } }) { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\nExpect: 100-continue\r\n\r\n")
            let response = try #require(client.readResponse())
            #expect(response.status == 413)
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.text.contains("\"code\":\"errorPayloadTooLarge\""))
            #expect(response.header("Connection") == "close")
            #expect(client.waitForClose())
            #expect(server.statistics.serverErrorResponses[413] == 1)
        }
        #expect(events.withLock { $0 } == [413])
    }

    @Test func oversizedHeadersGet431() throws {
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\nX-Big: \(String(repeating: "b", count: 20_000))\r\n\r\n")
            let response = try #require(client.readResponse())
            #expect(response.status == 431)
            #expect(response.text.contains("\"status\":431"))
        }
    }

    @Test func malformedRequestGetsProblemJSONAndClose() throws {
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
            let response = try #require(client.readResponse())
            #expect(response.status == 400)
            #expect(response.text.hasPrefix("{\"type\":\"about:blank\",\"title\":\"Bad Request\",\"status\":400,"))
            #expect(client.waitForClose())
        }
    }

    @Test func chunkedRequestBodyIsDecoded() throws {
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n")
            client.send("5;ext=1\r\npedia\r\n0\r\n\r\n")
            let response = try #require(client.readResponse())
            #expect(response.text == "Wikipedia")
        }
    }

    @Test func streamingResponseIsChunked() throws {
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = try #require(client.readResponse())
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(response.text == "chunk0;chunk1;chunk2;")
            // The connection stays usable after the stream ends.
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(client.readResponse()?.text == "hello")

            let old = try #require(TestClient(port: server.boundPort))
            old.send("GET /stream HTTP/1.0\r\n\r\n")
            let oldResponse = try #require(old.readResponse())
            #expect(oldResponse.header("Transfer-Encoding") == nil)
            #expect(oldResponse.text == "chunk0;chunk1;chunk2;")
        }
    }

    @Test func sizedStreamsKeepTheirLengthAndAShortOneCloses() throws {
        try withServer { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("GET /sized HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = try #require(client.readResponse())
            #expect(response.header("Content-Length") == "12" && response.header("Transfer-Encoding") == nil)
            #expect(response.text == "sized-body!!")
            // Framed by its length, the connection goes on.
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(client.readResponse()?.text == "hello")

            // A body that ends before its announced length can only be told by closing.
            let short = try #require(TestClient(port: server.boundPort))
            short.send("GET /short HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(short.waitForClose())
        }
    }

    @Test func stalledClientsDoNotBlockOthers() throws {
        try withServer({ $0.maxStreamBacklogBytes = 256 * 1024 }) { server, responder in
            // One client stops mid-head, another never reads a flood of output.
            let stalledWriter = try #require(TestClient(port: server.boundPort))
            stalledWriter.send("GET /hello HTTP/1.1\r\nHo")
            let stalledReader = try #require(TestClient(port: server.boundPort))
            stalledReader.send("GET /flood HTTP/1.1\r\nHost: t\r\n\r\n")

            let client = try #require(TestClient(port: server.boundPort))
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(client.readResponse()?.text == "hello")

            // The flood producer is cut off once its unsent backlog passes the cap.
            #expect(waitBriefly(responder.floodStopped))
            let floodClosed = responder.floodClosedByServer.load(ordering: .relaxed)
            #expect(floodClosed)
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(client.readResponse()?.text == "hello")
        }
    }

    @Test func headerTimeoutAnswers408AndCloses() throws {
        try withServer({ $0.timeouts = HTTPTimeouts(idle: 30, header: 0.2, body: 30) }) { server, _ in
            let client = try #require(TestClient(port: server.boundPort))
            client.send("GET /hello HTTP/1.1\r\nHost")
            let response = try #require(client.readResponse())
            #expect(response.status == 408)
            #expect(response.text.contains("\"code\":\"errorInvalidArgument\""))
            #expect(client.waitForClose())
        }
    }

    @Test func stalledBodyAnswers408AndIdleConnectionsClose() throws {
        try withServer({ $0.timeouts = HTTPTimeouts(idle: 0.2, header: 30, body: 0.2) }) { server, _ in
            let uploader = try #require(TestClient(port: server.boundPort))
            uploader.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab")
            let response = try #require(uploader.readResponse())
            #expect(response.status == 408)
            #expect(uploader.waitForClose())

            let idle = try #require(TestClient(port: server.boundPort))
            idle.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(idle.readResponse()?.text == "hello")
            // The idle timeout closes silently: EOF with no response.
            #expect(idle.readResponse() == nil)
        }
    }

    @Test func connectionsOverTheCapGet503() throws {
        try withServer({ $0.maxConnections = 1 }) { server, _ in
            try whileHoldingTheOnlyConnection(server) {
                let second = try #require(TestClient(port: server.boundPort))
                let response = try #require(second.readResponse())
                #expect(response.status == 503)
                #expect(response.text.contains("\"code\":\"errorUnavailable\""))
                #expect(second.waitForClose())
                #expect(server.statistics.serverErrorResponses[503] == 1)
                #expect(server.statistics.openConnections == 1)
            }
        }
    }

    @Test func aRefusedClientCanFinishSendingItsRequestAndRead503() throws {
        try withServer({ $0.maxConnections = 1 }) { server, _ in
            try whileHoldingTheOnlyConnection(server) {
                let second = try #require(TestClient(port: server.boundPort))
                // The 503 is there before the client has written anything. A client writes its whole
                // request before reading; had the server closed the socket right after the 503, the
                // first write would draw a reset and the second would fail.
                #expect(second.waitUntilReadable())
                #expect(second.sendAll("POST /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n"))
                usleep(100_000)
                #expect(second.sendAll("{}"))
                let response = try #require(second.readResponse())
                #expect(response.status == 503)
                #expect(response.header("Connection") == "close")
                #expect(second.waitForClose())
                #expect(server.statistics.openConnections == 1)
            }
        }
    }

    @Test func aRefusedClientThatNeverClosesIsDroppedAfterTheLinger() throws {
        try withServer({ $0.maxConnections = 1; $0.rejectionLingerSeconds = 0.2 }) { server, _ in
            try whileHoldingTheOnlyConnection(server) {
                let second = try #require(TestClient(port: server.boundPort))
                #expect(second.readResponse()?.status == 503)
                // Within the linger the server still takes (and discards) what the client sends...
                #expect(second.sendAll("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"))
                // ...but a client that never closes does not hold the descriptor past it: writing to
                // the closed socket draws a reset, and the write after that fails.
                // (Polled, with a deadline far past the linger: a loaded machine fires its timer late.)
                let deadline = DispatchTime.now() + .seconds(30)
                var closed = false
                while !closed && DispatchTime.now() < deadline {
                    usleep(100_000)
                    closed = !second.sendAll("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
                }
                #expect(closed)
            }
        }
    }

    @Test func gracefulShutdownFinishesTheInFlightResponse() throws {
        let responder = TestResponder()
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0, loopCount: 2), responder: responder)
        try server.start()
        let idle = try #require(TestClient(port: server.boundPort))
        idle.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(idle.readResponse()?.status == 200)
        let busy = try #require(TestClient(port: server.boundPort))
        busy.send("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(waitBriefly(responder.requestHeld))

        let finished = DispatchSemaphore(value: 0)
        let completed = Atomic<Bool>(false)
        server.shutdown(deadline: 30) {
            completed.store(true, ordering: .relaxed)
            finished.signal()
        }
        // Idle keep-alive connections are closed right away...
        #expect(idle.waitForClose())
        // ...while the held request keeps the server from completing its shutdown.
        let completedEarly = completed.load(ordering: .relaxed)
        #expect(!completedEarly)
        responder.releaseHeld(HTTPResponse(status: .ok, bytes: Array("late".utf8)))
        let response = try #require(busy.readResponse())
        #expect(response.text == "late")
        #expect(response.header("Connection") == "close")
        #expect(busy.waitForClose())
        #expect(waitBriefly(finished))
        #expect(server.statistics.openConnections == 0)
        #expect(TestClient(port: server.boundPort) == nil)
    }

    @Test func servesIPv6WhenTheHostHasIt() throws {
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "::1", port: 0, loopCount: 1), responder: TestResponder())
        do {
            try server.start()
        } catch {
            // No IPv6 loopback in this environment: nothing to check.
            return
        }
        defer {
            let done = DispatchSemaphore(value: 0)
            server.shutdown(deadline: 1) { done.signal() }
            _ = waitBriefly(done)
        }
        #expect(server.boundPort > 0)
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = UInt16(server.boundPort).bigEndian
        address.sin6_addr = in6addr_loopback
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        try #require(connected == 0)
        let request = Array("GET /hello HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += chunk[0 ..< count]
        }
        let text = String(decoding: received, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.hasSuffix("\r\n\r\nhello"))
    }

    @Test func shutdownCompletesWhenNeverStartedOrAlreadyStopped() throws {
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), responder: TestResponder())
        let first = DispatchSemaphore(value: 0)
        server.shutdown { first.signal() }
        #expect(waitBriefly(first))
        let second = DispatchSemaphore(value: 0)
        server.shutdown { second.signal() }
        #expect(waitBriefly(second))
    }

    @Test func startReportsClearErrors() throws {
        try withServer { server, _ in
            let clash = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: server.boundPort), responder: TestResponder())
            #expect(throws: HTTPServerError.addressInUse(host: "127.0.0.1", port: server.boundPort)) { try clash.start() }
            #expect(String(describing: HTTPServerError.addressInUse(host: "127.0.0.1", port: 80)) == "address already in use: 127.0.0.1:80")
        }
        let unresolvable = HTTPServer(configuration: HTTPServerConfiguration(host: "no-such-host.invalid", port: 0), responder: TestResponder())
        #expect {
            try unresolvable.start()
        } throws: { error in
            if case HTTPServerError.cannotResolve(let host, _) = error { return host == "no-such-host.invalid" }
            return false
        }
    }
}
