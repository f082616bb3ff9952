import Testing
@testable import HTTP

// A connection's whole life through the pure state machine, without sockets: each request as a
// numbered exchange (admission, response, a streamed body's end), the answers the shell relays
// late or out of turn, and the edge limits from the first byte to the closed socket.

@Suite("HTTP connection lifecycle")
struct ConnectionLifecycleTests {
    private let ok = HTTPResponse(status: .ok, bytes: bytes("ok"))

    @Test func aKeepAliveConnectionFromFirstByteToClosedSocket() {
        var machine = Machine(timeouts: HTTPTimeouts(idle: 5), now: 0)
        let post = "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        #expect(describe(machine.bytesReceived(bytes(post), now: at(0))) == ["admit POST /p"])
        let first = machine.lastExchange
        #expect(first == 1)
        #expect(describe(machine.admissionDecided(.admit(authenticated: true), exchange: first, now: at(0)))
                == ["write HTTP/1.1 100 Continue"])
        let dispatched = machine.bytesReceived(bytes("hello" + "GET /next HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(1))
        guard case .dispatch(let request) = dispatched.first else {
            Issue.record("expected a dispatch")
            return
        }
        // The admitted request keeps its number through its body to its response.
        #expect(machine.lastExchange == first && request.body == bytes("hello"))
        #expect(describe(machine.responseReady(ok, exchange: first, now: at(1))) == ["write HTTP/1.1 200 OK, complete"])
        #expect(describe(machine.responseWritten(now: at(1))) == ["dispatch GET /next body="])
        let second = machine.lastExchange
        #expect(second == 2)
        _ = machine.responseReady(ok, exchange: second, now: at(1))
        #expect(machine.responseWritten(now: at(1)).isEmpty)
        // Idle until the keep-alive timeout, then closed: flush, close the socket, closed.
        #expect(machine.tick(now: at(5.9)).isEmpty)
        #expect(describe(machine.tick(now: at(6))) == ["close"])
        #expect(describe(machine.outputFlushed(now: at(6))) == ["close socket"])
        machine.connectionClosed()
        #expect(machine.isClosed)
    }

    /// A responder's answer may arrive after its request is over (the connection moved on to the
    /// next request): it names its exchange, and the machine ignores it.
    @Test func lateAnswersForAnEarlierExchangeAreIgnored() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n"),
                                  now: at(0))
        _ = machine.responseReady(ok, exchange: 1, now: at(0))
        #expect(describe(machine.responseWritten(now: at(0))) == ["admit POST /2"])
        #expect(machine.responseReady(ok, exchange: 1, now: at(0)).isEmpty)
        #expect(machine.admissionDecided(.refuse(ok), exchange: 1, now: at(0)).isEmpty)
        #expect(machine.isAwaitingAdmission)
        #expect(describe(machine.admissionDecided(.admit(authenticated: true), exchange: 2, now: at(0))) == [])
        #expect(describe(machine.bytesReceived(bytes("hi"), now: at(0))) == ["dispatch POST /2 body=hi"])
        #expect(machine.responseReady(ok, exchange: 1, now: at(0)).isEmpty)
        #expect(writtenText(machine.responseReady(ok, exchange: 2, now: at(0))).hasSuffix("\r\n\r\nok"))
    }

    /// Answers no request is waiting for are bugs in the shell or the responder: the connection
    /// closes (flushing what is queued) rather than guess, in a release build too.
    @Test func answersOutOfTurnCloseTheConnection() {
        let get = bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n")

        var unissued = Machine(now: 0)
        _ = unissued.bytesReceived(get, now: at(0))
        #expect(describe(unissued.responseReady(ok, exchange: 2, now: at(0))) == ["close"])

        var secondAdmission = Machine(now: 0)
        _ = secondAdmission.bytesReceived(bytes("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n"), now: at(0))
        _ = secondAdmission.admissionDecided(.admit(authenticated: true), exchange: 1, now: at(0))
        #expect(describe(secondAdmission.admissionDecided(.admit(authenticated: true), exchange: 1, now: at(0))) == ["close"])

        var unstreamed = Machine(now: 0)
        _ = unstreamed.bytesReceived(get, now: at(0))
        _ = unstreamed.responseReady(ok, exchange: 1, now: at(0))
        #expect(describe(unstreamed.streamEnded(exchange: 1)) == ["close"])

        // Written before its stream ended: the body would be cut short, so the connection closes.
        var early = Machine(now: 0)
        _ = early.bytesReceived(get, now: at(0))
        _ = early.responseReady(HTTPResponse(status: .ok, body: .stream { _ in }), exchange: 1, now: at(0))
        #expect(describe(early.responseWritten(now: at(0))) == ["close"])
        #expect(early.isDraining)
    }

    /// A streamed body is complete at its end, whoever ends it: the producer when its data is
    /// done, or the application cutting it off (a revoked token's change stream ends with a
    /// final event). The pipelined request behind it follows on the same connection.
    @Test func aStreamedResponseIsCompleteAtItsEndAndThePipelinedRequestFollows() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET /stream HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        let streaming = machine.responseReady(HTTPResponse(status: .ok, body: .stream { _ in }), exchange: 1, now: at(0))
        #expect(describe(streaming) == ["write HTTP/1.1 200 OK", "stream chunked=true"])
        guard case .startStream(_, _, _, let exchange) = streaming.last else {
            Issue.record("expected a stream")
            return
        }
        #expect(exchange == 1)
        // Nothing times out a running stream: a stalled reader is the shell's write timeout.
        #expect(machine.tick(now: at(3600)).isEmpty)
        #expect(machine.hasRequestInFlight && machine.isWritingResponse)
        #expect(describe(machine.streamEnded(exchange: 1)) == ["complete"])
        #expect(describe(machine.responseWritten(now: at(3600))) == ["dispatch GET /next body="])
        // The first stream's end, told again now that the next exchange is in flight, is late.
        #expect(machine.streamEnded(exchange: 1).isEmpty)
        #expect(machine.hasRequestInFlight)
    }

    /// The connection went away under a running stream (the peer left, a write failed): the
    /// shell closed the socket and cut the stream off, and its end, reported afterwards, is ignored.
    @Test func aStreamCutOffByTheClosedConnectionEndsQuietly() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET /stream HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        _ = machine.responseReady(HTTPResponse(status: .ok, body: .stream { _ in }), exchange: 1, now: at(0))
        machine.connectionClosed()
        #expect(machine.streamEnded(exchange: 1).isEmpty)
        #expect(machine.responseWritten(now: at(0)).isEmpty)
        #expect(machine.isClosed)
    }

    /// Shutdown during a stream: the stream runs to its end, then the connection closes instead
    /// of reading the next request.
    @Test func shutdownDuringAStreamClosesAfterItsEnd() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET /stream HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        _ = machine.responseReady(HTTPResponse(status: .ok, body: .stream { _ in }), exchange: 1, now: at(0))
        #expect(machine.shutdownRequested(now: at(1)).isEmpty)
        #expect(describe(machine.streamEnded(exchange: 1)) == ["complete"])
        #expect(describe(machine.responseWritten(now: at(1))) == ["close"])
        #expect(describe(machine.outputFlushed(now: at(1))) == ["close socket"])
    }

    /// A head that takes too long is answered 408, then the connection half-closes and lingers
    /// until the deadline, discarding what the client still sends.
    @Test func headerTimeoutThenLingeringCloseUntilTheDeadline() {
        var machine = Machine(timeouts: HTTPTimeouts(header: 10), lingerSeconds: 2, now: 0)
        _ = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost"), now: at(1))
        #expect(machine.tick(now: at(10.9)).isEmpty)
        #expect(describe(machine.tick(now: at(11))) == ["error 408", "write HTTP/1.1 408 Request Timeout", "close lingering"])
        #expect(describe(machine.outputFlushed(now: at(11))) == ["half-close"])
        #expect(machine.bytesReceived(bytes(": a\r\n\r\n"), now: at(12)).isEmpty)
        #expect(machine.tick(now: at(12.9)).isEmpty)
        #expect(describe(machine.tick(now: at(13))) == ["close socket"])
        machine.connectionClosed()
        #expect(machine.tick(now: at(20)).isEmpty)
    }

    /// A body slower than the minimum rate is answered 408 with a lingering close, which ends
    /// early once the peer closes its side; the budget it held is given back.
    @Test func aSlowBodyGets408AndTheLingerEndsWithThePeer() {
        let budget = HTTPBodyBudget(limit: 1 << 20)
        var machine = Machine(timeouts: HTTPTimeouts(body: 60, minBodyBytesPerSecond: 100, minBodyRateSeconds: 10),
                              bodyBudget: budget, lingerSeconds: 2, now: 0)
        _ = machine.bytesReceived(bytes("POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n"), now: at(0))
        _ = machine.admissionDecided(.admit(authenticated: true), exchange: 1, now: at(0))
        #expect(budget.reservedByteCount == 5000)
        for second in 1 ... 9 { #expect(machine.bytesReceived(bytes("x"), now: at(Double(second))).isEmpty) }
        #expect(describe(machine.tick(now: at(10))) == ["error 408", "write HTTP/1.1 408 Request Timeout", "close lingering"])
        #expect(budget.reservedByteCount == 0)
        #expect(describe(machine.outputFlushed(now: at(10))) == ["half-close"])
        #expect(describe(machine.peerHalfClosed(now: at(10.5))) == ["close socket"])
    }

    /// Pipelined requests are answered one at a time, in order, each its own exchange; input
    /// piling up behind them pauses reading until the machine catches up.
    @Test func pipelinedRequestsAreNumberedExchangesAnsweredInOrder() {
        var machine = Machine(maxBufferedBytes: 60, now: 0)
        let get = "GET /n HTTP/1.1\r\nHost: a\r\n\r\n"
        #expect(describe(machine.bytesReceived(bytes(get + get), now: at(0))) == ["dispatch GET /n body="])
        #expect(describe(machine.bytesReceived(bytes(get + get), now: at(0))) == ["pause"])
        var exchanges: [Machine.Exchange] = [machine.lastExchange]
        for _ in 0 ..< 3 {
            _ = machine.responseReady(ok, exchange: machine.lastExchange, now: at(0))
            let next = machine.responseWritten(now: at(0))
            for case .dispatch in next { exchanges.append(machine.lastExchange) }
        }
        #expect(exchanges == [1, 2, 3, 4])
    }
}
