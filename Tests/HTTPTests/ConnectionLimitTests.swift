import Testing
@testable import HTTP

// The edge's limits on one connection's state machine, without sockets: authentication at the
// head, the unauthenticated body limit, the shared body budget, the minimum body rate and the
// per-address connection counts.

/// The transcript with bodies as their lengths: these tests send filler bytes.
private func describeLengths(_ actions: [Machine.Action]) -> [String] { describe(actions, bodies: .count) }

private func post(_ path: String = "/p", length: Int, expectContinue: Bool = false) -> [UInt8] {
    bytes("POST \(path) HTTP/1.1\r\nHost: a\r\nContent-Length: \(length)\r\n" + (expectContinue ? "Expect: 100-continue\r\n" : "") + "\r\n")
}

private let unauthorized = HTTPResponse(status: .unauthorized, headers: ["Content-Type": "application/problem+json"],
                                        bytes: bytes("{\"code\":\"errorAuthenticationRequired\"}"))

@Suite("HTTP connection limits")
struct ConnectionLimitTests {
    // MARK: Authentication at the head

    @Test func aRefusedHeadIsAnsweredWithoutContinueAndWithoutReadingTheBody() {
        var machine = Machine(now: 0)
        #expect(describeLengths(machine.bytesReceived(post(length: 10 << 20, expectContinue: true), now: at(0))) == ["admit POST /p"])
        let actions = machine.admissionDecided(.refuse(unauthorized), now: at(0))
        #expect(describeLengths(actions) == ["write HTTP/1.1 401 Unauthorized, complete"])
        #expect(!writtenText(actions).contains("100 Continue"))
        #expect(writtenText(actions).contains("Connection: close\r\n"))
        // The body never came: the connection closes lingering, so the sender reads the 401.
        #expect(describeLengths(machine.responseWritten(now: at(0))) == ["close lingering"])
    }

    @Test func aRefusedRequestWhoseBodyIsBufferedWholeKeepsTheConnection() {
        var machine = Machine(now: 0)
        let input = post(length: 5) + bytes("hello") + bytes("GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(describeLengths(machine.bytesReceived(input, now: at(0))) == ["admit POST /p"])
        let actions = machine.admissionDecided(.refuse(unauthorized), now: at(0))
        #expect(!writtenText(actions).contains("Connection: close"))
        #expect(describeLengths(machine.responseWritten(now: at(0))) == ["dispatch GET /next body=0"])
    }

    @Test func bytesWhileAwaitingAdmissionAreOnlyBuffered() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(post(length: 10), now: at(0))
        #expect(machine.isAwaitingAdmission)
        #expect(machine.bytesReceived(bytes("0123456789"), now: at(0)).isEmpty)
        #expect(describeLengths(machine.admissionDecided(.admit(authenticated: true), now: at(0))) == ["dispatch POST /p body=10"])
    }

    @Test func requestsWithoutABodyAreNotAskedUnlessEveryHeadIs() {
        var plain = Machine(now: 0)
        #expect(describeLengths(plain.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))) == ["dispatch GET / body=0"])

        var proxied = Machine(admitsEveryHead: true, now: 0)
        #expect(describeLengths(proxied.bytesReceived(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), now: at(0))) == ["admit GET /"])
        #expect(describeLengths(proxied.admissionDecided(.admit(authenticated: true), now: at(0))) == ["dispatch GET / body=0"])
    }

    @Test func anUnauthenticatedBodyIsLimited() {
        var declared = Machine(now: 0)
        _ = declared.bytesReceived(post(length: 64 * 1024 + 1, expectContinue: true), now: at(0))
        let actions = declared.admissionDecided(.admit(authenticated: false), now: at(0))
        #expect(describeLengths(actions) == ["error 413", "write HTTP/1.1 413 Content Too Large", "close lingering"])

        var fits = Machine(now: 0)
        _ = fits.bytesReceived(post(length: 64 * 1024), now: at(0))
        #expect(fits.admissionDecided(.admit(authenticated: false), now: at(0)).isEmpty)

        var chunked = Machine(now: 0)
        _ = chunked.bytesReceived(bytes("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"), now: at(0))
        #expect(chunked.admissionDecided(.admit(authenticated: false), now: at(0)).isEmpty)
        let chunk = bytes(String(32 * 1024, radix: 16) + "\r\n") + [UInt8](repeating: 0x61, count: 32 * 1024) + bytes("\r\n")
        #expect(chunked.bytesReceived(chunk, now: at(0)).isEmpty)
        #expect(chunked.bytesReceived(chunk, now: at(0)).isEmpty)
        #expect(describeLengths(chunked.bytesReceived(chunk, now: at(0))).first == "error 413")
    }

    // MARK: The body budget

    @Test func aBodyWaitsForRoomInTheBudgetThenIsRead() {
        let budget = HTTPBodyBudget(limit: 100)
        var first = Machine(bodyBudget: budget, now: 0)
        _ = first.bytesReceived(post(length: 80), now: at(0))
        _ = first.admissionDecided(.admit(authenticated: true), now: at(0))
        #expect(budget.reservedByteCount == 80)

        var second = Machine(bodyBudget: budget, now: 0)
        _ = second.bytesReceived(post(length: 50, expectContinue: true), now: at(0))
        // No room: reading pauses and nothing is invited.
        #expect(describeLengths(second.admissionDecided(.admit(authenticated: true), now: at(0))) == ["pause"])
        #expect(second.tick(now: at(1)).isEmpty)

        // The first body completes and is dispatched: its reservation is given back.
        #expect(describeLengths(first.bytesReceived([UInt8](repeating: 0x61, count: 80), now: at(1))) == ["dispatch POST /p body=80"])
        #expect(budget.reservedByteCount == 0)
        #expect(describeLengths(second.tick(now: at(2))) == ["write HTTP/1.1 100 Continue", "resume"])
        #expect(budget.reservedByteCount == 50)
        #expect(describeLengths(second.bytesReceived([UInt8](repeating: 0x61, count: 50), now: at(2))) == ["dispatch POST /p body=50"])
        #expect(budget.reservedByteCount == 0)
    }

    @Test func aBodyThatFindsNoRoomInTimeGets503WithRetryAfter() {
        let budget = HTTPBodyBudget(limit: 100)
        #expect(budget.reserve(100))
        var machine = Machine(timeouts: HTTPTimeouts(bodyBudgetWait: 5), bodyBudget: budget, now: 0)
        _ = machine.bytesReceived(post(length: 10), now: at(0))
        _ = machine.admissionDecided(.admit(authenticated: true), now: at(0))
        #expect(machine.tick(now: at(4.9)).isEmpty)
        let actions = machine.tick(now: at(5))
        #expect(describeLengths(actions) == ["error 503", "write HTTP/1.1 503 Service Unavailable", "close lingering"])
        #expect(writtenText(actions).contains("Retry-After: 1\r\n"))
        #expect(writtenText(actions).contains("\"code\":\"\(HTTPProblem.code(for: .serviceUnavailable))\""))
    }

    @Test func aChunkedBodyReservesInStepsAheadOfWhatArrived() {
        let budget = HTTPBodyBudget(limit: 2 * Machine.chunkedReservationStep + 1024)
        var machine = Machine(bodyBudget: budget, now: 0)
        _ = machine.bytesReceived(bytes("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"), now: at(0))
        _ = machine.admissionDecided(.admit(authenticated: true), now: at(0))
        #expect(budget.reservedByteCount == Machine.chunkedReservationStep)
        let size = 512 * 1024
        let chunk = bytes(String(size, radix: 16) + "\r\n") + [UInt8](repeating: 0x61, count: size) + bytes("\r\n")
        #expect(machine.bytesReceived(chunk, now: at(0)).isEmpty)
        // Within a read's worth of the reservation, and the budget (less its headroom) has no second step: pause.
        let more = bytes(String(size - 32 * 1024, radix: 16) + "\r\n") + [UInt8](repeating: 0x61, count: size - 32 * 1024) + bytes("\r\n")
        #expect(describeLengths(machine.bytesReceived(more, now: at(0))) == ["pause"])
        machine.connectionClosed()
        #expect(budget.reservedByteCount == 0)
    }

    @Test func everyWayOutGivesTheReservationBack() {
        let budget = HTTPBodyBudget(limit: 1000)
        var halfClosed = Machine(bodyBudget: budget, now: 0)
        _ = halfClosed.bytesReceived(post(length: 100), now: at(0))
        _ = halfClosed.admissionDecided(.admit(authenticated: true), now: at(0))
        #expect(budget.reservedByteCount == 100)
        _ = halfClosed.peerHalfClosed(now: at(0))
        #expect(budget.reservedByteCount == 0)

        var timedOut = Machine(timeouts: HTTPTimeouts(body: 3), bodyBudget: budget, now: 0)
        _ = timedOut.bytesReceived(post(length: 100), now: at(0))
        _ = timedOut.admissionDecided(.admit(authenticated: true), now: at(0))
        _ = timedOut.tick(now: at(3))
        #expect(timedOut.isClosing && budget.reservedByteCount == 0)
    }

    @Test func theBudgetNeverGrantsPastItsLimit() {
        let budget = HTTPBodyBudget(limit: 8 * 1024)
        #expect(budget.reserve(6 * 1024))
        #expect(!budget.reserve(3 * 1024))
        #expect(budget.reserve(2 * 1024))
        #expect(!budget.reserve(1))
        budget.release(6 * 1024)
        budget.release(2 * 1024)
        #expect(budget.reservedByteCount == 0)
    }

    @Test func largeBodiesLeaveHeadroomForSmallOnes() {
        let budget = HTTPBodyBudget(limit: 8 << 20)
        // Large bodies may take the budget less its headroom (an eighth)...
        #expect(budget.reserve(4 << 20))
        #expect(!budget.reserve(4 << 20))
        #expect(budget.reserve(3 << 20))
        // ...which small ones still find.
        #expect(budget.reserve(HTTPBodyBudget.smallBody))
        budget.release(4 << 20)
        budget.release(3 << 20)
        budget.release(HTTPBodyBudget.smallBody)
        // A body larger than the budget waits for an empty one rather than never being read.
        #expect(budget.reserve(64 << 20))
        #expect(budget.reservedByteCount == 7 << 20)
        budget.release(64 << 20)
        #expect(budget.reservedByteCount == 0)
    }

    // MARK: The minimum body rate

    @Test func aTricklingBodyGets408() {
        var machine = Machine(timeouts: HTTPTimeouts(body: 30, minBodyBytesPerSecond: 1024, minBodyRateSeconds: 10), now: 0)
        _ = machine.bytesReceived(post(length: 1 << 20), now: at(0))
        _ = machine.admissionDecided(.admit(authenticated: true), now: at(0))
        // A byte every few seconds keeps the no-progress timeout from ever firing.
        for second in stride(from: 2.0, to: 10, by: 2) {
            #expect(machine.bytesReceived([0x61], now: at(second)).isEmpty)
            #expect(machine.tick(now: at(second)).isEmpty)
        }
        let actions = machine.tick(now: at(10))
        #expect(describeLengths(actions) == ["error 408", "write HTTP/1.1 408 Request Timeout", "close lingering"])
        #expect(writtenText(actions).contains("slower than 1024 bytes per second"))
    }

    @Test func aBodyFastEnoughInEachWindowGoesOn() {
        var machine = Machine(timeouts: HTTPTimeouts(body: 30, minBodyBytesPerSecond: 1024, minBodyRateSeconds: 10), now: 0)
        _ = machine.bytesReceived(post(length: 1 << 20), now: at(0))
        _ = machine.admissionDecided(.admit(authenticated: true), now: at(0))
        _ = machine.bytesReceived([UInt8](repeating: 0x61, count: 20 * 1024), now: at(5))
        #expect(machine.tick(now: at(10)).isEmpty)
        // A fast start does not buy a slow rest: the next window is judged on its own.
        _ = machine.bytesReceived([0x61], now: at(15))
        #expect(describeLengths(machine.tick(now: at(20))).first == "error 408")
    }

    // MARK: Connections per address

    @Test func addressCountsCapEachAddressAndFollowAProxiedConnection() {
        var counts = HTTPAddressConnectionCounts(limit: 2)
        var results: [Bool] = []
        results.append(counts.admit("127.0.0.1"))
        results.append(counts.admit("127.0.0.1"))
        results.append(counts.admit("127.0.0.1"))
        // Another address is still served while the first is at its cap.
        results.append(counts.admit("127.0.0.2"))
        #expect(results == [true, true, false, true])
        // A proxied connection moves to the client of its latest request, unless that one is full.
        let toFull = counts.move(from: "127.0.0.2", to: "127.0.0.1")
        #expect(!toFull && counts.count(for: "127.0.0.2") == 1)
        let fromNowhere = counts.move(from: nil, to: "10.0.0.9")
        let onward = counts.move(from: "10.0.0.9", to: "127.0.0.2")
        #expect(fromNowhere && onward)
        #expect(counts.count(for: "10.0.0.9") == 0 && counts.count(for: "127.0.0.2") == 2)
        counts.remove("127.0.0.1")
        counts.remove("127.0.0.1")
        #expect(counts.count(for: "127.0.0.1") == 0)
        #expect(counts.addressCount == 1)
    }
}

extension ConnectionLimitTests {
    /// Framing errors are a 400 whether or not the request is authenticated: a refused request's
    /// body is framed as far as it is buffered (never read further).
    @Test func aFramingErrorInTheBufferedBodyOfARefusedRequestIsStillA400() {
        var machine = Machine(now: 0)
        _ = machine.bytesReceived(bytes("POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"), now: at(0))
        let actions = machine.admissionDecided(.refuse(unauthorized), now: at(0))
        #expect(describeLengths(actions) == ["error 400", "write HTTP/1.1 400 Bad Request", "close lingering"])

        var partial = Machine(now: 0)
        _ = partial.bytesReceived(bytes("POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"), now: at(0))
        #expect(describeLengths(partial.admissionDecided(.refuse(unauthorized), now: at(0)))
                == ["write HTTP/1.1 401 Unauthorized, complete"])
        #expect(describeLengths(partial.responseWritten(now: at(0))) == ["close lingering"])
    }
}
