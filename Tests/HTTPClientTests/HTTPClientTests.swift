import Glibc
import NetworkPolicy
import Testing
@testable import HTTPClient

/// Against loopback receivers started here; "127.0.0.1" is on the allow-list unless a test says otherwise.
@Suite struct HTTPClientTests {
    static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    func client(allowing hosts: Set<String> = ["127.0.0.1"], exchangeTimeout: Double = 10, connectTimeout: Double = 5,
                resolve: (@Sendable (String, Int) -> Result<[IPAddress], HTTPClientError>)? = nil) -> HTTPClient {
        var configuration = HTTPClientConfiguration(policy: SSRFPolicy(allowedHosts: hosts))
        configuration.exchangeTimeout = exchangeTimeout
        configuration.connectTimeout = connectTimeout
        if let resolve { configuration.resolve = resolve }
        return HTTPClient(configuration: configuration)
    }

    func post(_ client: HTTPClient, _ url: String, body: String = "{}") async throws -> Result<HTTPClientResponse, HTTPClientError> {
        let request = HTTPClientRequest(url: try ReceiverURL(parsing: url), headers: [("Content-Type", "application/json"), ("webhook-id", "msg_1")],
                                        body: Array(body.utf8))
        return await client.send(request)
    }

    @Test func deliversAndReadsA2xx() async throws {
        let receiver = try TestReceiver { _ in .answer(Self.ok) }
        defer { receiver.stop() }
        let result = try await post(client(), "http://127.0.0.1:\(receiver.port)/hook?x=1", body: #"{"added":[]}"#)
        let response = try result.get()
        #expect(response.status == 200 && response.body == Array("ok".utf8))
        let request = try #require(receiver.requests.first)
        #expect(request.head.hasPrefix("POST /hook?x=1 HTTP/1.1\r\n"))
        #expect(request.header("host") == "127.0.0.1:\(receiver.port)")
        #expect(request.header("webhook-id") == "msg_1")
        #expect(request.header("content-type") == "application/json")
        #expect(request.body == Array(#"{"added":[]}"#.utf8))
    }

    @Test func a500IsAnAnswer() async throws {
        let receiver = try TestReceiver { _ in .answer("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops") }
        defer { receiver.stop() }
        let response = try await post(client(), "http://127.0.0.1:\(receiver.port)/").get()
        #expect(response.status == 500)
    }

    @Test func redirectsAreNotFollowed() async throws {
        let target = try TestReceiver { _ in .answer(Self.ok) }
        defer { target.stop() }
        let redirecting = try TestReceiver { _ in
            .answer("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:\(target.port)/\r\nContent-Length: 0\r\n\r\n")
        }
        defer { redirecting.stop() }
        let response = try await post(client(), "http://127.0.0.1:\(redirecting.port)/").get()
        #expect(response.status == 307)
        #expect(target.acceptedConnections == 0)
    }

    @Test func aSlowReceiverTimesOut() async throws {
        let receiver = try TestReceiver { _ in .answerAfter(seconds: 5, Self.ok) }
        defer { receiver.stop() }
        let result = try await post(client(exchangeTimeout: 0.3), "http://127.0.0.1:\(receiver.port)/")
        #expect(result.failure == .timedOut)
    }

    @Test func aRefusedConnectionIsAFailure() async throws {
        // A port that was just free: nothing listens there now.
        let closed = try TestReceiver(accepting: false) { _ in .answer(Self.ok) }
        let port = closed.port
        closed.stop()
        let result = try await post(client(), "http://127.0.0.1:\(port)/")
        guard case .connectionFailed(let detail) = result.failure else {
            Issue.record("expected a connection failure, got \(result)")
            return
        }
        #expect(detail.lowercased().contains("refused"))
    }

    @Test func aFullListenQueueTimesOutTheConnect() async throws {
        // Nobody accepts and the queue is full: the kernel drops further SYNs, so connect hangs.
        let receiver = try TestReceiver(backlog: 0, accepting: false) { _ in .answer(Self.ok) }
        defer { receiver.stop() }
        var fillers: [Int32] = []
        defer { for fd in fillers { close(fd) } }
        for _ in 0..<4 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fillers.append(fd)
            _ = IPAddress.v4(0x7f00_0001).withSocketAddress(port: receiver.port) { Glibc.connect(fd, $0, $1) }
        }
        let result = try await post(client(exchangeTimeout: 5, connectTimeout: 0.3), "http://127.0.0.1:\(receiver.port)/")
        #expect(result.failure == .connectTimedOut)
    }

    @Test func keepAliveReusesOneConnectionPerReceiver() async throws {
        let receiver = try TestReceiver { _ in .answer(Self.ok) }
        defer { receiver.stop() }
        let client = client()
        for _ in 0..<3 {
            #expect(try await post(client, "http://127.0.0.1:\(receiver.port)/").get().status == 200)
        }
        // A connection goes back to the pool only when its request was wholly written before the
        // answer came; on a loaded machine the receiver's answer can overtake the write's
        // completion, and that connection is then closed, not reused. So: every exchange used a
        // new or a pooled connection, and the pool served at least one of them.
        #expect(client.statistics.connectionsReused >= 1)
        #expect(client.statistics.connectionsOpened + client.statistics.connectionsReused == 3)
        #expect(receiver.acceptedConnections == client.statistics.connectionsOpened)
        #expect(receiver.requests.count == 3)
    }

    @Test func connectionCloseIsHonoured() async throws {
        let receiver = try TestReceiver { _ in .answerAndClose("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n") }
        defer { receiver.stop() }
        let client = client()
        for _ in 0..<2 {
            #expect(try await post(client, "http://127.0.0.1:\(receiver.port)/").get().status == 200)
        }
        #expect(receiver.acceptedConnections == 2)
        #expect(client.statistics.connectionsReused == 0)
    }

    @Test func aConnectionTheReceiverClosedWhileIdleIsReplaced() async throws {
        // Keep-alive by the headers, but the receiver closes right after answering.
        let receiver = try TestReceiver { _ in .answerAndClose(Self.ok) }
        defer { receiver.stop() }
        let client = client()
        #expect(try await post(client, "http://127.0.0.1:\(receiver.port)/").get().status == 200)
        // Let the close arrive.
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await post(client, "http://127.0.0.1:\(receiver.port)/").get().status == 200)
        #expect(receiver.acceptedConnections == 2)
        #expect(receiver.requests.count == 2)
    }

    @Test func privateAddressesAreRefusedUnlessAllowed() async throws {
        let receiver = try TestReceiver { _ in .answer(Self.ok) }
        defer { receiver.stop() }
        let strict = client(allowing: [])
        let loopback = try await post(strict, "http://127.0.0.1:\(receiver.port)/")
        #expect(loopback.failure == .refused(host: "127.0.0.1", address: IPAddress("127.0.0.1"), .loopback))
        let other = try await post(strict, "http://2130706433:\(receiver.port)/")
        #expect(other.failure == .refused(host: "2130706433", address: IPAddress("127.0.0.1"), .loopback))
        let named = try await post(strict, "http://localhost:\(receiver.port)/")
        #expect(named.failure == .refused(host: "localhost", address: nil, .loopback))
        #expect(receiver.acceptedConnections == 0)
    }

    @Test func namesConnectToTheAddressTheyWereCheckedAt() async throws {
        let receiver = try TestReceiver { _ in .answer(Self.ok) }
        defer { receiver.stop() }
        let resolver: @Sendable (String, Int) -> Result<[IPAddress], HTTPClientError> = { host, _ in
            host == "receiver.test" ? .success([.v4(0x7f00_0001)]) : .failure(.resolutionFailed(host: host, detail: "unknown"))
        }
        // Not listed: the name resolving to loopback is refused.
        let refused = try await post(client(allowing: [], resolve: resolver), "http://receiver.test:\(receiver.port)/")
        #expect(refused.failure == .refused(host: "receiver.test", address: IPAddress("127.0.0.1"), .loopback))
        #expect(receiver.acceptedConnections == 0)
        // The deliveries list shows the description to the token's holder: a name's address stays unsaid.
        let said = try #require(refused.failure).description
        #expect(said.contains("receiver.test: it resolves to a loopback address") && !said.contains("127.0.0.1"), "\(said)")
        #expect(HTTPClientError.refused(host: "2130706433", address: IPAddress("127.0.0.1"), .loopback).description
            .contains("2130706433 (127.0.0.1): a loopback address"))
        // Listed: the connection goes to the resolved address, and the Host header keeps the name.
        let allowed = try await post(client(allowing: ["receiver.test"], resolve: resolver), "http://receiver.test:\(receiver.port)/")
        #expect(try allowed.get().status == 200)
        #expect(receiver.requests.first?.header("host") == "receiver.test:\(receiver.port)")
        let unknown = try await post(client(resolve: resolver), "http://nowhere.test/")
        #expect(unknown.failure == .resolutionFailed(host: "nowhere.test", detail: "unknown"))
    }

    @Test func httpsNeedsTheForwardProxy() async throws {
        let result = try await post(client(allowing: ["127.0.0.1"]), "https://127.0.0.1:8443/")
        #expect(result.failure == .httpsNeedsForwardProxy)
    }

    @Test func headersThatBreakFramingAreRefused() async throws {
        let request = HTTPClientRequest(url: try ReceiverURL(parsing: "http://127.0.0.1:8/"), headers: [("X-A", "1\r\nX-B: 2")])
        #expect(await client().send(request).failure == .invalidRequest)
        let framing = HTTPClientRequest(url: try ReceiverURL(parsing: "http://127.0.0.1:8/"), headers: [("Content-Length", "5")])
        #expect(await client().send(framing).failure == .invalidRequest)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
