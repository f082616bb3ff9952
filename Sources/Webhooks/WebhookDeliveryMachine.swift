// One subscription's delivery loop as a state machine: the shell reads pages from the change feed,
// sends them and keeps time; this decides what comes next. One page is in flight at a time, and
// pages go in commit order because the next is only read once the previous is delivered.

/// A change-feed page ready to send: the body is the feed's own page (`added`, `deleted`, `anchor`, `more`).
public struct WebhookPage: Sendable, Equatable {
    /// The `webhook-id`: the same for every attempt at this page (`WebhookMessageID`).
    public var messageID: String
    /// The subscription's anchor before this page (the page is what the feed returns after it).
    public var startAnchor: String
    /// The subscription's anchor once this page is delivered.
    public var endAnchor: String
    /// The feed had more after this page.
    public var more: Bool
    public var body: [UInt8]

    public init(messageID: String, startAnchor: String, endAnchor: String, more: Bool, body: [UInt8]) {
        self.messageID = messageID
        self.startAnchor = startAnchor
        self.endAnchor = endAnchor
        self.more = more
        self.body = body
    }
}

public struct WebhookDeliveryMachine: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        /// Nothing to send: waiting for a commit.
        case idle
        /// The shell is reading the feed after `anchor`.
        case readingPage
        /// One page is on its way to the receiver; `attempts` are those made before this one.
        case delivering(WebhookPage, attempts: [WebhookAttempt])
        case waitingForRetry(WebhookPage, attempts: [WebhookAttempt], until: Double)
        /// Retries ran out; the subscription delivers nothing more until it is replaced.
        case disabled(reason: String)
        /// Deleted, or its token revoked: anything still arriving for it is dropped.
        case removed
    }

    public enum Event: Sendable, Equatable {
        /// Changes were committed that this subscription may see (a wake-up; several may coalesce).
        case changesCommitted
        /// The shell read the feed after `anchor`: a page, or nil when nothing is there for this
        /// subscription. The shell stores the page as the subscription's pending page first, so a
        /// restart resends the same page rather than a re-read one.
        case pageRead(WebhookPage?)
        /// The read found nothing this subscription may see, but the feed moved to `anchor` (changes
        /// of types it may not read, or deletions of samples it never saw): nothing to send, and
        /// the next read starts there.
        case nothingAfter(anchor: String)
        /// The token's read access changed: a page read under the old access and not yet delivered
        /// is dropped and read again, so pages follow the access in force.
        case accessChanged
        /// The attempt at the page in flight finished (answered, failed or timed out).
        case attemptFinished(WebhookAttempt)
        /// A retry timer fired.
        case timerFired(now: Double)
        /// The subscription was deleted or its token revoked.
        case removed
    }

    public enum Action: Sendable, Equatable {
        /// Read the change feed after this anchor, with the subscription's types and the token's read access.
        case readPage(after: String)
        /// POST the page now; `attempt` is 1 for the first try.
        case send(WebhookPage, attempt: Int)
        /// Keep this attempt in the subscription's deliveries list.
        case recordAttempt(WebhookAttempt, messageID: String)
        /// The page is delivered: store the subscription's anchor (in the store, so a restart resumes after it).
        case advanceAnchor(to: String)
        /// Call back with `.timerFired` at this time (seconds since 1970).
        case scheduleTimer(at: Double)
        case cancelTimer
        /// Store the subscription as disabled, with the reason its listing shows.
        case disable(reason: String)
        /// Forget the stored pending page unsent (it was read under access the token no longer has).
        case discardPage
    }

    public private(set) var state: State
    /// The subscription's anchor: everything up to it is delivered.
    public private(set) var anchor: String
    /// A commit came while a page was being read or delivered: read again after it.
    public private(set) var changesPending = false
    /// The page being read or sent was read under read access that has changed since.
    public private(set) var readUnderOldAccess = false
    public let schedule: WebhookRetrySchedule

    /// The page stored as in flight, with its attempts so far: a restart (or another node taking
    /// over) sends exactly that page again, with the same `webhook-id` and body.
    public struct PendingPage: Sendable, Equatable {
        public var page: WebhookPage
        public var attempts: [WebhookAttempt]
        public init(page: WebhookPage, attempts: [WebhookAttempt]) {
            self.page = page
            self.attempts = attempts
        }
    }

    private var pendingAtStart: PendingPage?

    /// `anchor`, `pending` and `disabledReason` are the subscription's stored state.
    public init(anchor: String, pending: PendingPage? = nil, disabledReason: String? = nil,
                schedule: WebhookRetrySchedule = WebhookRetrySchedule()) {
        self.anchor = anchor
        self.schedule = schedule
        pendingAtStart = pending
        state = disabledReason.map { .disabled(reason: $0) } ?? .idle
    }

    /// The first actions of a machine: resume a stored page, or read once, since commits may have
    /// happened while nothing ran.
    public mutating func start() -> [Action] {
        guard case .idle = state else { return [] }
        guard let pending = pendingAtStart else { return handle(.changesCommitted) }
        pendingAtStart = nil
        // Commits since the page was read are read after it.
        changesPending = true
        switch schedule.decision(after: pending.attempts) {
        case .delivered:
            // Delivered, but the anchor was not stored yet: store it now.
            anchor = pending.page.endAnchor
            return [.advanceAnchor(to: pending.page.endAnchor)] + readAgainIfPending()
        case .retry where pending.attempts.isEmpty:
            state = .delivering(pending.page, attempts: [])
            return [.send(pending.page, attempt: 1)]
        case .retry(let time):
            state = .waitingForRetry(pending.page, attempts: pending.attempts, until: time)
            return [.scheduleTimer(at: time)]
        case .disable(let reason):
            state = .disabled(reason: reason)
            return [.disable(reason: reason)]
        }
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.removed, _), (.disabled, .changesCommitted), (.disabled, .pageRead), (.disabled, .timerFired),
             (.disabled, .attemptFinished), (.disabled, .nothingAfter), (.disabled, .accessChanged):
            return []

        case (_, .removed):
            let hadTimer: Bool
            if case .waitingForRetry = state { hadTimer = true } else { hadTimer = false }
            state = .removed
            return hadTimer ? [.cancelTimer] : []

        case (.idle, .changesCommitted):
            state = .readingPage
            changesPending = false
            return [.readPage(after: anchor)]
        case (.readingPage, .changesCommitted), (.delivering, .changesCommitted), (.waitingForRetry, .changesCommitted):
            changesPending = true
            return []

        case (.idle, .accessChanged):
            return []
        case (.readingPage, .accessChanged), (.delivering, .accessChanged):
            readUnderOldAccess = true
            return []
        case (.waitingForRetry, .accessChanged):
            readUnderOldAccess = false
            state = .readingPage
            changesPending = false
            return [.cancelTimer, .discardPage, .readPage(after: anchor)]

        case (.readingPage, .nothingAfter(let moved)):
            readUnderOldAccess = false
            anchor = moved
            return [.advanceAnchor(to: moved)] + readAgainIfPending()

        case (.readingPage, .pageRead(let page)):
            if readUnderOldAccess {
                readUnderOldAccess = false
                changesPending = false
                return (page == nil ? [] : [.discardPage]) + [.readPage(after: anchor)]
            }
            guard let page else { return readAgainIfPending() }
            guard page.startAnchor == anchor else {
                // A page from before the anchor moved (a stale read): read again from the anchor.
                changesPending = false
                return [.readPage(after: anchor)]
            }
            state = .delivering(page, attempts: [])
            return [.send(page, attempt: 1)]

        case (.delivering(let page, let attempts), .attemptFinished(let attempt)):
            let history = attempts + [attempt]
            var actions: [Action] = [.recordAttempt(attempt, messageID: page.messageID)]
            if readUnderOldAccess && !attempt.delivered {
                // Not retried as read: read again under the access in force.
                readUnderOldAccess = false
                changesPending = false
                state = .readingPage
                return actions + [.discardPage, .readPage(after: anchor)]
            }
            readUnderOldAccess = false
            switch schedule.decision(after: history) {
            case .delivered:
                anchor = page.endAnchor
                actions.append(.advanceAnchor(to: page.endAnchor))
                if page.more { changesPending = true }
                actions += readAgainIfPending()
            case .retry(let time):
                state = .waitingForRetry(page, attempts: history, until: time)
                actions.append(.scheduleTimer(at: time))
            case .disable(let reason):
                state = .disabled(reason: reason)
                actions.append(.disable(reason: reason))
            }
            return actions

        case (.waitingForRetry(let page, let attempts, let until), .timerFired(let now)):
            guard now >= until else { return [.scheduleTimer(at: until)] }
            state = .delivering(page, attempts: attempts)
            return [.send(page, attempt: attempts.count + 1)]

        // Events that do not belong to the state (a late timer, a duplicate completion) change nothing.
        case (.idle, _), (.readingPage, _), (.delivering, _), (.waitingForRetry, _):
            return []
        }
    }

    private mutating func readAgainIfPending() -> [Action] {
        guard changesPending else {
            state = .idle
            return []
        }
        changesPending = false
        state = .readingPage
        return [.readPage(after: anchor)]
    }
}
