import Synchronization
import Testing
@testable import HTTP

private let second: UInt64 = 1_000_000_000

@Suite("HTTPConnectionStateMachine")
struct ConnectionStateMachineTests {
    @Test func pipelinedRequestsAreDispatchedOneAtATimeInOrder() {
        var machine = Machine(now: 0)
        let input = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\nGET /3 HTTP/1.1\r\nHost: a\r\n\r\n"
        #expect(describe(machine.bytesReceived(bytes(input), now: at(0))) == ["dispatch GET /1 body="])
        // More bytes while a request is in flight are only buffered.
        #expect(machine.bytesReceived(bytes("GET /4 HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0)).isEmpty)
        for index in 1 ... 4 {
            let written = machine.responseReady(HTTPResponse(status: .ok, bytes: bytes("r\(index)")), now: at(0))
            #expect(writtenText(written).hasSuffix("\r\n\r\nr\(index)"))
            let next = describe(machine.responseWritten(now: at(0)))
            #expect(next == (index < 4 ? ["dispatch GET /\(index + 1) body="] : []))
        }
        #expect(!machine.isClosing)
    }

    // The socket shell only reports a response for a dispatched request, and only reports it
    // written after queueing it. Should it ever do otherwise, the connection closes: a release
    // build must not leave it hanging.
    @Test func illegalEventsCloseTheConnection() {
        var early = Machine(now: 0)
        #expect(describe(early.responseReady(HTTPResponse(status: .ok), now: at(0))) == ["close"])
        #expect(early.isClosing)

        var unwritten = Machine(now: 0)
        _ = unwritten.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        #expect(describe(unwritten.responseWritten(now: at(0))) == ["close"])

        var twice = Machine(now: 0)
        _ = twice.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        _ = twice.responseReady(HTTPResponse(status: .ok), now: at(0))
        #expect(describe(twice.responseReady(HTTPResponse(status: .ok), now: at(0))) == ["close"])

        var unasked = Machine(now: 0)
        #expect(describe(unasked.admissionDecided(.admit(authenticated: true), now: at(0))) == ["close"])
        // After a close, late events are expected (a completion racing it) and ignored.
        #expect(unasked.responseReady(HTTPResponse(status: .ok), now: at(0)).isEmpty)
    }

    /// Closing is part of the lifecycle: flush, then close the socket or half-close and linger
    /// until the peer is done or the deadline passes; after `connectionClosed` nothing moves it.
    @Test func closingFlushesThenClosesOrLingersUntilTheDeadline() {
        var plain = Machine(now: 0)
        _ = plain.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"), now: at(0))
        _ = plain.responseReady(HTTPResponse(status: .ok), now: at(0))
        #expect(describe(plain.responseWritten(now: at(0))) == ["close"])
        #expect(plain.isDraining && !plain.isClosed)
        #expect(describe(plain.outputFlushed(now: at(0))) == ["close socket"])
        plain.connectionClosed()
        #expect(plain.isClosed)

        var lingering = Machine(timeouts: HTTPTimeouts(header: 2), lingerSeconds: 2, now: 0)
        _ = lingering.bytesReceived(bytes("GET / HTTP/1.1\r\nHo"), now: at(0))
        #expect(describe(lingering.tick(now: at(2))).last == "close lingering")
        #expect(describe(lingering.outputFlushed(now: at(10))) == ["half-close"])
        #expect(lingering.isLingering)
        // What the peer still sends is discarded; the deadline closes the socket.
        #expect(lingering.bytesReceived(bytes("st: a\r\n\r\n"), now: at(11)).isEmpty)
        #expect(lingering.tick(now: at(11.9)).isEmpty)
        #expect(describe(lingering.tick(now: at(12))) == ["close socket"])

        var peerDone = Machine(now: 0)
        _ = peerDone.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n"), now: at(0))
        #expect(describe(peerDone.outputFlushed(now: at(0))) == ["half-close"])
        #expect(describe(peerDone.peerHalfClosed(now: at(0.5))) == ["close socket"])

        // The peer gone before the flush: no lingering needed.
        var gone = Machine(now: 0)
        _ = gone.bytesReceived(bytes("\u{1}"), now: at(0))
        _ = gone.peerHalfClosed(now: at(0))
        #expect(describe(gone.outputFlushed(now: at(0))) == ["close socket"])
    }

    @Test func eventsAfterCloseAreIgnored() {
        var machine = Machine(now: 0)
        #expect(describe(machine.peerHalfClosed(now: at(0))) == ["close"])
        #expect(machine.responseReady(HTTPResponse(status: .ok), now: at(0)).isEmpty)
        #expect(machine.responseWritten(now: at(0)).isEmpty)
        #expect(machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0)).isEmpty)
        #expect(machine.tick(now: at(1000)).isEmpty)
        #expect(machine.shutdownRequested(now: at(0)).isEmpty)
    }

    @Test func keepAliveOnHTTP11AndCloseOnRequest() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        let head = writtenText(machine.responseReady(HTTPResponse(status: .ok), now: at(0)))
        #expect(!head.contains("Connection:"))
        #expect(head.contains("Content-Length: 0\r\n"))
        #expect(head.contains("Date: Sun, 08 Mar 2026 09:30:00 GMT\r\n"))
        #expect(machine.responseWritten(now: at(0)).isEmpty)

        _ = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"), now: at(0))
        #expect(writtenText(machine.responseReady(HTTPResponse(status: .ok), now: at(0))).contains("Connection: close\r\n"))
        #expect(describe(machine.responseWritten(now: at(0))) == ["close"])
        #expect(machine.isClosing)
    }

    @Test func responderCanAskToClose() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        let text = writtenText(machine.responseReady(HTTPResponse(status: .ok, headers: ["Connection": "close"]), now: at(0)))
        #expect(text.split(separator: "\r\n").filter { $0 == "Connection: close" }.count == 1)
        #expect(describe(machine.responseWritten(now: at(0))) == ["close"])
    }

    @Test func http10ClosesUnlessKeepAlive() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET / HTTP/1.0\r\n\r\n"), now: at(0))
        #expect(writtenText(machine.responseReady(HTTPResponse(status: .ok), now: at(0))).contains("Connection: close\r\n"))
        #expect(describe(machine.responseWritten(now: at(0))) == ["close"])

        var keepAlive = Machine(now: 0)
        _ = keepAlive.bytesReceived(bytes("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), now: at(0))
        let text = writtenText(keepAlive.responseReady(HTTPResponse(status: .ok), now: at(0)))
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Connection: keep-alive\r\n"))
        #expect(keepAlive.responseWritten(now: at(0)).isEmpty)
    }

    @Test func continueIsSentOnlyWhenTheClientWaits() {
        var machine = Machine(now: 0)
        let head = "POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        // Invited only once the responder admitted the request.
        #expect(describe(machine.bytesReceived(bytes(head), now: at(0))) == ["admit POST /u"])
        #expect(describe(machine.admissionDecided(.admit(authenticated: true), now: at(0))) == ["write HTTP/1.1 100 Continue"])
        #expect(describe(machine.bytesReceived(bytes("hello"), now: at(0))) == ["dispatch POST /u body=hello"])

        var eager = Machine(now: 0)
        #expect(describe(eager.bytesReceived(bytes(head + "hello"), now: at(0))) == ["admit POST /u"])
        #expect(describe(eager.admissionDecided(.admit(authenticated: true), now: at(0))) == ["dispatch POST /u body=hello"])
    }

    @Test func tooLargeIsAnsweredBeforeTheBody() {
        var machine = Machine(limits: HTTPLimits(maxBodyLength: 10), now: 0)
        let actions = machine.bytesReceived(bytes("POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n"), now: at(0))
        #expect(describe(actions) == ["error 413", "write HTTP/1.1 413 Content Too Large", "close lingering"])
        let text = writtenText(actions)
        #expect(text.contains("Content-Type: application/problem+json\r\n"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(text.contains("\"code\":\"errorPayloadTooLarge\""))
        #expect(machine.isClosing)
        #expect(machine.bytesReceived(bytes("more"), now: at(0)).isEmpty)
    }

    @Test func parseErrorsCloseTheConnection() {
        var machine = Machine(now: 0)
        let actions = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx"), now: at(0))
        #expect(describe(actions) == ["error 400", "write HTTP/1.1 400 Bad Request", "close lingering"])
        #expect(writtenText(actions).contains("\"code\":\"errorInvalidArgument\""))
    }

    @Test func idleTimeoutClosesSilently() {
        var machine = Machine(timeouts: HTTPTimeouts(idle: 5, header: 2, body: 3), now: 0)
        #expect(machine.tick(now: at(4.9)).isEmpty)
        #expect(describe(machine.tick(now: at(5))) == ["close"])
    }

    @Test func idleTimerRestartsAfterEachResponse() {
        var machine = Machine(timeouts: HTTPTimeouts(idle: 5, header: 2, body: 3), now: 0)
        _ = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(1))
        // No timeout applies while the application works.
        #expect(machine.tick(now: at(100)).isEmpty)
        _ = machine.responseReady(HTTPResponse(status: .ok), now: at(100))
        _ = machine.responseWritten(now: at(100))
        #expect(machine.tick(now: at(104)).isEmpty)
        #expect(describe(machine.tick(now: at(105))) == ["close"])
    }

    @Test func headerTimeoutAnswers408() {
        var machine = Machine(timeouts: HTTPTimeouts(idle: 60, header: 2, body: 3), now: 0)
        #expect(machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHo"), now: at(10)).isEmpty)
        #expect(machine.tick(now: at(11.9)).isEmpty)
        let actions = machine.tick(now: at(12))
        #expect(describe(actions) == ["error 408", "write HTTP/1.1 408 Request Timeout", "close lingering"])
        #expect(machine.isClosing)
    }

    @Test func bodyTimeoutCountsFromLastProgress() {
        var machine = Machine(timeouts: HTTPTimeouts(idle: 60, header: 2, body: 3), now: 0)
        _ = machine.bytesReceived(bytes("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nab"), now: at(0))
        _ = machine.admissionDecided(.admit(authenticated: true), now: at(0))
        _ = machine.bytesReceived(bytes("cd"), now: at(2.5))
        #expect(machine.tick(now: at(5)).isEmpty)
        #expect(describe(machine.tick(now: at(5.5))) == ["error 408", "write HTTP/1.1 408 Request Timeout", "close lingering"])
    }

    @Test func peerHalfCloseWhileIdleCloses() {
        var machine = Machine(now: 0)
        #expect(describe(machine.peerHalfClosed(now: at(0))) == ["close"])
    }

    @Test func peerHalfCloseAfterARequestStillGetsTheResponse() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        // The responder hears of it (a long-poll answers now), and the answer is still written.
        #expect(describe(machine.peerHalfClosed(now: at(0))) == ["peer gone"])
        _ = machine.responseReady(HTTPResponse(status: .ok), now: at(0))
        // The already-received second request is still answered.
        #expect(describe(machine.responseWritten(now: at(0))) == ["dispatch GET /2 body="])
        _ = machine.responseReady(HTTPResponse(status: .ok), now: at(0))
        #expect(describe(machine.responseWritten(now: at(0))) == ["close"])
    }

    @Test func peerHalfCloseWhileAStreamIsWrittenIsNotAnEventForTheResponder() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        _ = machine.responseReady(HTTPResponse(status: .ok, bytes: Array("hello".utf8)), now: at(0))
        #expect(machine.peerHalfClosed(now: at(0)).isEmpty)
    }

    @Test func disconnectSignalRunsThePendingRequestsHandlersOnce() {
        let signal = DisconnectSignal()
        let calls = Counter()
        signal.onDisconnect { calls.add("answered request") }
        signal.requestAnswered()  // that request's handler no longer applies
        signal.onDisconnect { calls.add("pending request") }
        #expect(calls.values.isEmpty)
        signal.fire()
        #expect(calls.values == ["pending request"])
        signal.fire()
        #expect(calls.values == ["pending request"])
        // After end of input, a late registration runs at once.
        signal.onDisconnect { calls.add("late") }
        #expect(calls.values == ["pending request", "late"])
        #expect(signal.hasFired)
    }

    @Test func shutdownClosesIdleAndFinishesInFlight() {
        var idle = Machine(now: 0)
        #expect(describe(idle.shutdownRequested(now: at(0))) == ["close"])

        var busy = Machine(now: 0)
        _ = busy.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        #expect(busy.shutdownRequested(now: at(0)).isEmpty)
        #expect(writtenText(busy.responseReady(HTTPResponse(status: .ok), now: at(0))).contains("Connection: close\r\n"))
        #expect(describe(busy.responseWritten(now: at(0))) == ["close"])
    }

    @Test func shutdownWhileABodyArrivesAnswersThatRequestThenCloses() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nab"), now: at(0))
        _ = machine.admissionDecided(.admit(authenticated: true), now: at(0))
        #expect(machine.shutdownRequested(now: at(0)).isEmpty)
        #expect(describe(machine.bytesReceived(bytes("cd"), now: at(0))) == ["dispatch POST /p body=abcd"])
        #expect(writtenText(machine.responseReady(HTTPResponse(status: .ok), now: at(0))).contains("Connection: close\r\n"))
        #expect(describe(machine.responseWritten(now: at(0))) == ["close"])
        #expect(machine.isClosing)
    }

    @Test func shutdownWhileAResponseIsWrittenClosesAfterIt() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        #expect(!writtenText(machine.responseReady(HTTPResponse(status: .ok), now: at(0))).contains("Connection:"))
        #expect(machine.shutdownRequested(now: at(0)).isEmpty)
        // The pipelined request is not dispatched: the connection closes once this response is out.
        #expect(describe(machine.responseWritten(now: at(0))) == ["close"])
    }

    @Test func pipelinedRequestsBufferedBeforeEndOfInputAreAllAnswered() {
        var machine = Machine(now: 0)
        let input = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
        #expect(describe(machine.bytesReceived(bytes(input), now: at(0))) == ["dispatch GET /1 body="])
        #expect(describe(machine.peerHalfClosed(now: at(0))) == ["peer gone"])
        _ = machine.responseReady(HTTPResponse(status: .ok), now: at(0))
        #expect(describe(machine.responseWritten(now: at(0))) == ["dispatch GET /2 body="])
        // End of input is remembered across requests: the second one is reported gone at once...
        _ = machine.responseReady(HTTPResponse(status: .ok), now: at(0))
        // ...and once nothing is left, the connection closes.
        #expect(describe(machine.responseWritten(now: at(0))) == ["close"])
    }

    @Test func anUnfinishedPipelinedRequestAfterEndOfInputCloses() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHo"), now: at(0))
        _ = machine.peerHalfClosed(now: at(0))
        _ = machine.responseReady(HTTPResponse(status: .ok), now: at(0))
        // The rest of /2 can never arrive: close now rather than wait for the header timeout.
        #expect(describe(machine.responseWritten(now: at(0))) == ["close"])
        #expect(machine.isClosing)
    }

    @Test func readingStaysPausedAcrossAResponseThatCloses() {
        var machine = Machine(maxBufferedBytes: 10, now: 0)
        _ = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"), now: at(0))
        #expect(describe(machine.bytesReceived(bytes("GET /next HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))) == ["pause"])
        _ = machine.responseReady(HTTPResponse(status: .ok), now: at(0))
        // A closing connection never resumes reading.
        #expect(describe(machine.responseWritten(now: at(0))) == ["close"])
    }

    @Test func streamsAreChunkedOn11AndCloseDelimitedOn10() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("GET /s HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        let actions = machine.responseReady(HTTPResponse(status: .ok, body: .stream { _ in }), now: at(0))
        #expect(describe(actions) == ["write HTTP/1.1 200 OK", "stream chunked=true"])
        #expect(writtenText(actions).contains("Transfer-Encoding: chunked\r\n"))
        #expect(describe(machine.streamEnded()) == ["complete"])
        #expect(machine.responseWritten(now: at(0)).isEmpty)

        var old = Machine(now: 0)
        _ = old.bytesReceived(bytes("GET /s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), now: at(0))
        let oldActions = old.responseReady(HTTPResponse(status: .ok, body: .stream { _ in }), now: at(0))
        #expect(describe(oldActions) == ["write HTTP/1.1 200 OK", "stream chunked=false"])
        let text = writtenText(oldActions)
        #expect(!text.contains("Transfer-Encoding"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(describe(old.streamEnded()) == ["complete"])
        #expect(describe(old.responseWritten(now: at(0))) == ["close"])
    }

    /// A stream of known length (a static file) keeps the connection: Content-Length framing, on
    /// HTTP/1.1 and a keep-alive HTTP/1.0 alike, and no producer for HEAD.
    @Test func sizedStreamsCarryTheirLengthAndKeepTheConnection() {
        for request in ["GET /f HTTP/1.1\r\nHost: a\r\n\r\n", "GET /f HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"] {
            var machine = Machine(now: 0)
            _ = machine.bytesReceived(bytes(request), now: at(0))
            let actions = machine.responseReady(HTTPResponse(status: .ok, body: .sizedStream(length: 70_000) { _ in }), now: at(0))
            #expect(describe(actions) == ["write HTTP/1.1 200 OK", "stream chunked=false length=70000"])
            let text = writtenText(actions)
            #expect(text.contains("Content-Length: 70000\r\n") && !text.contains("Transfer-Encoding"))
            #expect(!text.contains("Connection: close"))
            #expect(describe(machine.streamEnded()) == ["complete"])
            #expect(machine.responseWritten(now: at(0)).isEmpty, "the connection stays open")
        }
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("HEAD /f HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        let head = machine.responseReady(HTTPResponse(status: .ok, body: .sizedStream(length: 70_000) { _ in }), now: at(0))
        #expect(describe(head) == ["write HTTP/1.1 200 OK, complete"])
        #expect(writtenText(head).contains("Content-Length: 70000\r\n"))
    }

    @Test func headAnd204And304HaveNoBody() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("HEAD / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        let head = writtenText(machine.responseReady(HTTPResponse(status: .ok, bytes: bytes("12345")), now: at(0)))
        #expect(head.hasSuffix("Content-Length: 5\r\n\r\n"))
        _ = machine.responseWritten(now: at(0))

        _ = machine.bytesReceived(bytes("HEAD /s HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        #expect(describe(machine.responseReady(HTTPResponse(status: .ok, body: .stream { _ in }), now: at(0)))
                == ["write HTTP/1.1 200 OK, complete"])
        _ = machine.responseWritten(now: at(0))

        _ = machine.bytesReceived(bytes("DELETE /x HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        let noContent = writtenText(machine.responseReady(HTTPResponse(status: .noContent, bytes: bytes("ignored")), now: at(0)))
        #expect(!noContent.contains("Content-Length"))
        #expect(noContent.hasSuffix("\r\n\r\n"))
        _ = machine.responseWritten(now: at(0))

        _ = machine.bytesReceived(bytes("GET /x HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        let notModified = writtenText(machine.responseReady(HTTPResponse(status: .notModified), now: at(0)))
        #expect(!notModified.contains("Content-Length"))
    }

    @Test func readingPausesWhenPipelinedInputPilesUp() {
        var machine = Machine(maxBufferedBytes: 100, now: 0)
        _ = machine.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))
        let request = "GET /next HTTP/1.1\r\nHost: a\r\n\r\n"
        var paused = false
        for _ in 0 ..< 10 where !paused {
            paused = describe(machine.bytesReceived(bytes(request), now: at(0))) == ["pause"]
        }
        #expect(paused)
        _ = machine.responseReady(HTTPResponse(status: .ok), now: at(0))
        #expect(describe(machine.responseWritten(now: at(0))).prefix(2) == ["resume", "dispatch GET /next body="])
    }

    @Test func chunkedRequestBodyAndTrailersReachTheRequest() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\n"), now: at(0))
        let actions = machine.admissionDecided(.admit(authenticated: true), now: at(0))
        guard case .dispatch(let request) = actions.first else {
            Issue.record("expected a dispatch")
            return
        }
        #expect(request.body == bytes("abc"))
        #expect(request.headers["X-Sum"] == "1")
    }
}

private final class Counter: Sendable {
    private let state = Mutex<[String]>([])
    func add(_ value: String) { state.withLock { $0.append(value) } }
    var values: [String] { state.withLock { $0 } }
}
