// The life of one HTTP/1.1 connection as a pure state machine, from the first byte to the closed
// socket: the socket shell feeds it events and carries out the actions it returns. Keep-alive,
// pipelining, 100-continue, authentication at the head, the body budget, timeouts and the
// lingering close are therefore testable without sockets. Every event either moves it or is
// answered with a close; none is merely asserted away. Each request is one numbered exchange: the
// answers the shell relays from other threads (admission, response, a stream's end) name theirs,
// so a late one for an exchange already over is told apart from a bug.

/// Connection timeouts in seconds.
public struct HTTPTimeouts: Sendable, Equatable {
    /// How long a keep-alive connection may sit between requests.
    public var idle: Double
    /// How long a client may take to send a complete request head, counted from its first byte.
    public var header: Double
    /// How long a request body may go without progress.
    public var body: Double
    /// The slowest a request body may arrive, in bytes per second averaged over
    /// `minBodyRateSeconds` (408 below it; 0 turns the check off): a client that sends a byte now
    /// and then never trips `body`, yet holds its buffer and its connection for as long as it likes.
    public var minBodyBytesPerSecond: Int
    public var minBodyRateSeconds: Double
    /// How long a request waits for room in the server's body budget before it gets a 503.
    public var bodyBudgetWait: Double

    public init(idle: Double = 60, header: Double = 10, body: Double = 30,
                minBodyBytesPerSecond: Int = 1024, minBodyRateSeconds: Double = 10, bodyBudgetWait: Double = 5) {
        self.idle = idle
        self.header = header
        self.body = body
        self.minBodyBytesPerSecond = minBodyBytesPerSecond
        self.minBodyRateSeconds = minBodyRateSeconds
        self.bodyBudgetWait = bodyBudgetWait
    }
}

/// A point in time as the state machine needs it: a monotonic clock for timeouts and the
/// current IMF-fixdate for the `Date` header.
public struct HTTPInstant: Sendable {
    public var uptimeNanoseconds: UInt64
    public var httpDate: String
    public init(uptimeNanoseconds: UInt64, httpDate: String) {
        self.uptimeNanoseconds = uptimeNanoseconds
        self.httpDate = httpDate
    }
}

public struct HTTPConnectionStateMachine: Sendable {
    /// Numbers a connection's requests, from 1: what an answer names to say which request it is for.
    public typealias Exchange = UInt64

    public enum Action: Sendable {
        /// Hand a complete request, exchange `lastExchange`, to the application, and report its
        /// answer with `responseReady(_:exchange:)`. No other request is dispatched until
        /// `responseWritten` for this one.
        case dispatch(HTTPRequest)
        /// A head is in, exchange `lastExchange`, and its body is not read yet: ask the responder
        /// (and, for a connection from a trusted proxy, the per-address cap) and report with
        /// `admissionDecided(_:exchange:)`. Until then nothing more of the request is read: the
        /// shell stops reading if the answer does not come at once, and reads again once it came.
        case admit(HTTPRequestHead)
        /// Queue bytes for the socket, in order.
        case write([UInt8])
        /// The request's answer: queue its bytes (the head, and the body unless a stream follows);
        /// what the request registered for the peer's going away no longer applies. `complete`:
        /// the response ends with these bytes, so report `responseWritten` once the socket has
        /// taken them (or enough of them that the next answer may follow); otherwise its
        /// stream's end completes it (`.responseComplete`).
        case writeResponse([UInt8], complete: Bool)
        /// The streamed response's last bytes are queued: report `responseWritten` as for a
        /// complete `.writeResponse`.
        case responseComplete
        /// The head was queued by a preceding `.write`; now run the producer, and report its end
        /// with `streamEnded(exchange:)`. With `length` the body has that `Content-Length`;
        /// otherwise with `chunked` false it is delimited by closing the connection (HTTP/1.0).
        case startStream(producer: @Sendable (any HTTPBodyStream) -> Void, chunked: Bool, length: Int?, exchange: Exchange)
        case pauseReading
        case resumeReading
        /// Flush queued output, then report `outputFlushed`. `lingering`: an error response was
        /// sent while the peer may still be sending; the machine will ask for a half-close and a
        /// brief drain so the peer sees the response instead of a reset.
        case close(lingering: Bool)
        /// Output is flushed: shut the write side, and read (discarding) until the peer is done
        /// (`peerHalfClosed`) or the linger deadline passes (`tick`).
        case halfClose
        /// Close the socket now; report `connectionClosed` when done.
        case closeSocket
        /// The server answered on its own (parse error, timeout): for statistics and access logs.
        case serverError(status: HTTPStatus, detail: String)
        /// The client sent end of input while its request waits for an answer. The answer is still
        /// written (a half-closed client reads it), but a responder holding the request open (a
        /// long-poll) should answer now rather than at its deadline.
        case peerGone
    }

    /// One dispatched request, from `.dispatch` until its response is written: what the response
    /// head and the next step need, and the input side's state meanwhile.
    @usableFromInline
    struct InFlight: Sendable {
        var exchange: Exchange
        var version: HTTPVersion
        /// A HEAD request: its response carries no body. A flag rather than the method, so the
        /// phase holds no reference and copying or replacing it costs nothing.
        var isHead: Bool
        /// The request allows keep-alive and no shutdown has begun.
        var keepAlive: Bool
        /// Reading was paused because pipelined bytes piled up behind this request.
        var readingPaused = false
        /// The peer sent end of input; buffered pipelined requests are still answered, then the connection closes.
        var inputEnded: Bool
        /// The answer was given before the request's body was read: the connection closes after
        /// it with a lingering close, so the peer still sending its body reads the answer.
        var lingerOnClose = false
        /// The response's body is a stream still running: it is complete at `streamEnded`.
        var streaming = false
    }

    /// A request whose head is in and whose body is not complete yet (awaiting admission, waiting
    /// for the body budget, or being read).
    private struct PendingRequest: Sendable {
        var head: HTTPRequestHead
        var body: [UInt8] = []
        /// Bytes of body this request may carry: the parser's limit, or the unauthenticated one.
        var limit: Int = .max
        /// Bytes of the server's body budget this request holds.
        var reserved = 0
        /// The minimum-rate window: when it began and the body bytes received since.
        var windowStart: UInt64 = 0
        var windowBytes = 0
        /// Reading of the body has begun (and a `100 Continue` was sent if it was due).
        var started = false
    }

    // Everything that varies per request lives in the phase's payload, so no field can be stale
    // in a phase it does not belong to; only a request whose body is still to come lives beside
    // it, in `pending`. The payloads are plain values: the phase is read and replaced several
    // times a request, and a payload with references would be copied and destroyed through
    // the runtime's value witnesses each time.
    @usableFromInline
    enum Phase: Sendable {
        /// Between requests, nothing received.
        case idle(since: UInt64)
        /// Part of a head received.
        case readingHead(since: UInt64)
        /// Head complete; the responder decides whether the body is read (`admissionDecided`).
        /// `closeAfter`: shutdown began; answer this request, then close.
        case awaitingAdmission(Exchange, closeAfter: Bool)
        /// Admitted; reading paused until the body budget has room, or `bodyBudgetWait` passes (503).
        case waitingForBudget(since: UInt64, closeAfter: Bool)
        /// Head complete and admitted, body in progress.
        case readingBody(lastProgress: UInt64, closeAfter: Bool)
        /// Dispatched; waiting for `responseReady`.
        case awaitingResponse(InFlight)
        /// Response queued or streaming; waiting for `streamEnded` (a stream) and `responseWritten`.
        case writingResponse(InFlight, closeAfter: Bool)
        /// Closing: the last output is flushing (`outputFlushed`). `lingering`: half-close and
        /// drain after it.
        case draining(lingering: Bool)
        /// Half-closed after an error answer; input is discarded until the peer closes or `until`.
        case lingering(until: UInt64)
        /// The shell was asked to close the socket (`.closeSocket`).
        case closing
        /// The socket is closed (`connectionClosed`): every later event is ignored.
        case closed
    }

    public let timeouts: HTTPTimeouts
    /// Pipelined bytes buffered while a request is in flight before reading is paused.
    public let maxBufferedBytes: Int
    /// How long a lingering close drains the peer before the socket closes.
    public let lingerNanoseconds: UInt64
    /// Ask for admission of every head, not only of those with a body: a connection from a
    /// trusted proxy, whose every request may come from another client address.
    public let admitsEveryHead: Bool
    private let maxUnauthenticatedBodyLength: Int
    private let bodyBudget: HTTPBodyBudget?
    private var parser: HTTPRequestParser
    // Visible to the inlinable queries below, which the socket shell asks several times per
    // request: inlined, they read the phase in place instead of copying the whole machine (its
    // parser and buffers) out of the class that holds it for an opaque call.
    @usableFromInline
    private(set) var phase: Phase
    /// The request whose body is still to come; nil unless the phase is `.awaitingAdmission`,
    /// `.waitingForBudget` or `.readingBody`.
    private var pending: PendingRequest?
    /// The latest exchange's number (0 before the first): the request of a `.dispatch` or
    /// `.admit`, which is the latest until its response is written. Not a payload of those
    /// actions: the list of actions is moved through on every request, and a larger action costs
    /// each move and destroy.
    public private(set) var lastExchange: Exchange = 0

    /// A chunked body's reservation grows in steps of this much, ahead of what has arrived.
    static let chunkedReservationStep = 1 << 20

    public init(limits: HTTPLimits = .default, timeouts: HTTPTimeouts = HTTPTimeouts(),
                maxBufferedBytes: Int = 64 * 1024, bodyBudget: HTTPBodyBudget? = nil, admitsEveryHead: Bool = false,
                lingerSeconds: Double = 2, now: UInt64) {
        self.parser = HTTPRequestParser(limits: limits)
        self.timeouts = timeouts
        self.maxBufferedBytes = maxBufferedBytes
        self.lingerNanoseconds = UInt64(max(0, lingerSeconds) * 1_000_000_000)
        self.maxUnauthenticatedBodyLength = limits.maxUnauthenticatedBodyLength
        self.bodyBudget = bodyBudget
        self.admitsEveryHead = admitsEveryHead
        self.phase = .idle(since: now)
    }

    /// The socket is closed: the shell has nothing left to do for this connection.
    @inlinable
    public var isClosed: Bool {
        if case .closed = phase { return true } else { return false }
    }

    /// Closing has begun (draining, lingering, or the socket is being closed): no request
    /// will be read or answered any more.
    @inlinable
    public var isClosing: Bool {
        switch phase {
        case .draining, .lingering, .closing, .closed: return true
        default: return false
        }
    }

    /// Waiting for the last output to flush (`outputFlushed`).
    @inlinable
    public var isDraining: Bool {
        if case .draining = phase { return true } else { return false }
    }

    /// Half-closed after an error answer, discarding input.
    @inlinable
    public var isLingering: Bool {
        if case .lingering = phase { return true } else { return false }
    }

    /// True while a request is dispatched or its response is being written.
    @inlinable
    public var hasRequestInFlight: Bool {
        switch phase {
        case .awaitingResponse, .writingResponse: return true
        default: return false
        }
    }

    /// True while a response is queued or streaming, until `responseWritten`.
    @inlinable
    public var isWritingResponse: Bool {
        if case .writingResponse = phase { return true } else { return false }
    }

    /// True while the responder is deciding on a head (`.admit` was asked, no decision yet).
    @inlinable
    public var isAwaitingAdmission: Bool {
        if case .awaitingAdmission = phase { return true } else { return false }
    }

    /// Bytes of the body budget this connection holds now.
    public var reservedBodyBytes: Int { pending?.reserved ?? 0 }

    public mutating func bytesReceived(_ bytes: UnsafeRawBufferPointer, now: HTTPInstant) -> [Action] {
        var actions: [Action] = []
        bytesReceived(bytes, now: now, into: &actions)
        return actions
    }

    public mutating func bytesReceived(_ bytes: [UInt8], now: HTTPInstant) -> [Action] {
        bytes.withUnsafeBytes { bytesReceived($0, now: now) }
    }

    /// Like `bytesReceived(_:now:)`, appending to the caller's (reused) action list.
    public mutating func bytesReceived(_ bytes: UnsafeRawBufferPointer, now: HTTPInstant, into actions: inout [Action]) {
        // Closing: input is discarded (a lingering close reads only to let the peer finish).
        guard !isClosing else { return }
        parser.append(bytes)
        switch phase {
        case .idle, .readingHead, .readingBody:
            parse(now: now, inputEnded: false, into: &actions)
        case .awaitingAdmission, .waitingForBudget:
            // Reading is paused; these are bytes of a read already under way. They wait in the
            // parser, which holds at most one read's worth more.
            break
        case .awaitingResponse(var inFlight):
            if pauseIfBacklogged(&inFlight, into: &actions) { phase = .awaitingResponse(inFlight) }
        case .writingResponse(var inFlight, let closeAfter):
            if pauseIfBacklogged(&inFlight, into: &actions) { phase = .writingResponse(inFlight, closeAfter: closeAfter) }
        case .draining, .lingering, .closing, .closed:
            break
        }
    }

    /// Pauses reading when too many pipelined bytes wait behind the request in flight.
    private func pauseIfBacklogged(_ inFlight: inout InFlight, into actions: inout [Action]) -> Bool {
        guard !inFlight.readingPaused && parser.bufferedByteCount > maxBufferedBytes else { return false }
        inFlight.readingPaused = true
        actions.append(.pauseReading)
        return true
    }

    // MARK: Admission and the body budget

    /// The responder's decision on the head of `exchange`'s `.admit`. A decision for an earlier
    /// exchange is late and ignored; any other one out of turn is a bug in the shell or the
    /// responder: the connection closes rather than guessing.
    public mutating func admissionDecided(_ admission: HTTPAdmission, exchange: Exchange, now: HTTPInstant,
                                          into actions: inout [Action]) {
        guard case .awaitingAdmission(exchange, let closeAfter) = phase, var request = pending else {
            return outOfTurn(exchange, into: &actions)
        }
        switch admission {
        case .admit(let authenticated):
            if !authenticated {
                request.limit = maxUnauthenticatedBodyLength
                if case .contentLength(let length) = request.head.framing, length > request.limit {
                    return actions.append(contentsOf: fail(Self.unauthenticatedTooLarge(request.limit), now: now))
                }
            }
            switch request.head.framing {
            case .none: break
            case .contentLength(let length): request.reserved = length
            case .chunked: request.reserved = min(Self.chunkedReservationStep, request.limit)
            }
            pending = request
            if let bodyBudget, request.reserved > 0, !bodyBudget.reserve(request.reserved) {
                // Nothing reserved yet: the reservation is retried on each tick.
                pending?.reserved = 0
                pendingReservation = request.reserved
                phase = .waitingForBudget(since: now.uptimeNanoseconds, closeAfter: closeAfter)
                actions.append(.pauseReading)
                return
            }
            startBody(closeAfter: closeAfter, now: now, into: &actions)
        case .refuse(let response):
            refuse(response, closeAfter: closeAfter, now: now, into: &actions)
        }
    }

    /// The reservation a request waiting for the budget asks for.
    private var pendingReservation = 0

    /// The body may be read now: invite it if the client waits for that, and parse what is buffered.
    /// `resuming`: reading was paused for the body budget.
    private mutating func startBody(closeAfter: Bool, resuming: Bool = false, now: HTTPInstant, into actions: inout [Action]) {
        let time = now.uptimeNanoseconds
        pending?.windowStart = time
        pending?.windowBytes = 0
        phase = .readingBody(lastProgress: time, closeAfter: closeAfter)
        // Only invite the body if the client is actually waiting for the invitation.
        if let request = pending, !request.started {
            pending?.started = true
            if request.head.expectsContinue && request.head.hasBody && parser.bufferedByteCount == 0 {
                actions.append(.write(HTTPResponseSerializer.continueResponse))
            }
        }
        if resuming { actions.append(.resumeReading) }
        parse(now: now, inputEnded: false, into: &actions)
    }

    /// Answers a head without reading its body. What of the body is already buffered is framed
    /// and dropped: a framing error in it is still the 400 it would be with a token, and a body
    /// buffered whole keeps the connection open. Otherwise the connection closes after the answer
    /// (lingering, so a client still sending reads the answer rather than a reset).
    private mutating func refuse(_ response: HTTPResponse, closeAfter: Bool, now: HTTPInstant, into actions: inout [Action]) {
        guard let request = takePending() else { return illegalEvent(into: &actions) }
        var bodySkipped = !request.head.hasBody
        skipping: while !bodySkipped {
            switch parser.step() {
            case .body: continue
            case .end: bodySkipped = true
            case .needMore, .head: break skipping
            case .error(let error):
                pending = request
                return actions.append(contentsOf: fail(error, now: now))
            }
        }
        let inFlight = InFlight(exchange: lastExchange, version: request.head.version, isHead: request.head.method == .head,
                                keepAlive: request.head.keepAlive && !closeAfter && bodySkipped,
                                readingPaused: false, inputEnded: false, lingerOnClose: !bodySkipped)
        phase = .awaitingResponse(inFlight)
        responseReady(response, exchange: lastExchange, now: now, into: &actions)
    }

    /// A chunked body's reservation stays a step ahead of what has arrived (a read's worth at
    /// least). False when the budget has no room: reading pauses until it has.
    private mutating func reserveAhead(closeAfter: Bool, now: HTTPInstant, into actions: inout [Action]) -> Bool {
        guard let bodyBudget, let request = pending, case .chunked = request.head.framing,
              request.body.count + maxBufferedBytes > request.reserved, request.reserved < request.limit else { return true }
        let step = min(Self.chunkedReservationStep, request.limit - request.reserved)
        if bodyBudget.reserve(step) {
            pending?.reserved += step
            return true
        }
        pendingReservation = step
        phase = .waitingForBudget(since: now.uptimeNanoseconds, closeAfter: closeAfter)
        actions.append(.pauseReading)
        return false
    }

    /// Takes the pending request, giving its budget reservation back.
    private mutating func takePending() -> PendingRequest? {
        guard let request = pending.take() else { return nil }
        if request.reserved > 0 { bodyBudget?.release(request.reserved) }
        return request
    }

    private static func unauthenticatedTooLarge(_ limit: Int) -> HTTPParseError {
        HTTPParseError(status: .contentTooLarge, detail: "A request without a valid token may carry at most \(limit) bytes of body; "
                       + "send Authorization: Bearer <token>.")
    }

    // MARK: Responses

    /// The application's response for `exchange`, appended to the caller's (reused) action list.
    /// Legal while that request is dispatched; a response for an earlier exchange is late and
    /// ignored, and any other (a second response, one for no request) closes the connection.
    public mutating func responseReady(_ response: HTTPResponse, exchange: Exchange, now: HTTPInstant, into actions: inout [Action]) {
        guard case .awaitingResponse(var inFlight) = phase, inFlight.exchange == exchange else {
            return outOfTurn(exchange, into: &actions)
        }
        if inFlight.keepAlive && Self.asksToClose(response.headers) { inFlight.keepAlive = false }
        let allowsBody = !inFlight.isHead && HTTPResponseSerializer.allowsBody(status: response.status)
        let bodiless = response.status.code == 204 || response.status.code == 304
        switch response.body {
        case .bytes(let bytes):
            var out = HTTPResponseSerializer.head(status: response.status, headers: response.headers,
                                                  framing: bodiless ? .none : .contentLength(bytes.count),
                                                  keepAlive: inFlight.keepAlive, requestVersion: inFlight.version,
                                                  date: now.httpDate, reservingBody: allowsBody ? bytes.count : 0)
            if allowsBody { out.append(contentsOf: bytes) }
            actions.append(.writeResponse(out, complete: true))
        case .stream(let producer):
            let chunked = inFlight.version == .http1_1
            if !chunked && allowsBody { inFlight.keepAlive = false }
            let out = HTTPResponseSerializer.head(status: response.status, headers: response.headers,
                                                  framing: bodiless ? .none : (chunked ? .chunked : .untilClose),
                                                  keepAlive: inFlight.keepAlive, requestVersion: inFlight.version, date: now.httpDate)
            // Bodiless responses never run the producer: there is nowhere for its bytes to go.
            inFlight.streaming = allowsBody
            actions.append(.writeResponse(out, complete: !inFlight.streaming))
            if inFlight.streaming { actions.append(.startStream(producer: producer, chunked: chunked, length: nil, exchange: exchange)) }
        case .sizedStream(let length, let producer):
            let out = HTTPResponseSerializer.head(status: response.status, headers: response.headers,
                                                  framing: bodiless ? .none : .contentLength(length),
                                                  keepAlive: inFlight.keepAlive, requestVersion: inFlight.version, date: now.httpDate)
            inFlight.streaming = allowsBody && length > 0
            actions.append(.writeResponse(out, complete: !inFlight.streaming))
            if inFlight.streaming { actions.append(.startStream(producer: producer, chunked: false, length: length, exchange: exchange)) }
        }
        phase = .writingResponse(inFlight, closeAfter: !inFlight.keepAlive)
    }

    /// `exchange`'s stream is finished and its last bytes are queued: the response is complete.
    /// Legal while that stream runs; after a close (the stream was cut off with the connection)
    /// or for an earlier exchange it is late and ignored, and any other time it closes the connection.
    public mutating func streamEnded(exchange: Exchange, into actions: inout [Action]) {
        guard case .writingResponse(var inFlight, let closeAfter) = phase, inFlight.exchange == exchange, inFlight.streaming else {
            return outOfTurn(exchange, into: &actions)
        }
        inFlight.streaming = false
        phase = .writingResponse(inFlight, closeAfter: closeAfter)
        actions.append(.responseComplete)
    }

    /// The complete response has been handed to the socket layer, appended
    /// to the caller's (reused) action list. Only legal then; any other time the connection closes
    /// (after a close, ignored).
    public mutating func responseWritten(now: HTTPInstant, into actions: inout [Action]) {
        guard case .writingResponse(let inFlight, let closeAfter) = phase, !inFlight.streaming else {
            return illegalEvent(into: &actions)
        }
        if closeAfter { return beginClose(lingering: inFlight.lingerOnClose, into: &actions) }
        phase = .idle(since: now.uptimeNanoseconds)
        if inFlight.readingPaused { actions.append(.resumeReading) }
        parse(now: now, inputEnded: inFlight.inputEnded, into: &actions)
    }

    public mutating func responseWritten(now: HTTPInstant) -> [Action] {
        var actions: [Action] = []
        responseWritten(now: now, into: &actions)
        return actions
    }

    /// An answer naming `exchange` that the current phase does not expect. One for an earlier
    /// exchange is late (its request was answered or its connection moved on) and ignored; any
    /// other is a bug in the shell or the responder, and the connection closes.
    private mutating func outOfTurn(_ exchange: Exchange, into actions: inout [Action]) {
        if exchange < lastExchange { return }
        illegalEvent(into: &actions)
    }

    /// An event the current phase does not allow. The socket shell never sends one; should it
    /// ever, the connection closes (a release build must not leave it hanging). After a close,
    /// late events (a completion racing the close) are expected and ignored.
    private mutating func illegalEvent(into actions: inout [Action]) {
        guard !isClosing else { return }
        beginClose(lingering: false, into: &actions)
    }

    /// Starts closing: the output queued so far is flushed first (`outputFlushed`).
    private mutating func beginClose(lingering: Bool, into actions: inout [Action]) {
        _ = takePending()
        phase = .draining(lingering: lingering)
        actions.append(.close(lingering: lingering))
    }

    /// Everything queued has been sent while closing: close the socket, or half-close and
    /// linger when an error answer may still be followed by the peer's request bytes.
    public mutating func outputFlushed(now: HTTPInstant, into actions: inout [Action]) {
        guard case .draining(let lingering) = phase else { return }
        if lingering && lingerNanoseconds > 0 {
            phase = .lingering(until: now.uptimeNanoseconds &+ lingerNanoseconds)
            actions.append(.halfClose)
        } else {
            phase = .closing
            actions.append(.closeSocket)
        }
    }

    public mutating func outputFlushed(now: HTTPInstant) -> [Action] {
        var actions: [Action] = []
        outputFlushed(now: now, into: &actions)
        return actions
    }

    /// The peer will send nothing more (read returned 0).
    public mutating func peerHalfClosed(now: HTTPInstant) -> [Action] {
        switch phase {
        case .idle, .readingHead, .awaitingAdmission, .waitingForBudget, .readingBody:
            // An unfinished request can never complete now.
            var actions: [Action] = []
            beginClose(lingering: false, into: &actions)
            return actions
        case .awaitingResponse(var inFlight):
            guard !inFlight.inputEnded else { return [] }
            inFlight.inputEnded = true
            phase = .awaitingResponse(inFlight)
            return [.peerGone]
        case .writingResponse(var inFlight, let closeAfter):
            inFlight.inputEnded = true
            phase = .writingResponse(inFlight, closeAfter: closeAfter)
            return []
        case .draining:
            // The peer read its answer or gave up: no need to linger once output is flushed.
            phase = .draining(lingering: false)
            return []
        case .lingering:
            // The peer is done: the lingering close has done its work.
            phase = .closing
            return [.closeSocket]
        case .closing, .closed:
            return []
        }
    }

    /// The socket is closed: after `.closeSocket`, or on the shell's own account (a write failed
    /// or stalled, the shutdown deadline passed). Whatever the request held is given back.
    public mutating func connectionClosed() {
        _ = takePending()
        phase = .closed
    }

    /// Periodic check; returns what an expired timeout requires.
    public mutating func tick(now: HTTPInstant) -> [Action] {
        let time = now.uptimeNanoseconds
        switch phase {
        case .idle(let since):
            if Self.elapsed(from: since, to: time) >= timeouts.idle {
                var actions: [Action] = []
                beginClose(lingering: false, into: &actions)
                return actions
            }
        case .readingHead(let since):
            if Self.elapsed(from: since, to: time) >= timeouts.header {
                return fail(HTTPParseError(status: .requestTimeout, detail: "The request head was not received in time."), now: now)
            }
        case .waitingForBudget(let since, let closeAfter):
            if let bodyBudget, bodyBudget.reserve(pendingReservation) {
                pending?.reserved += pendingReservation
                pendingReservation = 0
                var actions: [Action] = []
                startBody(closeAfter: closeAfter, resuming: true, now: now, into: &actions)
                return actions
            }
            if Self.elapsed(from: since, to: time) >= timeouts.bodyBudgetWait {
                return fail(HTTPParseError(status: .serviceUnavailable,
                                           detail: "The server is receiving too many request bodies at once; retry shortly."), now: now)
            }
        case .readingBody(let lastProgress, _):
            if Self.elapsed(from: lastProgress, to: time) >= timeouts.body {
                return fail(HTTPParseError(status: .requestTimeout, detail: "The request body was not received in time."), now: now)
            }
            if timeouts.minBodyBytesPerSecond > 0, let request = pending,
               Self.elapsed(from: request.windowStart, to: time) >= timeouts.minBodyRateSeconds {
                let seconds = Self.elapsed(from: request.windowStart, to: time)
                if Double(request.windowBytes) < Double(timeouts.minBodyBytesPerSecond) * seconds {
                    return fail(HTTPParseError(status: .requestTimeout,
                                               detail: "The request body arrived slower than \(timeouts.minBodyBytesPerSecond) bytes per second "
                                               + "over \(Self.secondsText(timeouts.minBodyRateSeconds)) s."), now: now)
                }
                pending?.windowStart = time
                pending?.windowBytes = 0
            }
        case .lingering(let until):
            if time >= until {
                phase = .closing
                return [.closeSocket]
            }
        case .awaitingAdmission, .awaitingResponse, .writingResponse, .draining, .closing, .closed:
            // The application or the socket's write side is what is waited for; the shell times
            // out a write that makes no progress.
            break
        }
        return []
    }

    private static func secondsText(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }

    /// Graceful shutdown: idle connections close now, a request in progress finishes with `Connection: close`.
    public mutating func shutdownRequested(now: HTTPInstant) -> [Action] {
        switch phase {
        case .idle, .readingHead:
            var actions: [Action] = []
            beginClose(lingering: false, into: &actions)
            return actions
        case .awaitingAdmission(let exchange, _):
            phase = .awaitingAdmission(exchange, closeAfter: true)
        case .waitingForBudget(let since, _):
            phase = .waitingForBudget(since: since, closeAfter: true)
        case .readingBody(let lastProgress, _):
            phase = .readingBody(lastProgress: lastProgress, closeAfter: true)
        case .awaitingResponse(var inFlight):
            inFlight.keepAlive = false
            phase = .awaitingResponse(inFlight)
        case .writingResponse(let inFlight, _):
            // The head may already say keep-alive; close once this response is out.
            phase = .writingResponse(inFlight, closeAfter: true)
        case .draining, .lingering, .closing, .closed:
            break
        }
        return []
    }

    /// Parses buffered input until a request is dispatched, more input is needed, or an error.
    /// `inputEnded`: no more bytes will come, so a request that needs more can never complete.
    private mutating func parse(now: HTTPInstant, inputEnded: Bool, into actions: inout [Action]) {
        let time = now.uptimeNanoseconds
        while true {
            switch phase {
            case .idle:
                if parser.bufferedByteCount == 0 {
                    if inputEnded { beginClose(lingering: false, into: &actions) }
                    return
                }
                phase = .readingHead(since: time)
            case .readingHead, .readingBody:
                break
            case .awaitingAdmission, .waitingForBudget, .awaitingResponse, .writingResponse, .draining, .lingering, .closing, .closed:
                return
            }
            switch parser.step() {
            case .needMore:
                if inputEnded { beginClose(lingering: false, into: &actions) }
                return
            case .head(let head):
                if !head.hasBody && !admitsEveryHead {
                    // Complete with its head (the parser's next event is its end): dispatched from
                    // here, the head never round-trips through the phase, whose every copy retains
                    // and releases its fields.
                    guard case .end(let trailers) = parser.step() else {
                        return parserOutOfOrder(now: now, into: &actions)
                    }
                    lastExchange &+= 1
                    dispatch(head, body: [], trailers: trailers, closeAfter: false, inputEnded: inputEnded, into: &actions)
                    return
                }
                // The responder decides before any of the body is read (a caller without a valid
                // token is answered now); no body is invited or reserved until then.
                var request = PendingRequest(head: head)
                request.limit = .max
                pending = request
                lastExchange &+= 1
                phase = .awaitingAdmission(lastExchange, closeAfter: false)
                actions.append(.admit(head))
                return
            case .body(let bytes):
                guard case .readingBody(_, let closeAfter) = phase, pending != nil else {
                    return parserOutOfOrder(now: now, into: &actions)
                }
                // Appended in place (optional chaining mutates the stored value without a copy).
                pending?.body.append(contentsOf: bytes)
                pending?.windowBytes += bytes.count
                phase = .readingBody(lastProgress: time, closeAfter: closeAfter)
                if let request = pending, request.body.count > request.limit {
                    return actions.append(contentsOf: fail(Self.unauthenticatedTooLarge(request.limit), now: now))
                }
                if !reserveAhead(closeAfter: closeAfter, now: now, into: &actions) { return }
            case .end(let trailers):
                guard case .readingBody(_, let closeAfter) = phase, let request = takePending() else {
                    return parserOutOfOrder(now: now, into: &actions)
                }
                dispatch(request.head, body: request.body, trailers: trailers, closeAfter: closeAfter, inputEnded: inputEnded,
                         into: &actions)
                return
            case .error(let error):
                actions.append(contentsOf: fail(error, now: now))
                return
            }
        }
    }

    /// Hands a complete request, the latest exchange, to the application and waits for its response.
    private mutating func dispatch(_ head: consuming HTTPRequestHead, body: consuming [UInt8], trailers: HTTPHeaders,
                                   closeAfter: Bool, inputEnded: Bool, into actions: inout [Action]) {
        var inFlight = InFlight(exchange: lastExchange, version: head.version, isHead: head.method == .head,
                                keepAlive: head.keepAlive && !closeAfter, inputEnded: inputEnded)
        var headers = head.headers
        for trailer in trailers { headers.add(trailer.name, trailer.value) }
        actions.append(.dispatch(HTTPRequest(method: head.method, target: head.target, version: head.version,
                                             headers: headers, body: body)))
        _ = pauseIfBacklogged(&inFlight, into: &actions)
        phase = .awaitingResponse(inFlight)
    }

    /// The parser gives `.head` before any `.body` or `.end`; should that ever break, the request
    /// cannot be framed, so it is refused like any other framing error rather than trapping.
    private mutating func parserOutOfOrder(now: HTTPInstant, into actions: inout [Action]) {
        actions.append(contentsOf: fail(HTTPParseError(status: .badRequest, detail: "Malformed request."), now: now))
    }

    private mutating func fail(_ error: HTTPParseError, now: HTTPInstant) -> [Action] {
        var version = HTTPVersion.http1_1
        var method = HTTPMethod.get
        if let head = pending?.head {
            version = head.version
            method = head.method
        }
        _ = takePending()
        phase = .draining(lingering: true)
        var response = HTTPProblem.response(status: error.status, detail: error.detail)
        if error.status.code == 503 { response.headers.add("Retry-After", "1") }
        var out = HTTPResponseSerializer.head(status: error.status, headers: response.headers,
                                              framing: .contentLength(Self.bodyCount(response)),
                                              keepAlive: false, requestVersion: version, date: now.httpDate)
        if method != .head, case .bytes(let bytes) = response.body { out.append(contentsOf: bytes) }
        return [.serverError(status: error.status, detail: error.detail), .write(out), .close(lingering: true)]
    }

    private static func bodyCount(_ response: HTTPResponse) -> Int {
        if case .bytes(let bytes) = response.body { return bytes.count }
        return 0
    }

    private static func asksToClose(_ headers: HTTPHeaders) -> Bool {
        // Looked up in place: this runs for every response, which rarely has the header at all.
        guard headers.firstIndex(named: "Connection") != nil else { return false }
        for value in headers.values("Connection") {
            for option in value.split(separator: ",") where String(option.trimmingASCIIWhitespace()).asciiCaseInsensitiveEquals("close") {
                return true
            }
        }
        return false
    }

    private static func elapsed(from start: UInt64, to end: UInt64) -> Double {
        end > start ? Double(end - start) / 1_000_000_000 : 0
    }
}
