// The life of one HTTP/1.1 connection as a pure state machine: the socket shell feeds it events
// and carries out the actions it returns. Keep-alive, pipelining, 100-continue and timeouts are
// therefore testable without sockets.

/// Connection timeouts in seconds.
public struct HTTPTimeouts: Sendable, Equatable {
    /// How long a keep-alive connection may sit between requests.
    public var idle: Double
    /// How long a client may take to send a complete request head, counted from its first byte.
    public var header: Double
    /// How long a request body may go without progress.
    public var body: Double

    public init(idle: Double = 60, header: Double = 10, body: Double = 30) {
        self.idle = idle
        self.header = header
        self.body = body
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
    public enum Action: Sendable {
        /// Hand a complete request to the application. No other request is dispatched until
        /// `responseWritten` for this one.
        case dispatch(HTTPRequest)
        /// Queue bytes for the socket, in order.
        case write([UInt8])
        /// The head was queued by a preceding `.write`; now run the producer. With `length` the body
        /// has that `Content-Length`; otherwise with `chunked` false it is delimited by closing the
        /// connection (HTTP/1.0).
        case startStream(producer: @Sendable (any HTTPBodyStream) -> Void, chunked: Bool, length: Int?)
        case pauseReading
        case resumeReading
        /// Close once queued output is flushed. `lingering`: an error response was sent while the
        /// peer may still be sending; half-close and drain briefly so the peer sees the response
        /// instead of a reset.
        case close(lingering: Bool)
        /// The server answered on its own (parse error, timeout): for statistics and access logs.
        case serverError(status: HTTPStatus, detail: String)
        /// The client sent end of input while its request waits for an answer. The answer is still
        /// written (a half-closed client reads it), but a responder holding the request open (a
        /// long-poll) should answer now rather than at its deadline.
        case peerGone
    }

    /// One dispatched request, from `.dispatch` until its response is written: what the response
    /// head and the next step need, and the input side's state meanwhile.
    private struct Exchange: Sendable {
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
    }

    // Everything that varies per request lives in the phase's payload, so no field can be stale
    // in a phase it does not belong to; only the head and body of a request whose body is still
    // arriving live beside it, in `bodyInProgress`. The payloads are plain values: the phase is
    // read and replaced several times a request, and a payload with references would be copied
    // and destroyed through the runtime's value witnesses each time.
    private enum Phase: Sendable {
        /// Between requests, nothing received.
        case idle(since: UInt64)
        /// Part of a head received.
        case readingHead(since: UInt64)
        /// Head complete, body in progress. `closeAfter`: shutdown began; answer this request, then close.
        case readingBody(lastProgress: UInt64, closeAfter: Bool)
        /// Dispatched; waiting for `responseReady`.
        case awaitingResponse(Exchange)
        /// Response queued or streaming; waiting for `responseWritten`.
        case writingResponse(Exchange, closeAfter: Bool)
        case closed
    }

    public let timeouts: HTTPTimeouts
    /// Pipelined bytes buffered while a request is in flight before reading is paused.
    public let maxBufferedBytes: Int
    private var parser: HTTPRequestParser
    private var phase: Phase
    /// The head and the body so far while the phase is `.readingBody`; nil otherwise.
    private var bodyInProgress: (head: HTTPRequestHead, body: [UInt8])?

    public init(limits: HTTPLimits = .default, timeouts: HTTPTimeouts = HTTPTimeouts(),
                maxBufferedBytes: Int = 64 * 1024, now: UInt64) {
        self.parser = HTTPRequestParser(limits: limits)
        self.timeouts = timeouts
        self.maxBufferedBytes = maxBufferedBytes
        self.phase = .idle(since: now)
    }

    public var isClosed: Bool {
        if case .closed = phase { return true } else { return false }
    }

    /// True while a request is dispatched or its response is being written.
    public var hasRequestInFlight: Bool {
        switch phase {
        case .awaitingResponse, .writingResponse: return true
        default: return false
        }
    }

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
        guard !isClosed else { return }
        parser.append(bytes)
        switch phase {
        case .idle, .readingHead, .readingBody:
            parse(now: now, inputEnded: false, into: &actions)
        case .awaitingResponse(var exchange):
            if pauseIfBacklogged(&exchange, into: &actions) { phase = .awaitingResponse(exchange) }
        case .writingResponse(var exchange, let closeAfter):
            if pauseIfBacklogged(&exchange, into: &actions) { phase = .writingResponse(exchange, closeAfter: closeAfter) }
        case .closed:
            break
        }
    }

    /// Pauses reading when too many pipelined bytes wait behind the request in flight.
    private func pauseIfBacklogged(_ exchange: inout Exchange, into actions: inout [Action]) -> Bool {
        guard !exchange.readingPaused && parser.bufferedByteCount > maxBufferedBytes else { return false }
        exchange.readingPaused = true
        actions.append(.pauseReading)
        return true
    }

    /// The application's response for the dispatched request.
    public mutating func responseReady(_ response: HTTPResponse, now: HTTPInstant) -> [Action] {
        var actions: [Action] = []
        responseReady(response, now: now, into: &actions)
        return actions
    }

    /// Like `responseReady(_:now:)`, appending to the caller's (reused) action list. Only legal
    /// while a request is dispatched; the socket shell guarantees that with its response
    /// generations, so anything else is a bug (asserted; ignored in release builds).
    public mutating func responseReady(_ response: HTTPResponse, now: HTTPInstant, into actions: inout [Action]) {
        guard case .awaitingResponse(var exchange) = phase else {
            assert(isClosed, "responseReady without a dispatched request")
            return
        }
        if exchange.keepAlive && Self.asksToClose(response.headers) { exchange.keepAlive = false }
        let allowsBody = !exchange.isHead && HTTPResponseSerializer.allowsBody(status: response.status)
        let bodiless = response.status.code == 204 || response.status.code == 304
        switch response.body {
        case .bytes(let bytes):
            var out = HTTPResponseSerializer.head(status: response.status, headers: response.headers,
                                                  framing: bodiless ? .none : .contentLength(bytes.count),
                                                  keepAlive: exchange.keepAlive, requestVersion: exchange.version,
                                                  date: now.httpDate, reservingBody: allowsBody ? bytes.count : 0)
            if allowsBody { out.append(contentsOf: bytes) }
            actions.append(.write(out))
        case .stream(let producer):
            let chunked = exchange.version == .http1_1
            if !chunked && allowsBody { exchange.keepAlive = false }
            let out = HTTPResponseSerializer.head(status: response.status, headers: response.headers,
                                                  framing: bodiless ? .none : (chunked ? .chunked : .untilClose),
                                                  keepAlive: exchange.keepAlive, requestVersion: exchange.version, date: now.httpDate)
            actions.append(.write(out))
            // Bodiless responses never run the producer: there is nowhere for its bytes to go.
            if allowsBody { actions.append(.startStream(producer: producer, chunked: chunked, length: nil)) }
        case .sizedStream(let length, let producer):
            let out = HTTPResponseSerializer.head(status: response.status, headers: response.headers,
                                                  framing: bodiless ? .none : .contentLength(length),
                                                  keepAlive: exchange.keepAlive, requestVersion: exchange.version, date: now.httpDate)
            actions.append(.write(out))
            if allowsBody && length > 0 { actions.append(.startStream(producer: producer, chunked: false, length: length)) }
        }
        phase = .writingResponse(exchange, closeAfter: !exchange.keepAlive)
    }

    /// The response (or stream) has been handed to the socket layer completely.
    public mutating func responseWritten(now: HTTPInstant) -> [Action] {
        var actions: [Action] = []
        responseWritten(now: now, into: &actions)
        return actions
    }

    /// Like `responseWritten(now:)`, appending to the caller's (reused) action list. Only legal
    /// while a response is being written (asserted; ignored in release builds).
    public mutating func responseWritten(now: HTTPInstant, into actions: inout [Action]) {
        guard case .writingResponse(let exchange, let closeAfter) = phase else {
            assert(isClosed, "responseWritten without a response being written")
            return
        }
        if closeAfter {
            phase = .closed
            actions.append(.close(lingering: false))
            return
        }
        phase = .idle(since: now.uptimeNanoseconds)
        if exchange.readingPaused { actions.append(.resumeReading) }
        parse(now: now, inputEnded: exchange.inputEnded, into: &actions)
    }

    /// The peer will send nothing more (read returned 0).
    public mutating func peerHalfClosed(now: HTTPInstant) -> [Action] {
        switch phase {
        case .idle, .readingHead, .readingBody:
            // An unfinished request can never complete now.
            phase = .closed
            bodyInProgress = nil
            return [.close(lingering: false)]
        case .awaitingResponse(var exchange):
            guard !exchange.inputEnded else { return [] }
            exchange.inputEnded = true
            phase = .awaitingResponse(exchange)
            return [.peerGone]
        case .writingResponse(var exchange, let closeAfter):
            exchange.inputEnded = true
            phase = .writingResponse(exchange, closeAfter: closeAfter)
            return []
        case .closed:
            return []
        }
    }

    /// Periodic check; returns what an expired timeout requires.
    public mutating func tick(now: HTTPInstant) -> [Action] {
        let time = now.uptimeNanoseconds
        switch phase {
        case .idle(let since):
            if Self.elapsed(from: since, to: time) >= timeouts.idle {
                phase = .closed
                return [.close(lingering: false)]
            }
        case .readingHead(let since):
            if Self.elapsed(from: since, to: time) >= timeouts.header {
                return fail(HTTPParseError(status: .requestTimeout, detail: "The request head was not received in time."), now: now)
            }
        case .readingBody(let lastProgress, _):
            if Self.elapsed(from: lastProgress, to: time) >= timeouts.body {
                return fail(HTTPParseError(status: .requestTimeout, detail: "The request body was not received in time."), now: now)
            }
        case .awaitingResponse, .writingResponse, .closed:
            break
        }
        return []
    }

    /// Graceful shutdown: idle connections close now, a request in progress finishes with `Connection: close`.
    public mutating func shutdownRequested(now: HTTPInstant) -> [Action] {
        switch phase {
        case .idle, .readingHead:
            phase = .closed
            return [.close(lingering: false)]
        case .readingBody(let lastProgress, _):
            phase = .readingBody(lastProgress: lastProgress, closeAfter: true)
        case .awaitingResponse(var exchange):
            exchange.keepAlive = false
            phase = .awaitingResponse(exchange)
        case .writingResponse(let exchange, _):
            // The head may already say keep-alive; close once this response is out.
            phase = .writingResponse(exchange, closeAfter: true)
        case .closed:
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
                    if inputEnded {
                        phase = .closed
                        actions.append(.close(lingering: false))
                    }
                    return
                }
                phase = .readingHead(since: time)
            case .readingHead, .readingBody:
                break
            case .awaitingResponse, .writingResponse, .closed:
                return
            }
            switch parser.step() {
            case .needMore:
                if inputEnded {
                    phase = .closed
                    actions.append(.close(lingering: false))
                }
                return
            case .head(let head):
                if !head.hasBody {
                    // Complete with its head (the parser's next event is its end): dispatched from
                    // here, the head never round-trips through the phase, whose every copy retains
                    // and releases its fields.
                    guard case .end(let trailers) = parser.step() else {
                        return parserOutOfOrder(now: now, into: &actions)
                    }
                    dispatch(head, body: [], trailers: trailers, closeAfter: false, inputEnded: inputEnded, into: &actions)
                    return
                }
                var body: [UInt8] = []
                // Reserve up front, but never trust a declared length with more than 64 KiB before bytes arrive.
                if case .contentLength(let length) = head.framing, length > 0 { body.reserveCapacity(min(length, 64 * 1024)) }
                // Only invite the body if the client is actually waiting for the invitation.
                if head.expectsContinue && head.hasBody && parser.bufferedByteCount == 0 {
                    actions.append(.write(HTTPResponseSerializer.continueResponse))
                }
                bodyInProgress = (head: head, body: body)
                phase = .readingBody(lastProgress: time, closeAfter: false)
            case .body(let bytes):
                guard case .readingBody(_, let closeAfter) = phase, bodyInProgress != nil else {
                    return parserOutOfOrder(now: now, into: &actions)
                }
                // Appended in place (optional chaining mutates the stored value without a copy).
                bodyInProgress?.body.append(contentsOf: bytes)
                phase = .readingBody(lastProgress: time, closeAfter: closeAfter)
            case .end(let trailers):
                guard case .readingBody(_, let closeAfter) = phase, let request = bodyInProgress.take() else {
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

    /// Hands a complete request to the application and waits for its response.
    private mutating func dispatch(_ head: consuming HTTPRequestHead, body: consuming [UInt8], trailers: HTTPHeaders,
                                   closeAfter: Bool, inputEnded: Bool, into actions: inout [Action]) {
        var exchange = Exchange(version: head.version, isHead: head.method == .head, keepAlive: head.keepAlive && !closeAfter,
                                inputEnded: inputEnded)
        var headers = head.headers
        for trailer in trailers { headers.add(trailer.name, trailer.value) }
        actions.append(.dispatch(HTTPRequest(method: head.method, target: head.target, version: head.version,
                                             headers: headers, body: body)))
        _ = pauseIfBacklogged(&exchange, into: &actions)
        phase = .awaitingResponse(exchange)
    }

    /// The parser gives `.head` before any `.body` or `.end`; should that ever break, the request
    /// cannot be framed, so it is refused like any other framing error rather than trapping.
    private mutating func parserOutOfOrder(now: HTTPInstant, into actions: inout [Action]) {
        assertionFailure("the parser gave a body or end event before a head")
        actions.append(contentsOf: fail(HTTPParseError(status: .badRequest, detail: "Malformed request."), now: now))
    }

    private mutating func fail(_ error: HTTPParseError, now: HTTPInstant) -> [Action] {
        var version = HTTPVersion.http1_1
        var method = HTTPMethod.get
        if case .readingBody = phase, let head = bodyInProgress?.head {
            version = head.version
            method = head.method
        }
        phase = .closed
        bodyInProgress = nil
        let response = HTTPProblem.response(status: error.status, detail: error.detail)
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
