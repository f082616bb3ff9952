import Crypto
import Dispatch
import HTTPClient
import HealthStore
import NetworkPolicy
import Synchronization
import Webhooks

/// How deliveries leave the server: the HTTP client, or a test's stand-in.
public protocol WebhookTransport: Sendable {
    func send(_ request: HTTPClientRequest, completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void)
}

extension HTTPClient: WebhookTransport {}

/// The webhook delivery runner: a shell around one `WebhookDeliveryMachine` per subscription this
/// node holds. Each subscription works on a serial queue of its own, so a slow or dead receiver
/// holds only its own subscription; the store's commit observer only posts a wake-up to the
/// machines of the user whose data changed, and nothing on the write path waits. Pages are read
/// through the token's own view (`HealthData.app(_:).changes`), so read privacy is exactly that of
/// `/v1/changes`, and stored before their first attempt; a delivery moves the stored anchor and
/// clears the page in one transaction (docs/decisions.md, Webhooks: the design for wiring).
public final class WebhookDelivery: Sendable {
    /// Changes per delivered page (as a stream event carries).
    static let pageLimit = 500
    /// Subscriptions claimed per round on a store shared by nodes (one process claims them all, once).
    static let claimLimit = 64

    let data: HealthData
    let transport: any WebhookTransport
    let lease: WebhookLease
    let schedule: WebhookRetrySchedule
    let log: AccessLog?
    /// How often leases are renewed and free subscriptions claimed (on a store shared by nodes);
    /// also the bound on noticing a deletion or revocation made on another node.
    let pollInterval: DispatchTimeInterval
    /// How long a runner waits before trying again a read or write the store failed.
    let storeRetryDelay: DispatchTimeInterval
    private let state = Mutex(State())

    private struct State {
        var runners: [String: WebhookRunner] = [:]
        var byUser: [Int64: Set<String>] = [:]
        var timer: (any DispatchSourceTimer)?
        var stopped = false
    }

    init(data: HealthData, transport: any WebhookTransport, lease: WebhookLease = WebhookLease(owner: "node-" + Base64URL.encode(SecureRandom.bytes(9))),
         schedule: WebhookRetrySchedule = WebhookRetrySchedule(), pollInterval: DispatchTimeInterval = .milliseconds(500),
         storeRetryDelay: DispatchTimeInterval = .seconds(5), log: AccessLog?) {
        self.data = data
        self.transport = transport
        self.lease = lease
        self.schedule = schedule
        self.pollInterval = pollInterval
        self.storeRetryDelay = storeRetryDelay
        self.log = log
        data.addCommitObserver { [weak self] change in self?.committed(change) }
        data.addAuthorizationObserver { [weak self] id in self?.authorizationChanged(id) }
        data.addNotificationGapObserver { [weak self] in self?.commitsMayHaveBeenMissed() }
    }

    /// Claims the subscriptions to run and, on a store shared by nodes, keeps claiming and renewing.
    func start() {
        let shared = data.isSharedByNodes
        let interval = pollInterval
        state.withLock { state in
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
            timer.schedule(deadline: .now(), repeating: interval, leeway: .milliseconds(50))
            let claimed = Mutex(false)
            timer.setEventHandler { [weak self] in
                guard let self else { return }
                if shared {
                    self.renew()
                    self.claim(limit: Self.claimLimit)
                } else if !claimed.withLock({ $0 }) {
                    // One process: everything is claimed once (until a claim succeeds); new
                    // subscriptions are added as they are made.
                    if self.claim(limit: .max) { claimed.withLock { $0 = true } }
                } else {
                    // A row deleted behind the runner's back (another revocation path) stops it.
                    self.renew()
                }
            }
            timer.resume()
            state.timer = timer
        }
    }

    /// Stops claiming; machines stop where they are (their rows say where to resume).
    func stop() {
        let runners = state.withLock { state -> [WebhookRunner] in
            state.stopped = true
            state.timer?.cancel()
            state.timer = nil
            return Array(state.runners.values)
        }
        for runner in runners { runner.post(.removed) }
    }

    var runningCount: Int { state.withLock { $0.runners.count } }

    // MARK: Subscriptions coming and going

    /// A subscription just made on this node (and leased to it).
    func add(_ subscription: WebhookSubscription) {
        run(subscription)
    }

    /// Its row is gone (deleted, or the token revoked): it stops at once, pending retries included.
    func remove(id: String) {
        guard let runner = unregister(id: id) else { return }
        runner.post(.removed)
    }

    @discardableResult
    func unregister(id: String) -> WebhookRunner? {
        state.withLock { state in
            guard let runner = state.runners.removeValue(forKey: id) else { return nil }
            state.byUser[runner.subscription.userRowID]?.remove(id)
            if state.byUser[runner.subscription.userRowID]?.isEmpty == true { state.byUser[runner.subscription.userRowID] = nil }
            return runner
        }
    }

    private func run(_ subscription: WebhookSubscription) {
        let runner = WebhookRunner(subscription: subscription, delivery: self)
        let added = state.withLock { state -> Bool in
            guard !state.stopped, state.runners[subscription.id] == nil else { return false }
            state.runners[subscription.id] = runner
            state.byUser[subscription.userRowID, default: []].insert(subscription.id)
            return true
        }
        if added { runner.begin() }
    }

    /// False when the store failed (the next round tries again).
    @discardableResult
    private func claim(limit: Int) -> Bool {
        do {
            for subscription in try data.claimWebhooks(lease: lease, limit: limit) { run(subscription) }
            return true
        } catch {
            log?.event("claiming webhook subscriptions failed; retrying", level: "warning", fields: [("error", String(describing: error))])
            return false
        }
    }

    /// Renews this node's leases; a subscription deleted, disabled or taken over stops here. Then
    /// compares the tokens of the running subscriptions with the database's (one read for all): a
    /// revocation or a change of read access that no notification announced (another node's, a
    /// lost NOTIFY) still reaches the runners within a round.
    private func renew() {
        let runners = state.withLock { Array($0.runners.values) }
        guard !runners.isEmpty else { return }
        do {
            let held = try data.renewWebhookLeases(ids: runners.map(\.subscription.id), lease: lease)
            for runner in runners where !held.contains(runner.subscription.id) { remove(id: runner.subscription.id) }
            let live = try data.liveAuthorizations(ids: Set(runners.map(\.subscription.authorizationID)))
            for runner in runners where held.contains(runner.subscription.id) {
                runner.compareAuthorization(live[runner.subscription.authorizationID])
            }
        } catch {
            log?.event("renewing webhook leases failed; retrying", level: "warning", fields: [("error", String(describing: error))])
        }
    }

    // MARK: Wake-ups

    private func committed(_ change: CommittedChange) {
        let runners = state.withLock { state -> [WebhookRunner] in
            (state.byUser[change.userRowID] ?? []).compactMap { state.runners[$0] }
        }
        for runner in runners where !runner.types.isDisjoint(with: change.typeIDs) { runner.post(.changesCommitted) }
    }

    /// Other nodes' commit reports may have been lost: every runner reads its feed again (an idle
    /// one would otherwise wait for the user's next commit, which may never come).
    private func commitsMayHaveBeenMissed() {
        for runner in state.withLock({ Array($0.runners.values) }) { runner.post(.changesCommitted) }
    }

    /// A token was revoked or its permissions changed: its runners read it again.
    private func authorizationChanged(_ id: String) {
        let runners = state.withLock { $0.runners.values.filter { $0.subscription.authorizationID == id } }
        for runner in runners { runner.refreshAuthorization() }
    }
}

/// One subscription's machine and the shell that carries out its actions. Everything mutable is
/// touched on `queue` only.
final class WebhookRunner: @unchecked Sendable {
    let subscription: WebhookSubscription
    let types: Set<String>
    /// What the runner needs of its owner, held on its own: a timer or an answer may arrive after
    /// the owner is gone.
    private let delivery: Shared
    private weak var owner: WebhookDelivery?
    let queue: DispatchQueue
    let signer: WebhookSigner
    private var machine: WebhookDeliveryMachine
    private var authorization: AppAuthorization?
    private var timerGeneration: UInt64 = 0
    private var stopped = false

    private struct Shared {
        let data: HealthData
        let transport: any WebhookTransport
        let lease: WebhookLease
        let storeRetryDelay: DispatchTimeInterval
        let log: AccessLog?
    }

    init(subscription: WebhookSubscription, delivery: WebhookDelivery) {
        self.subscription = subscription
        self.types = Set(subscription.types)
        self.delivery = Shared(data: delivery.data, transport: delivery.transport, lease: delivery.lease,
                               storeRetryDelay: delivery.storeRetryDelay, log: delivery.log)
        owner = delivery
        queue = DispatchQueue(label: "healthd.webhook." + subscription.id)
        signer = WebhookSigner(secret: WebhookSecret(key: subscription.secretKey) ?? WebhookSecret.generate())
        let pending = subscription.pending.map { stored in
            WebhookDeliveryMachine.PendingPage(
                page: WebhookPage(messageID: stored.messageID, startAnchor: Self.text(stored.start), endAnchor: Self.text(stored.end),
                                  more: stored.more, body: stored.body),
                attempts: stored.attempts.map(Self.attempt))
        }
        machine = WebhookDeliveryMachine(anchor: Self.text(subscription.anchor), pending: pending,
                                         disabledReason: subscription.disabledReason, schedule: delivery.schedule)
    }

    func begin() {
        queue.async { [self] in
            guard !stopped else { return }
            guard let pending = subscription.pending, machine.state == .idle,
                  machine.schedule.decision(after: pending.attempts.map(Self.attempt)) != .delivered else {
                return perform(machine.start())
            }
            // A stored page names the read access it was read under (its id): read under access
            // the token has since lost (narrowed while this process was down, or while another node
            // held it), it is dropped unsent and read again from the anchor.
            let live: AppAuthorization?
            do {
                live = try currentAuthorization()
            } catch {
                delivery.log?.event("reading a webhook's token failed; retrying", level: "warning",
                                    fields: [("webhook", subscription.id), ("error", String(describing: error))])
                queue.asyncAfter(deadline: .now() + delivery.storeRetryDelay) { [self] in begin() }
                return
            }
            guard let live else { return tokenGone() }
            let current = Self.messageID(subscriptionID: subscription.id, start: Self.text(pending.start), end: Self.text(pending.end),
                                         readUnder: live)
            if pending.messageID != current {
                machine = WebhookDeliveryMachine(anchor: Self.text(subscription.anchor), schedule: machine.schedule)
                write { data, lease in try data.discardWebhookPage(id: subscription.id, lease: lease) }
                guard !stopped else { return }
            }
            perform(machine.start())
        }
    }

    func post(_ event: WebhookDeliveryMachine.Event) {
        queue.async { [self] in
            guard !stopped else { return }
            if case .removed = event { stopped = true }
            perform(machine.handle(event))
        }
    }

    func refreshAuthorization() {
        queue.async { [self] in
            guard !stopped else { return }
            readAuthorization()
        }
    }

    /// The token as a lease round read it. That read may predate a change this runner has applied
    /// already, so a difference is only a reason to read the token afresh, never a value to adopt.
    func compareAuthorization(_ live: AppAuthorization?) {
        queue.async { [self] in
            guard !stopped, live != authorization else { return }
            readAuthorization()
        }
    }

    /// Reads the token now (on `queue`) and applies it.
    private func readAuthorization() {
        do {
            apply(try delivery.data.liveAuthorizations(ids: [subscription.authorizationID])[subscription.authorizationID])
        } catch {
            delivery.log?.event("reading a webhook's token failed", level: "warning", fields: [("error", String(describing: error))])
        }
    }

    private func apply(_ live: AppAuthorization?) {
        guard let live else {
            tokenGone()
            return
        }
        if let authorization, authorization != live {
            self.authorization = live
            perform(machine.handle(.accessChanged))
        } else {
            authorization = live
        }
    }

    /// The token is revoked: its subscriptions go (the revocation deleted them; this covers a
    /// revocation path that did not).
    private func tokenGone() {
        _ = try? delivery.data.deleteWebhooks(authorizationID: subscription.authorizationID)
        stop()
    }

    private func stop() {
        stopped = true
        perform(machine.handle(.removed))
        owner?.unregister(id: subscription.id)
    }

    // MARK: Carrying out actions (on `queue`)

    private func perform(_ actions: [WebhookDeliveryMachine.Action]) {
        // The retry time goes into the row with the attempt, so a claim sees when it is due.
        let nextAttempt = actions.lazy.compactMap { action -> Double? in
            if case .scheduleTimer(let at) = action { at } else { nil }
        }.first
        for action in actions {
            guard !stopped || action == .cancelTimer else { return }
            switch action {
            case .readPage(let after):
                readPage(after: after)
            case .send(let page, _):
                send(page)
            case .recordAttempt(let attempt, let messageID):
                let record = WebhookDeliveryAttempt(messageID: messageID, timeMs: Int64((attempt.time * 1000).rounded()),
                                                    status: attempt.status, durationMs: attempt.durationMs,
                                                    error: attempt.delivered ? nil : attempt.failureDescription)
                write { data, lease in
                    try data.recordWebhookAttempt(id: subscription.id, userRowID: subscription.userRowID, attempt: record,
                                                  nextAttemptMs: nextAttempt.map { Int64(($0 * 1000).rounded()) }, lease: lease)
                }
            case .advanceAnchor(let anchor):
                guard let position = Self.position(anchor) else { continue }
                write { data, lease in try data.advanceWebhook(id: subscription.id, to: position, lease: lease) }
            case .scheduleTimer(let at):
                timerGeneration &+= 1
                let generation = timerGeneration
                let delay = max(0, at - Self.now())
                queue.asyncAfter(deadline: .now() + delay) { [self] in
                    guard !stopped, generation == timerGeneration else { return }
                    perform(machine.handle(.timerFired(now: max(at, Self.now()))))
                }
            case .cancelTimer:
                timerGeneration &+= 1
            case .disable(let reason):
                disable(reason: reason)
                delivery.log?.event("webhook disabled", level: "warning", fields: [("webhook", subscription.id), ("reason", reason)])
            case .discardPage:
                write { data, lease in try data.discardWebhookPage(id: subscription.id, lease: lease) }
            }
        }
    }

    /// A write of delivery state. False from the store (the row is gone, or another node holds it
    /// now) stops this runner; a failing store is logged and the machine carries on (its row then
    /// resumes a step behind, which resends a page at most once more).
    private func write(_ body: (HealthData, WebhookLease) throws -> Bool) {
        do {
            if try !body(delivery.data, delivery.lease) { stop() }
        } catch {
            delivery.log?.event("storing a webhook's state failed", level: "warning",
                                fields: [("webhook", subscription.id), ("error", String(describing: error))])
        }
    }

    /// Stores why the webhook stopped, retrying while the store fails: the machine sends nothing
    /// more either way, but the listing must say why (and a claim must not resume it).
    private func disable(reason: String) {
        do {
            _ = try delivery.data.disableWebhook(id: subscription.id, reason: reason, lease: delivery.lease)
            stop()
        } catch {
            delivery.log?.event("storing a webhook's state failed; retrying", level: "warning",
                                fields: [("webhook", subscription.id), ("error", String(describing: error))])
            queue.asyncAfter(deadline: .now() + delivery.storeRetryDelay) { [self] in
                guard !stopped else { return }
                disable(reason: reason)
            }
        }
    }

    private func currentAuthorization() throws -> AppAuthorization? {
        if let authorization { return authorization }
        let live = try delivery.data.liveAuthorizations(ids: [subscription.authorizationID])[subscription.authorizationID]
        authorization = live
        return live
    }

    private func readPage(after anchor: String) {
        guard let position = Self.position(anchor) else { return }
        let page: ChangePage
        let app: AppAuthorization
        do {
            guard let live = try currentAuthorization() else {
                tokenGone()
                return
            }
            app = live
            page = try delivery.data.app(live).changes(ChangeRequest(types: types, after: position, limit: WebhookDelivery.pageLimit))
        } catch ChangeFeedError.anchorExpired {
            disable(reason: "The change feed no longer holds the deletions after this webhook's "
                    + "position (tombstoneRetentionDays); create the webhook again.")
            return
        } catch {
            delivery.log?.event("reading a webhook's page failed; retrying", level: "warning",
                                fields: [("webhook", subscription.id), ("error", String(describing: error))])
            retryRead(after: anchor)
            return
        }
        if page.isEmpty {
            if page.next != position {
                perform(machine.handle(.nothingAfter(anchor: Self.text(page.next))))
            } else {
                perform(machine.handle(.pageRead(nil)))
            }
            return
        }
        let subscriber = ChangeSubscriber(app: app, types: types, limit: WebhookDelivery.pageLimit, secret: delivery.data.secret,
                                          problems: ProblemResponder(requestID: "webhook-" + subscription.id, log: delivery.log))
        let messageID = Self.messageID(subscriptionID: subscription.id, start: anchor, end: Self.text(page.next), readUnder: app)
        let stored = WebhookPendingPage(messageID: messageID, start: position, end: page.next, more: page.more,
                                        body: subscriber.body(page))
        let now = Self.now()
        do {
            guard try delivery.data.storeWebhookPage(id: subscription.id, page: stored, nextAttemptMs: Int64((now * 1000).rounded()),
                                                     lease: delivery.lease) else { return stop() }
        } catch {
            // Not sent unless stored (a kill -9 must find it): read it again once the store answers.
            delivery.log?.event("storing a webhook's page failed; retrying", level: "warning",
                                fields: [("webhook", subscription.id), ("error", String(describing: error))])
            retryRead(after: anchor)
            return
        }
        perform(machine.handle(.pageRead(WebhookPage(messageID: messageID, startAnchor: anchor, endAnchor: Self.text(page.next),
                                                     more: page.more, body: stored.body))))
    }

    /// The machine stays in `readingPage` (commits meanwhile are noted); the read runs again later.
    private func retryRead(after anchor: String) {
        queue.asyncAfter(deadline: .now() + delivery.storeRetryDelay) { [self] in
            guard !stopped else { return }
            readPage(after: anchor)
        }
    }

    private func send(_ page: WebhookPage) {
        let started = DispatchTime.now()
        let url: ReceiverURL
        do {
            url = try ReceiverURL(parsing: subscription.url)
        } catch {
            finish(WebhookAttempt(time: Self.now(), status: nil, durationMs: 0, error: error.description))
            return
        }
        let timestamp = Int64(Self.now())
        var headers = signer.headers(id: page.messageID, timestamp: timestamp, body: page.body)
        headers.append(("Content-Type", "application/json"))
        let time = Self.now()
        delivery.transport.send(HTTPClientRequest(url: url, headers: headers, body: page.body)) { [self] result in
            let durationMs = Int((DispatchTime.now().uptimeNanoseconds &- started.uptimeNanoseconds) / 1_000_000)
            switch result {
            case .success(let response):
                finish(WebhookAttempt(time: time, status: response.status, durationMs: durationMs, error: nil))
            case .failure(let error):
                finish(WebhookAttempt(time: time, status: nil, durationMs: durationMs, error: error.description))
            }
        }
    }

    private func finish(_ attempt: WebhookAttempt) {
        post(.attemptFinished(attempt))
    }

    // MARK: Forms

    static func now() -> Double { Double(StoreClock.nowMilliseconds()) / 1000 }

    /// A page's id names the subscription, the page's span of the feed and the read access it was
    /// read under: the same page resent carries the same id, and a page read again with other
    /// content (other access, or more commits since) another, so a receiver that skips ids it has
    /// applied never skips changes.
    static func messageID(subscriptionID: String, start: String, end: String, readUnder app: AppAuthorization) -> String {
        WebhookMessageID.make(subscriptionID: subscriptionID, startAnchor: start + "-" + end + "|" + app.read.sorted().joined(separator: ","))
    }

    /// The machine's anchor text: "seq.floor".
    static func text(_ position: ChangePosition) -> String { "\(position.seq).\(position.tombstoneFloor)" }

    static func position(_ text: String) -> ChangePosition? {
        let parts = text.split(separator: ".")
        guard parts.count == 2, let seq = Int64(parts[0]), let floor = Int64(parts[1]) else { return nil }
        return ChangePosition(seq: seq, tombstoneFloor: floor)
    }

    static func attempt(_ stored: WebhookDeliveryAttempt) -> WebhookAttempt {
        WebhookAttempt(time: Double(stored.timeMs) / 1000, status: stored.status, durationMs: stored.durationMs, error: stored.error)
    }
}
