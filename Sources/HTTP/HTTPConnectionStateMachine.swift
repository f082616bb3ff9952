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
        /// The head was queued by a preceding `.write`; now run the producer. With `chunked`
        /// false the body is delimited by closing the connection (HTTP/1.0).
        case startStream(producer: @Sendable (any HTTPBodyStream) -> Void, chunked: Bool)
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

    private enum Phase: Sendable {
        /// Between requests, nothing received.
        case idle(since: UInt64)
        /// Part of a head received.
        case readingHead(since: UInt64)
        /// Head complete, body in progress.
        case readingBody(lastProgress: UInt64)
        /// Dispatched; waiting for `responseReady`.
        case awaitingResponse
        /// Response queued or streaming; waiting for `responseWritten`.
        case writingResponse(closeAfter: Bool)
        case closed
    }

    public let timeouts: HTTPTimeouts
    /// Pipelined bytes buffered while a request is in flight before reading is paused.
    public let maxBufferedBytes: Int
    private var parser: HTTPRequestParser
    private var phase: Phase
    private var currentHead: HTTPRequestHead?
    private var currentBody: [UInt8] = []
    private var readingPaused = false
    private var peerClosed = false
    private var shuttingDown = false

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
        guard !isClosed else { return [] }
        parser.append(bytes)
        return afterInput(now: now)
    }

    public mutating func bytesReceived(_ bytes: [UInt8], now: HTTPInstant) -> [Action] {
        guard !isClosed else { return [] }
        parser.append(contentsOf: bytes)
        return afterInput(now: now)
    }

    private mutating func afterInput(now: HTTPInstant) -> [Action] {
        var actions: [Action] = []
        switch phase {
        case .idle, .readingHead, .readingBody:
            parse(now: now, into: &actions)
        case .awaitingResponse, .writingResponse:
            if !readingPaused && parser.bufferedByteCount > maxBufferedBytes {
                readingPaused = true
                actions.append(.pauseReading)
            }
        case .closed:
            break
        }
        return actions
    }

    /// The application's response for the dispatched request.
    public mutating func responseReady(_ response: HTTPResponse, now: HTTPInstant) -> [Action] {
        guard case .awaitingResponse = phase, let head = currentHead else { return [] }
        currentHead = nil
        var keepAlive = head.keepAlive && !shuttingDown && !Self.asksToClose(response.headers)
        let allowsBody = HTTPResponseSerializer.allowsBody(status: response.status, method: head.method)
        var actions: [Action] = []
        switch response.body {
        case .bytes(let bytes):
            let framing: HTTPResponseFraming =
                (response.status.code == 204 || response.status.code == 304) ? .none : .contentLength(bytes.count)
            var out = HTTPResponseSerializer.head(status: response.status, headers: response.headers, framing: framing,
                                                  keepAlive: keepAlive, requestVersion: head.version, date: now.httpDate)
            if allowsBody { out.append(contentsOf: bytes) }
            actions.append(.write(out))
        case .stream(let producer):
            let chunked = head.version == .http1_1
            if !chunked && allowsBody { keepAlive = false }
            let framing: HTTPResponseFraming =
                (response.status.code == 204 || response.status.code == 304) ? .none : (chunked ? .chunked : .untilClose)
            let out = HTTPResponseSerializer.head(status: response.status, headers: response.headers, framing: framing,
                                                  keepAlive: keepAlive, requestVersion: head.version, date: now.httpDate)
            actions.append(.write(out))
            // Bodiless responses never run the producer: there is nowhere for its bytes to go.
            if allowsBody { actions.append(.startStream(producer: producer, chunked: chunked)) }
        }
        phase = .writingResponse(closeAfter: !keepAlive)
        return actions
    }

    /// The response (or stream) has been handed to the socket layer completely.
    public mutating func responseWritten(now: HTTPInstant) -> [Action] {
        guard case .writingResponse(let closeAfter) = phase else { return [] }
        if closeAfter {
            phase = .closed
            return [.close(lingering: false)]
        }
        phase = .idle(since: now.uptimeNanoseconds)
        var actions: [Action] = []
        if readingPaused {
            readingPaused = false
            actions.append(.resumeReading)
        }
        if shuttingDown && parser.isIdle {
            phase = .closed
            actions.append(.close(lingering: false))
            return actions
        }
        parse(now: now, into: &actions)
        return actions
    }

    /// The peer will send nothing more (read returned 0).
    public mutating func peerHalfClosed(now: HTTPInstant) -> [Action] {
        peerClosed = true
        switch phase {
        case .idle, .readingHead, .readingBody:
            // An unfinished request can never complete now.
            phase = .closed
            return [.close(lingering: false)]
        case .awaitingResponse:
            return [.peerGone]
        case .writingResponse, .closed:
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
        case .readingBody(let lastProgress):
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
        shuttingDown = true
        switch phase {
        case .idle, .readingHead:
            phase = .closed
            return [.close(lingering: false)]
        case .readingBody, .awaitingResponse, .closed:
            return []
        case .writingResponse:
            // The head may already say keep-alive; close once this response is out.
            phase = .writingResponse(closeAfter: true)
            return []
        }
    }

    private mutating func parse(now: HTTPInstant, into actions: inout [Action]) {
        let time = now.uptimeNanoseconds
        while true {
            switch phase {
            case .idle:
                if parser.bufferedByteCount == 0 {
                    if peerClosed {
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
            guard let event = parser.next() else { return }
            switch event {
            case .head(let head):
                currentHead = head
                currentBody = []
                // Reserve up front, but never trust a declared length with more than 64 KiB before bytes arrive.
                if case .contentLength(let length) = head.framing { currentBody.reserveCapacity(min(length, 64 * 1024)) }
                // Only invite the body if the client is actually waiting for the invitation.
                if head.expectsContinue && head.hasBody && parser.bufferedByteCount == 0 {
                    actions.append(.write(HTTPResponseSerializer.continueResponse))
                }
                phase = .readingBody(lastProgress: time)
            case .body(let bytes):
                currentBody.append(contentsOf: bytes)
                phase = .readingBody(lastProgress: time)
            case .end(let trailers):
                guard let head = currentHead else { return }
                var headers = head.headers
                for trailer in trailers { headers.add(trailer.name, trailer.value) }
                let request = HTTPRequest(method: head.method, target: head.target, version: head.version,
                                          headers: headers, body: currentBody)
                currentBody = []
                phase = .awaitingResponse
                actions.append(.dispatch(request))
                if !readingPaused && parser.bufferedByteCount > maxBufferedBytes {
                    readingPaused = true
                    actions.append(.pauseReading)
                }
                return
            case .error(let error):
                actions.append(contentsOf: fail(error, now: now))
                return
            }
        }
    }

    private mutating func fail(_ error: HTTPParseError, now: HTTPInstant) -> [Action] {
        let version = currentHead?.version ?? .http1_1
        let method = currentHead?.method ?? .get
        currentHead = nil
        currentBody = []
        phase = .closed
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
