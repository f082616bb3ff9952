import Dispatch
import HTTP
import HealthModel
import HealthStore
import JSON
import Synchronization

/// Who reads the change feed and how: the app (its user and read permissions), the types (nil =
/// all it can see), the page size, and the fingerprint its anchors are bound to.
struct ChangeSubscriber: Sendable {
    static let anchorKind: UInt8 = 2

    let app: AppAuthorization
    let types: Set<String>?
    let limit: Int
    let secret: [UInt8]
    /// The request's error renderer: a store failure while parked or streaming is logged under
    /// the request's id like any other.
    let problems: ProblemResponder
    /// When the request began: an authorization that ended (was revoked or changed) after this
    /// ends the request; one that ended before it does not (the request read its access anew).
    var began = DispatchTime.now()

    /// True when the subscriber's authorization ended after the request began (`ended` holds
    /// when each ended authorization did).
    func endedSince(_ ended: [String: DispatchTime]) -> Bool { ended[app.id].map { began <= $0 } ?? false }

    /// Anchors are bound to the user and to the (sorted) types list: an anchor only resumes the
    /// feed that made it, since another list would have skipped different rows.
    var fingerprint: Int64 {
        SignedToken.fingerprint(["changes", app.userID, types.map { $0.sorted().joined(separator: ",") } ?? "*"])
    }

    func anchor(for position: ChangePosition) -> String {
        SignedToken.encode(kind: Self.anchorKind, fields: [position.seq, position.tombstoneFloor, fingerprint], secret: secret)
    }

    /// The position an anchor names, or a 400 naming `field` when it is forged, altered, or
    /// another user's (or another types list's).
    func position(fromAnchor text: String, field: String) throws(APIError) -> ChangePosition {
        guard let fields = SignedToken.decode(text, kind: Self.anchorKind, fieldCount: 3, secret: secret),
              fields[2] == fingerprint, fields[0] >= 0, fields[1] >= 0 else {
            throw APIError.invalidField(field, "is not an anchor of this user and types list (forged, altered, or from another feed)")
        }
        return ChangePosition(seq: fields[0], tombstoneFloor: fields[1])
    }

    /// Whether a commit touching `typeIDs` may concern this reader (privacy is applied on reading).
    func isInterested(in typeIDs: Set<String>) -> Bool {
        guard let types else { return true }
        return !types.isDisjoint(with: typeIDs)
    }

    func read(after position: ChangePosition?, data: HealthData) throws(APIError) -> ChangePage {
        do {
            return try data.app(app).changes(ChangeRequest(types: types, after: position, limit: limit))
        } catch ChangeFeedError.anchorExpired {
            throw ChangeFeed.anchorExpired
        } catch {
            throw APIError(storeError: error)
        }
    }

    /// `{"added","deleted","anchor","more"}`, the body of `/v1/changes` and of each stream event.
    func body(_ page: ChangePage) -> [UInt8] {
        var writer = JSONWriter(capacity: 256 + page.added.count * 320)
        writer.beginObject()
        writer.key("added")
        writer.beginArray()
        for sample in page.added { SampleCodec.write(sample, into: &writer) }
        writer.endArray()
        writer.key("deleted")
        writer.beginArray()
        for deleted in page.deleted {
            writer.beginObject()
            writer.field("uuid", deleted.uuid.lowercasedString)
            writer.field("type", deleted.type)
            writer.endObject()
        }
        writer.endArray()
        writer.field("anchor", anchor(for: page.next))
        writer.field("more", page.more)
        writer.endObject()
        return writer.bytes
    }

    func response(_ page: ChangePage) -> HTTPResponse { JSONResponse.ok(body(page)) }
}

/// Wakes long-polls and feeds event streams when the store commits, without a thread per reader:
/// parked long-polls are entries in a table, woken by the store's commit observer or by a
/// Dispatch deadline; streams are written by the worker pool when something relevant commits or
/// the store has a stream event (a workout zone change) for their user. Every event kind takes the
/// same path: the observer only says which user has news, and the stream reads it from the store,
/// which applies the app's `AccessPolicy`.
public final class ChangeFeed: Sendable {
    static let anchorExpired = APIError(
        status: .gone, code: "errorAnchorExpired",
        detail: "the anchor is older than the retained deletion history; start over without an anchor")

    let data: HealthData
    let workers: DispatchQueue
    /// A stream whose unsent backlog exceeds this is cut off (after a final `event: error`).
    let streamBacklogLimit: Int
    let keepAliveSeconds: Int
    let retentionDays: Int
    /// Where background failures (a purge, a zone judgement) are reported: no request is there
    /// to carry them.
    let log: AccessLog?
    private let state = Mutex(State())

    private struct State {
        /// The highest seq committed per user, as the observer saw it: a long-poll whose read
        /// predates it reads again instead of sleeping through a change it did not see.
        var latestSeq: [Int64: Int64] = [:]
        var waiters: [Int64: [UInt64: LongPoll]] = [:]
        var streams: [Int64: [UInt64: ChangeStream]] = [:]
        var nextID: UInt64 = 0
        var shuttingDown = false
        var keepAliveTimer: (any DispatchSourceTimer)?
        var retentionTimer: (any DispatchSourceTimer)?
        var accessTimer: (any DispatchSourceTimer)?
        /// Authorizations revoked or changed lately (id -> when, monotonic): a poll being read or a
        /// stream being opened at that moment ends rather than answer under the old permissions.
        var ended: [String: DispatchTime] = [:]
    }

    struct LongPoll: Sendable {
        /// Its key among the user's waiters, the same each time it parks again.
        var id: UInt64
        var subscriber: ChangeSubscriber
        var position: ChangePosition
        var deadline: DispatchTime
        var respond: @Sendable (HTTPResponse) -> Void
    }

    init(data: HealthData, workers: DispatchQueue, streamBacklogLimit: Int, keepAliveSeconds: Int = 10, retentionDays: Int,
         log: AccessLog? = nil) {
        self.data = data
        self.log = log
        self.workers = workers
        self.streamBacklogLimit = streamBacklogLimit
        self.keepAliveSeconds = keepAliveSeconds
        self.retentionDays = retentionDays
        data.addCommitObserver { [weak self] change in self?.committed(change) }
        data.streamEventLog.addObserver { [weak self] user in self?.streamEventArrived(userRowID: user) }
        data.addAuthorizationObserver { [weak self] id in self?.authorizationEnded(id) }
        startRetention()
    }

    deinit {
        state.withLock { state in
            state.keepAliveTimer?.cancel()
            state.retentionTimer?.cancel()
            state.accessTimer?.cancel()
        }
    }

    /// Counts for tests, benchmarks and metrics.
    public var parkedCount: Int { state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } } }
    public var streamCount: Int { state.withLock { $0.streams.values.reduce(0) { $0 + $1.count } } }

    // MARK: Long-poll

    /// Answers at once when there is something to say (or `wait` is 0); otherwise parks the
    /// request until a relevant commit or `wait` seconds, whichever comes first.
    /// A client that goes away (`disconnect`) ends the wait: its poll is answered at once instead
    /// of holding a waiter until the deadline (a half-closed client still reads that answer).
    func longPoll(_ subscriber: ChangeSubscriber, after position: ChangePosition?, wait: Int,
                  disconnect: DisconnectSignal? = nil,
                  respond: @escaping @Sendable (HTTPResponse) -> Void) throws(APIError) {
        let page = try subscriber.read(after: position, data: data)
        try requireLive(subscriber)
        if !page.isEmpty || page.more || wait == 0 {
            respond(subscriber.response(page))
            return
        }
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        let user = subscriber.app.userRowID
        park(LongPoll(id: id, subscriber: subscriber, position: page.next, deadline: .now() + .seconds(wait), respond: respond),
             seenSeq: page.next.seq)
        // Registered after parking, so a client already gone finds the waiter to end. A poll being
        // re-read at that moment is not parked and runs to its next wake or deadline.
        disconnect?.onDisconnect { [weak self] in
            guard let feed = self else { return }
            feed.workers.async { feed.expire(user: user, id: id) }
        }
    }

    private enum ParkOutcome { case parked, readAgain, answerNow }

    private func park(_ poll: LongPoll, seenSeq: Int64) {
        let user = poll.subscriber.app.userRowID
        let outcome = state.withLock { state -> ParkOutcome in
            if state.shuttingDown || poll.subscriber.endedSince(state.ended) { return .answerNow }
            if let latest = state.latestSeq[user], latest > seenSeq { return .readAgain }
            state.waiters[user, default: [:]][poll.id] = poll
            if state.accessTimer == nil { state.accessTimer = makeAccessTimer() }
            return .parked
        }
        switch outcome {
        case .parked:
            let id = poll.id
            workers.asyncAfter(deadline: poll.deadline) { [weak self] in self?.expire(user: user, id: id) }
        case .readAgain:
            workers.async { [self] in wake(poll) }
        case .answerNow:
            workers.async { [self] in answer(poll) }
        }
    }

    /// A relevant commit: read again; answer if the app can see something, else keep waiting.
    private func wake(_ poll: LongPoll) {
        do throws(APIError) {
            let page = try poll.subscriber.read(after: poll.position, data: data)
            try requireLive(poll.subscriber)
            if !page.isEmpty || page.more || DispatchTime.now() >= poll.deadline {
                poll.respond(poll.subscriber.response(page))
            } else {
                var next = poll
                next.position = page.next
                park(next, seenSeq: page.next.seq)
            }
        } catch {
            poll.respond(poll.subscriber.problems.response(error))
        }
    }

    private func expire(user: Int64, id: UInt64) {
        let poll = state.withLock { state -> LongPoll? in
            guard let poll = state.waiters[user]?.removeValue(forKey: id) else { return nil }
            if state.waiters[user]?.isEmpty == true { state.waiters[user] = nil }
            return poll
        }
        if let poll { answer(poll) }
    }

    /// Answers with whatever is there now (usually nothing, with the anchor moved to the present).
    private func answer(_ poll: LongPoll) {
        do throws(APIError) {
            let page = try poll.subscriber.read(after: poll.position, data: data)
            try requireLive(poll.subscriber)
            poll.respond(poll.subscriber.response(page))
        } catch {
            poll.respond(poll.subscriber.problems.response(error))
        }
    }

    // MARK: Commits

    private func committed(_ change: CommittedChange) {
        let user = change.userRowID
        let (woken, streams) = state.withLock { state -> ([LongPoll], [ChangeStream]) in
            state.latestSeq[user] = max(state.latestSeq[user] ?? 0, change.lastSeq)
            var woken: [LongPoll] = []
            if var waiting = state.waiters[user] {
                for (id, poll) in waiting where poll.subscriber.isInterested(in: change.typeIDs) {
                    woken.append(poll)
                    waiting[id] = nil
                }
                state.waiters[user] = waiting.isEmpty ? nil : waiting
            }
            let streams = (state.streams[user] ?? [:]).values.filter { $0.subscriber.isInterested(in: change.typeIDs) }
            return (woken, Array(streams))
        }
        // The observer runs on the committing request's thread: hand the reads to the pool.
        for poll in woken { workers.async { [self] in wake(poll) } }
        for stream in streams { stream.scheduleDelivery() }
    }

    // MARK: Streams

    /// Starts feeding `output` from `position`; `announce` first sends an empty event carrying the
    /// starting anchor, so a client that connected without one has an id to resume from.
    func openStream(_ subscriber: ChangeSubscriber, from position: ChangePosition, announce: Bool, output: any HTTPBodyStream) {
        let stream = ChangeStream(subscriber: subscriber, position: position, eventPosition: data.streamEventLog.current,
                                  output: output, feed: self)
        if announce {
            _ = stream.send(ChangeStream.event(subscriber, ChangePage(added: [], deleted: [], next: position, more: false)))
        }
        let id = state.withLock { state -> UInt64? in
            guard !state.shuttingDown, !subscriber.endedSince(state.ended) else { return nil }
            state.nextID &+= 1
            state.streams[subscriber.app.userRowID, default: [:]][state.nextID] = stream
            if state.keepAliveTimer == nil { state.keepAliveTimer = makeKeepAliveTimer() }
            if state.accessTimer == nil { state.accessTimer = makeAccessTimer() }
            return state.nextID
        }
        guard let id else {
            output.finish()
            return
        }
        output.onClose { [weak self] in self?.removeStream(user: subscriber.app.userRowID, id: id) }
        // Catches commits between the handler's read of the position and the registration.
        stream.scheduleDelivery()
    }

    /// A stream event for the user: each of the user's streams reads it (the store leaves out what
    /// its app may not see), after every change committed before it, so an event never overtakes
    /// the change that caused it.
    private func streamEventArrived(userRowID: Int64) {
        let streams = state.withLock { state in (state.streams[userRowID] ?? [:]).values }
        for stream in streams { stream.scheduleDelivery() }
    }

    private func removeStream(user: Int64, id: UInt64) {
        state.withLock { state in
            state.streams[user]?[id] = nil
            if state.streams[user]?.isEmpty == true { state.streams[user] = nil }
        }
    }

    private func makeKeepAliveTimer() -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: workers)
        let interval = DispatchTimeInterval.seconds(keepAliveSeconds)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
        timer.setEventHandler { [weak self] in self?.sendKeepAlives() }
        timer.resume()
        return timer
    }

    /// A comment line on every open stream, so proxies and clients see the connection is alive.
    func sendKeepAlives() {
        let streams = state.withLock { $0.streams.values.flatMap(\.values) }
        for stream in streams { _ = stream.send(ChangeStream.keepAlive) }
    }

    // MARK: Revocation

    /// How often open streams and parked polls are checked against the database: revocations and
    /// narrowed permissions that no notification announced (another node's, a lost NOTIFY) still
    /// end them within a second.
    static let accessCheckInterval = DispatchTimeInterval.milliseconds(400)
    /// How long an ended authorization is remembered for requests in flight at that moment.
    static let endedMemory = DispatchTimeInterval.seconds(60)

    static let revoked = APIError.authenticationRequired("the token was revoked or its permissions changed")
    static let revokedEvent = Array(
        "event: error\ndata: {\"code\":\"errorAuthenticationRequired\",\"detail\":\"the token was revoked or its permissions changed\"}\n\n".utf8)

    /// An authorization was revoked or changed: its streams end now (after a final `event: error`),
    /// its parked long-polls are answered 401, and requests of it in flight end the same way.
    func authorizationEnded(_ id: String) {
        let (polls, streams) = state.withLock { state -> ([LongPoll], [ChangeStream]) in
            let now = DispatchTime.now()
            state.ended = state.ended.filter { now < $0.value + Self.endedMemory }
            state.ended[id] = now
            var polls: [LongPoll] = []
            for (user, waiting) in state.waiters {
                let ending = waiting.filter { $0.value.subscriber.app.id == id }
                guard !ending.isEmpty else { continue }
                polls += ending.values
                let remaining = waiting.filter { $0.value.subscriber.app.id != id }
                state.waiters[user] = remaining.isEmpty ? nil : remaining
            }
            let streams = state.streams.values.flatMap(\.values).filter { $0.subscriber.app.id == id }
            return (polls, streams)
        }
        for stream in streams { stream.revoke(Self.revokedEvent) }
        for poll in polls { workers.async { poll.respond(poll.subscriber.problems.response(Self.revoked)) } }
    }

    /// Throws the 401 when the subscriber's authorization ended while its request was in flight.
    private func requireLive(_ subscriber: ChangeSubscriber) throws(APIError) {
        if state.withLock({ subscriber.endedSince($0.ended) }) { throw Self.revoked }
    }

    private func makeAccessTimer() -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: workers)
        timer.schedule(deadline: .now() + Self.accessCheckInterval, repeating: Self.accessCheckInterval,
                       leeway: .milliseconds(50))
        timer.setEventHandler { [weak self] in self?.checkAccess() }
        timer.resume()
        return timer
    }

    /// Compares every open stream's and parked poll's authorization with the database's: one read
    /// for all of them. A missing (revoked) or different (narrowed) one ends as `authorizationEnded`.
    func checkAccess() {
        let inFlight = state.withLock { state -> [String: AppAuthorization] in
            var apps: [String: AppAuthorization] = [:]
            for stream in state.streams.values.flatMap(\.values) { apps[stream.subscriber.app.id] = stream.subscriber.app }
            for poll in state.waiters.values.flatMap(\.values) { apps[poll.subscriber.app.id] = poll.subscriber.app }
            if apps.isEmpty {
                state.accessTimer?.cancel()
                state.accessTimer = nil
            }
            return apps
        }
        guard !inFlight.isEmpty else { return }
        let live: [String: AppAuthorization]
        do {
            live = try data.liveAuthorizations(ids: Set(inFlight.keys))
        } catch {
            log?.event("checking the authorizations of open streams failed; retrying", level: "warning",
                       fields: [("error", String(describing: error))])
            return
        }
        for (id, authorization) in inFlight where live[id] != authorization { authorizationEnded(id) }
    }

    // MARK: Retention

    /// Purges expired tombstones at startup and hourly.
    private func startRetention() {
        state.withLock { state in
            let timer = DispatchSource.makeTimerSource(queue: workers)
            timer.schedule(deadline: .now(), repeating: .seconds(3600), leeway: .seconds(60))
            timer.setEventHandler { [weak self] in self?.purgeExpiredTombstones() }
            timer.resume()
            state.retentionTimer = timer
        }
    }

    /// A failed purge is logged and tried again at the next hour: tombstones only stay longer
    /// (anchors expire later), nothing is lost or answered wrongly.
    func purgeExpiredTombstones() {
        do {
            _ = try data.purgeTombstones(retentionDays: retentionDays)
        } catch {
            log?.event("tombstone purge failed; retrying in an hour", level: "warning", fields: [("error", String(describing: error))])
        }
    }

    // MARK: Shutdown

    /// Answers every parked long-poll now and ends every stream, so a graceful stop does not wait
    /// for them; later requests are answered without waiting.
    public func shutdown() {
        let (polls, streams) = state.withLock { state -> ([LongPoll], [ChangeStream]) in
            state.shuttingDown = true
            state.keepAliveTimer?.cancel()
            state.keepAliveTimer = nil
            state.retentionTimer?.cancel()
            state.retentionTimer = nil
            state.accessTimer?.cancel()
            state.accessTimer = nil
            let polls = state.waiters.values.flatMap(\.values)
            let streams = state.streams.values.flatMap(\.values)
            state.waiters = [:]
            state.streams = [:]
            return (polls, streams)
        }
        for poll in polls { workers.async { [self] in answer(poll) } }
        for stream in streams { stream.end() }
    }
}

/// One Server-Sent Events subscriber. Deliveries run one at a time on the worker pool; a commit
/// during a delivery marks it pending so it runs once more rather than concurrently.
final class ChangeStream: Sendable {
    static let keepAlive = Array(": keep-alive\n\n".utf8)
    static let slowConsumer = Array(
        "event: error\ndata: {\"code\":\"errorSlowConsumer\",\"detail\":\"the client reads too slowly; reconnect with Last-Event-ID\"}\n\n".utf8)

    let subscriber: ChangeSubscriber
    let output: any HTTPBodyStream
    private let feed: ChangeFeed
    private let state: Mutex<Delivery>

    private struct Delivery {
        var position: ChangePosition
        /// The last stream event read: the stream sends the store's events after it.
        var eventPosition: StreamEventPosition
        var running = false
        var pending = false
        var ended = false
    }

    init(subscriber: ChangeSubscriber, position: ChangePosition, eventPosition: StreamEventPosition, output: any HTTPBodyStream,
         feed: ChangeFeed) {
        self.subscriber = subscriber
        self.output = output
        self.feed = feed
        self.state = Mutex(Delivery(position: position, eventPosition: eventPosition))
    }

    /// `event: <name>` and `data: <data>`, without an `id`: a stream event is not a position in the
    /// feed, so a client's Last-Event-ID stays the anchor of the last change it saw.
    static func event(_ event: StreamEvent) -> [UInt8] {
        var bytes = Array("event: \(event.name)\ndata: ".utf8)
        bytes.append(contentsOf: event.data)
        bytes.append(contentsOf: [10, 10])
        return bytes
    }

    static func event(_ subscriber: ChangeSubscriber, _ page: ChangePage) -> [UInt8] {
        var bytes = Array("id: \(subscriber.anchor(for: page.next))\nevent: change\ndata: ".utf8)
        bytes.append(contentsOf: subscriber.body(page))
        bytes.append(contentsOf: [10, 10])
        return bytes
    }

    func scheduleDelivery() {
        let start = state.withLock { state -> Bool in
            if state.ended { return false }
            if state.running { state.pending = true; return false }
            state.running = true
            return true
        }
        if start { feed.workers.async { [self] in deliver() } }
    }

    private func deliver() {
        while true {
            // Stream events are read before the changes: every change committed before an event was
            // logged is then read (and sent) first, so an event never overtakes its cause.
            let (start, eventStart) = state.withLock { state -> (ChangePosition, StreamEventPosition) in
                state.pending = false
                return (state.position, state.eventPosition)
            }
            let streamEvents = feed.data.app(subscriber.app).streamEvents(after: eventStart)
            var position = start
            var more = true
            while more {
                let page: ChangePage
                do throws(APIError) {
                    page = try subscriber.read(after: position, data: feed.data)
                } catch {
                    _ = output.write(Array("event: error\ndata: ".utf8) + subscriber.problems.response(error).bodyBytes + [10, 10])
                    end()
                    return
                }
                if !page.isEmpty {
                    guard send(Self.event(subscriber, page)) else { return }
                }
                position = page.next
                more = page.more
                state.withLock { $0.position = position }
            }
            for event in streamEvents.events {
                guard send(Self.event(event)) else { return }
            }
            let again = state.withLock { state -> Bool in
                state.eventPosition = streamEvents.next
                if state.pending && !state.ended { return true }
                state.running = false
                return false
            }
            if !again { return }
        }
    }

    /// Writes one event or comment. A backlog over the limit means the client cannot keep up:
    /// it gets a final `event: error` and the stream ends, rather than the server buffering
    /// without bound. Returns false once the stream is over.
    func send(_ bytes: [UInt8]) -> Bool {
        if output.isClosed {
            end()
            return false
        }
        if output.bufferedByteCount > feed.streamBacklogLimit {
            _ = output.write(Self.slowConsumer)
            end()
            return false
        }
        // Under the lock that `revoke` takes: once a stream is revoked, nothing more is written.
        guard let written = state.withLock({ state -> Bool? in state.ended ? nil : output.write(bytes) }) else { return false }
        guard written else {
            end()
            return false
        }
        return true
    }

    func end() {
        state.withLock { $0.ended = true }
        output.finish()
    }

    /// Ends the stream with `finalEvent`: its authorization was revoked or changed.
    func revoke(_ finalEvent: [UInt8]) {
        let first = state.withLock { state -> Bool in
            defer { state.ended = true }
            return !state.ended
        }
        guard first else { return }
        _ = output.write(finalEvent)
        output.finish()
    }
}

extension HTTPResponse {
    /// The bytes of a non-streamed body.
    var bodyBytes: [UInt8] {
        if case .bytes(let bytes) = body { return bytes }
        return []
    }
}
