import Dispatch
import Glibc
import HTTP
import Synchronization

/// One client socket. It drives an `HTTPConnectionStateMachine`, whose phase is the connection's
/// whole lifecycle (each request's admission, response and stream, closing and lingering
/// included), counts its output in an `HTTPConnectionBookkeeping` value, and makes the system
/// calls both ask for. What it keeps itself are resources (the sources, the stream object, the
/// address it is counted under) and how it schedules its turns on the queue.
// @unchecked: all mutable state is only touched on `loop.queue`; other threads reach a
// connection only through `loop.queue.async`.
final class Connection: @unchecked Sendable {
    let fd: Int32
    let info: ConnectionInfo
    let loop: ConnectionQueue
    // Strong: a late responder completion may still reach a closed connection; the cycle ends when the loop drops it.
    private let server: HTTPServer
    private var machine: HTTPConnectionStateMachine
    private var books = HTTPConnectionBookkeeping()
    private let readSource: any DispatchSourceRead
    /// Made the first time output has to wait for the socket, which a small response on a healthy
    /// connection never does: most connections never need one, and each costs memory and a
    /// Dispatch registration to tear down.
    private var writeSource: (any DispatchSourceWrite)?
    /// Sources whose cancellation is still to complete; the descriptor closes when none is left.
    private var pendingCancels = 1

    /// The state machine's actions not yet carried out: the loop's one list (see
    /// `ConnectionQueue.work`), which the machine appends to directly.
    private var work: [HTTPConnectionStateMachine.Action] {
        _read { yield loop.work }
        _modify { yield &loop.work }
    }
    private var running = false
    /// Responses the state machine has heard are written during this turn on the queue.
    private var responsesThisTurn = 0

    /// Pipelined requests one connection has answered per turn on its loop's queue. Past this, the
    /// next one waits behind the events already queued for the loop's other connections: one
    /// client pipelining thousands of cheap requests in one read would otherwise hold the queue,
    /// and every other connection on it, for the whole burst. A client that waits for each
    /// answer (nearly all of them) never reaches it.
    static let responsesPerTurn = 16

    /// A response the responder gave before its `respond` call returned (the loop's one slot:
    /// only the connection inside `respond` on the queue's thread can fill it).
    private var responseReturnedDuringRespond: HTTPResponse? {
        _read { yield loop.responseReturnedDuringRespond }
        _modify { yield &loop.responseReturnedDuringRespond }
    }

    /// The running response stream's object, while the machine's exchange streams.
    private var stream: ServerBodyStream?

    /// The time of the event being handled, read at most once per event, though a request needs
    /// it five times on its way through here (parse, response, written, two in flush).
    /// Every entry point clears it first, so it is never older than the event. Kept on the loop,
    /// which handles one event at a time, like `work`.
    private var eventInstant: HTTPInstant? {
        _read { yield loop.eventInstant }
        _modify { yield &loop.eventInstant }
    }

    /// The address this connection counts against for the per-address cap: the TCP peer, or, from
    /// a trusted proxy, the client its latest request was forwarded for (nil before the first).
    private var countedAddress: String?
    /// From a trusted proxy: every request head is attributed to its forwarded client address.
    private let isProxied: Bool

    init(fd: Int32, info: ConnectionInfo, loop: ConnectionQueue, server: HTTPServer, isProxied: Bool) {
        self.fd = fd
        self.info = info
        self.loop = loop
        self.server = server
        self.isProxied = isProxied
        self.countedAddress = isProxied ? nil : info.remoteAddress
        let configuration = loop.configuration
        self.machine = HTTPConnectionStateMachine(limits: configuration.limits, timeouts: configuration.timeouts,
                                                  bodyBudget: server.bodyBudget, admitsEveryHead: isProxied,
                                                  now: DispatchTime.now().uptimeNanoseconds)
        self.readSource = DispatchSource.makeReadSource(fileDescriptor: fd, queue: loop.queue)
    }

    func start() {
        readSource.setEventHandler { [unowned self] in readable() }
        readSource.setCancelHandler(handler: cancelHandler())
        _ = books.resumeReading()
        readSource.activate()
    }

    /// The descriptor closes only after every source made for it is cancelled, so none watches a reused number.
    private func cancelHandler() -> @Sendable () -> Void {
        let fd = self.fd
        return { [self] in
            pendingCancels -= 1
            if pendingCancels == 0 { close(fd) }
        }
    }

    /// The write source, made (inactive) on first use.
    private func makeWriteSource() -> any DispatchSourceWrite {
        if let writeSource { return writeSource }
        let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: loop.queue)
        source.setEventHandler { [unowned self] in writable() }
        source.setCancelHandler(handler: cancelHandler())
        pendingCancels += 1
        writeSource = source
        return source
    }

    // MARK: Events

    private func readable() {
        beginTurn()
        guard !machine.isClosed else { return }
        let buffer = loop.readBuffer
        let count = recv(fd, buffer.baseAddress, buffer.count, 0)
        if count > 0 {
            // While closing (lingering after an error answer) the machine discards it.
            machine.bytesReceived(UnsafeRawBufferPointer(rebasing: buffer[0 ..< count]), now: now(), into: &work)
            run()
        } else if count == 0 {
            enqueue(machine.peerHalfClosed(now: now()))
            // Nothing more will arrive; keeping the source armed would spin on EOF.
            suspendReading()
            run()
        } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
            closeNow()
        }
    }

    private func writable() {
        beginTurn()
        guard !machine.isClosed else { return }
        run()
    }

    func tick(_ instant: HTTPInstant) {
        beginTurn()
        eventInstant = instant
        guard !machine.isClosed else { return }
        switch books.timerStep(at: instant.uptimeNanoseconds, writeTimeout: loop.configuration.writeTimeout) {
        case .close:
            closeNow()
        case .wait:
            return
        case .checkStateMachine:
            let actions = machine.tick(now: instant)
            // Most ticks find nothing due; skip the work loop for those.
            guard !actions.isEmpty else { return }
            enqueue(actions)
            run()
        }
    }

    /// Shutdown began: the machine closes an idle connection and lets one in progress finish
    /// (told again, it changes nothing).
    func shutdownRequested() {
        beginTurn()
        guard !machine.isClosed else { return }
        enqueue(machine.shutdownRequested(now: now()))
        run()
    }

    // MARK: Work loop

    /// Every event handler starts here: a fresh clock reading and response budget. The loop's
    /// shared action list is empty then (see `ConnectionQueue.work`).
    private func beginTurn() {
        assert(work.isEmpty, "a connection event began while another's actions were pending")
        eventInstant = nil
        responsesThisTurn = 0
    }

    private func enqueue(_ actions: [HTTPConnectionStateMachine.Action]) {
        work.append(contentsOf: actions)
    }

    /// Carries out queued work, then flushes. Iterative, so synchronous responders answering a
    /// long run of pipelined requests never deepen the stack; responses queued in one pass go out
    /// in one `send`.
    private func run() {
        guard !running else { return }
        running = true
        defer { running = false }
        repeat {
            var index = 0
            while !machine.isClosed && index < work.count {
                // Moved out, leaving a payload-free action behind: a copy would retain every
                // field of a dispatched request, and clearing the list would release them again.
                var action = HTTPConnectionStateMachine.Action.resumeReading
                swap(&action, &work[index])
                index += 1
                perform(action)
            }
            work.removeAll(keepingCapacity: true)
            if machine.isClosed { return }
            flush()
        } while !work.isEmpty && !machine.isClosed
    }

    // Inlined (like `dispatch` and `accept`, which it leads to) so a dispatched request is not
    // copied, field by field, out of its action.
    @inline(__always)
    private func perform(_ action: HTTPConnectionStateMachine.Action) {
        switch action {
        case .dispatch(let request):
            // The latest exchange until its response is written, so still the latest now.
            dispatch(request, exchange: machine.lastExchange)
        case .admit(let head):
            admit(head, exchange: machine.lastExchange)
        case .write(let bytes):
            books.queue(bytes)
        case .writeResponse(let bytes, let complete):
            info.disconnect.requestAnswered()
            books.queue(bytes)
            // Written now, unless too much output waits: then once it drains (see `flush`).
            if complete && books.responseQueued() { responseWritten() }
        case .responseComplete:
            if books.responseQueued() { responseWritten() }
        case .startStream(let producer, let chunked, let length, let exchange):
            startStream(producer: producer, chunked: chunked, length: length, exchange: exchange)
        case .pauseReading:
            suspendReading()
        case .resumeReading:
            resumeReading()
        case .close:
            // The flush that follows the work loop reports `outputFlushed` once all is sent.
            break
        case .halfClose:
            // Half-close and read until the peer is done, so it sees the error answer rather than a reset.
            suspendWriting()
            Glibc.shutdown(fd, Int32(SHUT_WR))
            resumeReading()
        case .closeSocket:
            closeNow()
        case .serverError(let status, let detail):
            server.recordServerError(status: status, detail: detail, connectionID: info.id, remoteAddress: info.remoteAddress)
        case .peerGone:
            info.disconnect.fire()
        }
    }

    /// Tells the state machine a response is written, which lets it start on the next pipelined
    /// request; past this turn's budget, that waits for a turn of its own.
    private func responseWritten() {
        guard responsesThisTurn < Self.responsesPerTurn else {
            loop.queue.async { [self] in
                beginTurn()
                guard !machine.isClosed else { return }
                responseWritten()
                run()
            }
            return
        }
        responsesThisTurn += 1
        machine.responseWritten(now: now(), into: &work)
    }

    private func now() -> HTTPInstant {
        if let eventInstant { return eventInstant }
        let instant = loop.now()
        eventInstant = instant
        return instant
    }

    /// `now()`'s monotonic part alone, without copying (and retaining) the instant's date text.
    private func nowNanoseconds() -> UInt64 {
        if let nanoseconds = eventInstant?.uptimeNanoseconds { return nanoseconds }
        return now().uptimeNanoseconds
    }

    @inline(__always)
    private func dispatch(_ request: HTTPRequest, exchange: HTTPConnectionStateMachine.Exchange) {
        // Marks this thread as inside this connection's `respond`, so a completion can tell cheaply
        // whether it runs synchronously (a thread-specific pointer: `DispatchQueue.getSpecific`
        // cost several times as much, on every request).
        let marker = respondingMarker
        pthread_setspecific(Self.respondingKey, UnsafeRawPointer(bitPattern: marker))
        server.responder.respond(to: request, connection: info) { [self] response in
            // Still inside `respond` on this thread: keep it for after `respond` returns (no
            // re-entrancy). Only this thread can be there, so the slot is safe to fill.
            if UInt(bitPattern: pthread_getspecific(Self.respondingKey)) == marker {
                responseReturnedDuringRespond = response
            } else {
                loop.queue.async { self.responseArrived(response, exchange: exchange) }
            }
        }
        pthread_setspecific(Self.respondingKey, nil)
        if let response = responseReturnedDuringRespond {
            responseReturnedDuringRespond = nil
            accept(response, exchange: exchange)
        }
    }

    /// The marker of this connection's `respond` and `admit` calls on the thread that makes them:
    /// its address, and the address with its low bit set, so an answer of one kind given inside
    /// the other kind of call is not mistaken for the answer that call waits for.
    private var respondingMarker: UInt { UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()) }
    private var admittingMarker: UInt { respondingMarker | 1 }

    /// Asks whether a head's body may be read: the per-address cap for a proxied connection,
    /// then the responder. An answer given inside the call is taken at once; otherwise reading
    /// stops until it arrives, so nothing more of the request is buffered meanwhile.
    private func admit(_ head: HTTPRequestHead, exchange: HTTPConnectionStateMachine.Exchange) {
        if isProxied, let proxies = loop.configuration.proxies {
            let client = proxies.clientAddress(info.remoteAddress, head.headers)
            guard server.moveConnection(from: countedAddress, to: client) else {
                let detail = "Too many open connections from this address; close some and retry."
                server.recordServerError(status: .serviceUnavailable, detail: detail, connectionID: info.id, remoteAddress: client)
                machine.admissionDecided(.refuse(HTTPServer.unavailableResponse(detail: detail)), exchange: exchange, now: now(),
                                         into: &work)
                return
            }
            countedAddress = client
        }
        guard head.hasBody else {
            machine.admissionDecided(.admit(authenticated: true), exchange: exchange, now: now(), into: &work)
            return
        }
        let marker = admittingMarker
        pthread_setspecific(Self.respondingKey, UnsafeRawPointer(bitPattern: marker))
        server.responder.admit(head, connection: info) { [self] admission in
            if UInt(bitPattern: pthread_getspecific(Self.respondingKey)) == marker {
                loop.admissionReturnedDuringAdmit = admission
            } else {
                loop.queue.async { self.admissionArrived(admission, exchange: exchange) }
            }
        }
        pthread_setspecific(Self.respondingKey, nil)
        if let admission = loop.admissionReturnedDuringAdmit {
            loop.admissionReturnedDuringAdmit = nil
            machine.admissionDecided(admission, exchange: exchange, now: now(), into: &work)
        } else {
            suspendReading()
        }
    }

    private func admissionArrived(_ admission: HTTPAdmission, exchange: HTTPConnectionStateMachine.Exchange) {
        beginTurn()
        guard !machine.isClosed else { return }
        machine.admissionDecided(admission, exchange: exchange, now: now(), into: &work)
        // Reading stopped for this answer; the machine's own actions (a pause for the body
        // budget) come after. A late answer for an earlier exchange changes nothing.
        if !machine.isAwaitingAdmission { resumeReading() }
        run()
    }

    /// The connection whose `respond` call the current thread is in, if any.
    private static let respondingKey: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed (\(status))")
        return key
    }()

    private func responseArrived(_ response: HTTPResponse, exchange: HTTPConnectionStateMachine.Exchange) {
        beginTurn()
        guard !machine.isClosed else { return }
        accept(response, exchange: exchange)
        run()
    }

    @inline(__always)
    private func accept(_ response: HTTPResponse, exchange: HTTPConnectionStateMachine.Exchange) {
        // Shutdown may have begun while this loop had not heard of it yet: this response then
        // already says `Connection: close` (the machine hears of it once; again changes nothing).
        if server.shutdownStarted.load(ordering: .acquiring) { work.append(contentsOf: machine.shutdownRequested(now: now())) }
        machine.responseReady(response, exchange: exchange, now: now(), into: &work)
    }

    // MARK: Streaming

    private func startStream(producer: @Sendable (any HTTPBodyStream) -> Void, chunked: Bool, length: Int?,
                             exchange: HTTPConnectionStateMachine.Exchange) {
        let stream = ServerBodyStream(exchange: exchange, chunked: chunked, length: length,
                                      maxBacklog: loop.configuration.maxStreamBacklogBytes) { [weak self] in
            guard let self else { return }
            self.loop.queue.async { self.streamHasData(exchange: exchange) }
        }
        self.stream = stream
        books.streamStarted()
        producer(stream)
    }

    private func streamHasData(exchange: HTTPConnectionStateMachine.Exchange) {
        beginTurn()
        // The stream went with the connection, or this is a late drain of an earlier exchange's.
        guard !machine.isClosed, let stream, stream.exchange == exchange else { return }
        let taken = stream.take()
        books.queue(taken.bytes)
        if taken.overflowed || taken.cutShort {
            // The consumer cannot keep up (dropping it bounds memory), or a body of announced
            // length ended early (only closing tells the client): closed on the shell's account,
            // like a failed write.
            closeNow()
            return
        }
        if taken.finished {
            self.stream = nil
            books.streamEnded()
            machine.streamEnded(exchange: exchange, into: &work)
        }
        run()
    }

    // MARK: Output

    private func flush() {
        while let sent = books.sendUnsent({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) {
            if sent > 0 {
                let streamBytes = books.sent(sent, at: nowNanoseconds())
                if streamBytes > 0 { stream?.acknowledge(streamBytes) }
            } else if sent < 0 && errno == EINTR {
                continue
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                closeNow()
                return
            }
        }
        switch books.flushStopped(at: nowNanoseconds()) {
        case .idle:
            suspendWriting()
            // Closing: everything is out; the machine says whether to close or linger (the work
            // loop carries that out next).
            if machine.isDraining {
                machine.outputFlushed(now: now(), into: &work)
                return
            }
        case .waitForWritable:
            resumeWriting()
        }
        if books.takeDrainedResponse() { responseWritten() }
    }

    func closeNow() {
        guard !machine.isClosed else { return }
        machine.connectionClosed()
        work.removeAll()
        // A request still waiting for its answer has nobody to answer any more.
        info.disconnect.fire()
        if let stream {
            self.stream = nil
            stream.closeFromServer()
        }
        readSource.cancel()
        writeSource?.cancel()
        // Cancellation only completes on a running source.
        resumeReading()
        resumeWriting()
        loop.unregister(self)
        server.connectionClosed(countedAddress: countedAddress)
    }

    private func suspendReading() {
        if books.suspendReading() { readSource.suspend() }
    }

    private func resumeReading() {
        if books.resumeReading() { readSource.resume() }
    }

    private func suspendWriting() {
        // Only a resumed source can be suspended, so it exists here.
        if books.suspendWriting() { writeSource?.suspend() }
    }

    private func resumeWriting() {
        // Once closed, a write source never made stays unmade: nothing is left to write or cancel.
        guard writeSource != nil || !machine.isClosed else { return }
        if books.resumeWriting() { makeWriteSource().resume() }
    }
}

/// The `HTTPBodyStream` handed to streaming producers. Writable from any thread; bytes are
/// framed here and moved to the socket by the connection's queue.
final class ServerBodyStream: HTTPBodyStream {
    private struct State {
        var pending: [UInt8] = []
        var unsent = 0
        var closed = false
        var finished = false
        var overflowed = false
        /// Bytes the announced `Content-Length` still expects.
        var remaining: Int?
        var cutShort = false
        var drainScheduled = false
        var closeHandlers: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())
    /// The exchange whose response body this is.
    let exchange: HTTPConnectionStateMachine.Exchange
    private let chunked: Bool
    private let maxBacklog: Int
    private let scheduleDrain: @Sendable () -> Void

    init(exchange: HTTPConnectionStateMachine.Exchange, chunked: Bool, length: Int? = nil, maxBacklog: Int,
         scheduleDrain: @escaping @Sendable () -> Void) {
        self.exchange = exchange
        self.chunked = chunked
        self.maxBacklog = maxBacklog
        self.scheduleDrain = scheduleDrain
        state.withLock { $0.remaining = length }
    }

    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        if bytes.isEmpty { return !isClosed }
        var framed = chunked ? HTTPResponseSerializer.chunk(bytes) : bytes
        let (accepted, schedule, handlers) = state.withLock { state -> (Bool, Bool, [@Sendable () -> Void]) in
            guard !state.closed else { return (false, false, []) }
            if let remaining = state.remaining {
                if framed.count > remaining { framed.removeSubrange(remaining...) }
                state.remaining = remaining - framed.count
            }
            state.unsent += framed.count
            if state.unsent > maxBacklog {
                state.overflowed = true
                state.closed = true
                let handlers = state.closeHandlers
                state.closeHandlers = []
                let schedule = !state.drainScheduled
                state.drainScheduled = true
                return (false, schedule, handlers)
            }
            state.pending.append(contentsOf: framed)
            let schedule = !state.drainScheduled
            state.drainScheduled = true
            return (true, schedule, [])
        }
        if schedule { scheduleDrain() }
        for handler in handlers { handler() }
        return accepted
    }

    func finish() {
        let (schedule, handlers) = state.withLock { state -> (Bool, [@Sendable () -> Void]) in
            guard !state.closed else { return (false, []) }
            state.closed = true
            state.finished = true
            if let remaining = state.remaining, remaining > 0 { state.cutShort = true }
            if chunked { state.pending.append(contentsOf: HTTPResponseSerializer.lastChunk) }
            let handlers = state.closeHandlers
            state.closeHandlers = []
            let schedule = !state.drainScheduled
            state.drainScheduled = true
            return (schedule, handlers)
        }
        if schedule { scheduleDrain() }
        for handler in handlers { handler() }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    var bufferedByteCount: Int { state.withLock { $0.unsent } }

    func onClose(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.closed { return true }
            state.closeHandlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// Moves framed bytes out for the socket (connection queue only).
    func take() -> (bytes: [UInt8], finished: Bool, overflowed: Bool, cutShort: Bool) {
        state.withLock { state in
            let bytes = state.pending
            state.pending = []
            state.drainScheduled = false
            return (bytes, state.finished, state.overflowed, state.cutShort)
        }
    }

    /// The socket accepted `count` of this stream's bytes.
    func acknowledge(_ count: Int) {
        guard count > 0 else { return }
        state.withLock { $0.unsent = max(0, $0.unsent - count) }
    }

    /// The connection went away (peer gone, shutdown deadline, write failure).
    func closeFromServer() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.closed else { return [] }
            state.closed = true
            let handlers = state.closeHandlers
            state.closeHandlers = []
            return handlers
        }
        for handler in handlers { handler() }
    }
}
