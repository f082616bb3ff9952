import Testing
import Webhooks

@Suite struct WebhookDeliveryMachineTests {
    typealias Machine = WebhookDeliveryMachine

    func page(_ start: String, _ end: String, more: Bool = false) -> WebhookPage {
        WebhookPage(messageID: WebhookMessageID.make(subscriptionID: "s", startAnchor: start), startAnchor: start, endAnchor: end,
                    more: more, body: Array("{\"anchor\":\"\(end)\"}".utf8))
    }

    func answer(_ status: Int?, at time: Double, error: String? = nil) -> WebhookAttempt {
        WebhookAttempt(time: time, status: status, durationMs: 5, error: error)
    }

    @Test func startupReadsOnceAndAnEmptyFeedGoesIdle() {
        var machine = Machine(anchor: "a0")
        #expect(machine.start() == [.readPage(after: "a0")])
        #expect(machine.state == .readingPage)
        #expect(machine.handle(.pageRead(nil)) == [])
        #expect(machine.state == .idle)
    }

    @Test func aPageIsSentDeliveredAndTheAnchorMoves() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        let first = page("a0", "a1")
        #expect(machine.handle(.pageRead(first)) == [.send(first, attempt: 1)])
        let ok = answer(200, at: 10)
        #expect(machine.handle(.attemptFinished(ok)) == [.recordAttempt(ok, messageID: first.messageID), .advanceAnchor(to: "a1")])
        #expect(machine.state == .idle)
        #expect(machine.anchor == "a1")
        #expect(machine.handle(.changesCommitted) == [.readPage(after: "a1")])
    }

    @Test func morePagesAreReadOneAfterAnotherInOrder() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        let first = page("a0", "a1", more: true)
        _ = machine.handle(.pageRead(first))
        let ok = answer(204, at: 1)
        #expect(machine.handle(.attemptFinished(ok)) == [.recordAttempt(ok, messageID: first.messageID), .advanceAnchor(to: "a1"),
                                                         .readPage(after: "a1")])
        #expect(machine.state == .readingPage)
    }

    @Test func commitsDuringDeliveryAreReadAfterIt() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        let first = page("a0", "a1")
        _ = machine.handle(.pageRead(first))
        // One page in flight: a commit now only notes there is more.
        #expect(machine.handle(.changesCommitted) == [])
        #expect(machine.handle(.changesCommitted) == [])
        let ok = answer(200, at: 1)
        #expect(machine.handle(.attemptFinished(ok)).last == .readPage(after: "a1"))
        // A commit while reading: read again afterwards, even if this read found nothing.
        #expect(machine.handle(.changesCommitted) == [])
        #expect(machine.handle(.pageRead(nil)) == [.readPage(after: "a1")])
        #expect(machine.handle(.pageRead(nil)) == [])
        #expect(machine.state == .idle)
    }

    @Test func failuresWaitAndRetryTheSamePage() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        let first = page("a0", "a1")
        _ = machine.handle(.pageRead(first))
        let failed = answer(500, at: 100)
        #expect(machine.handle(.attemptFinished(failed)) == [.recordAttempt(failed, messageID: first.messageID), .scheduleTimer(at: 105)])
        #expect(machine.state == .waitingForRetry(first, attempts: [failed], until: 105))
        // Commits do not jump the queue; an early timer re-arms.
        #expect(machine.handle(.changesCommitted) == [])
        #expect(machine.handle(.timerFired(now: 104)) == [.scheduleTimer(at: 105)])
        #expect(machine.handle(.timerFired(now: 105)) == [.send(first, attempt: 2)])
        let redirect = answer(302, at: 105)
        #expect(machine.handle(.attemptFinished(redirect)) == [.recordAttempt(redirect, messageID: first.messageID), .scheduleTimer(at: 115)])
        _ = machine.handle(.timerFired(now: 115))
        let ok = answer(200, at: 115)
        // Delivered: the anchor moves, and the commit noted while waiting is read now.
        #expect(machine.handle(.attemptFinished(ok)) == [.recordAttempt(ok, messageID: first.messageID), .advanceAnchor(to: "a1"),
                                                         .readPage(after: "a1")])
    }

    @Test func retriesRunOutAndDisable() {
        var machine = Machine(anchor: "a0", schedule: WebhookRetrySchedule(firstDelay: 5, maximumDelay: 3600, retryWindow: 12))
        _ = machine.start()
        let first = page("a0", "a1")
        _ = machine.handle(.pageRead(first))
        _ = machine.handle(.attemptFinished(answer(nil, at: 0, error: "Connecting timed out.")))
        _ = machine.handle(.timerFired(now: 5))
        let last = answer(nil, at: 5, error: "Connecting timed out.")
        let actions = machine.handle(.attemptFinished(last))
        guard case .disabled(let reason) = machine.state else {
            Issue.record("expected disabled, got \(machine.state)")
            return
        }
        #expect(actions == [.recordAttempt(last, messageID: first.messageID), .disable(reason: reason)])
        #expect(reason.contains("Connecting timed out."))
        #expect(machine.anchor == "a0")
        // Disabled: nothing moves it any more.
        #expect(machine.handle(.changesCommitted) == [])
        #expect(machine.handle(.timerFired(now: 100)) == [])
        #expect(machine.state == .disabled(reason: reason))
    }

    @Test func aStoredDisabledSubscriptionStaysDisabled() {
        var machine = Machine(anchor: "a0", disabledReason: "gone")
        #expect(machine.start() == [])
        #expect(machine.state == .disabled(reason: "gone"))
    }

    @Test func removalStopsEverythingIncludingAPendingRetry() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        let first = page("a0", "a1")
        _ = machine.handle(.pageRead(first))
        _ = machine.handle(.attemptFinished(answer(503, at: 0)))
        #expect(machine.handle(.removed) == [.cancelTimer])
        #expect(machine.state == .removed)
        #expect(machine.handle(.timerFired(now: 10)) == [])
        #expect(machine.handle(.changesCommitted) == [])
        #expect(machine.handle(.attemptFinished(answer(200, at: 11))) == [])
        #expect(machine.anchor == "a0")
    }

    @Test func removalDuringAnAttemptDropsItsOutcome() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        _ = machine.handle(.pageRead(page("a0", "a1")))
        #expect(machine.handle(.removed) == [])
        #expect(machine.handle(.attemptFinished(answer(200, at: 1))) == [])
        #expect(machine.anchor == "a0")
    }

    @Test func eventsOutOfPlaceChangeNothing() {
        var machine = Machine(anchor: "a0")
        #expect(machine.handle(.timerFired(now: 5)) == [])
        #expect(machine.handle(.attemptFinished(answer(200, at: 1))) == [])
        #expect(machine.handle(.pageRead(page("a0", "a1"))) == [])
        #expect(machine.state == .idle)
        _ = machine.start()
        let first = page("a0", "a1")
        _ = machine.handle(.pageRead(first))
        // A second read result or a stray timer while a page is in flight.
        #expect(machine.handle(.pageRead(page("a0", "a2"))) == [])
        #expect(machine.handle(.timerFired(now: 50)) == [])
        #expect(machine.state == .delivering(first, attempts: []))
    }

    @Test func aStalePageIsReadAgainFromTheAnchor() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        #expect(machine.handle(.pageRead(page("old", "a1"))) == [.readPage(after: "a0")])
        #expect(machine.state == .readingPage)
    }
}

@Suite struct WebhookDeliveryMachineRestartTests {
    let page = WebhookPage(messageID: "msg_p", startAnchor: "a0", endAnchor: "a1", more: false, body: Array("{}".utf8))

    func failure(at time: Double) -> WebhookAttempt { WebhookAttempt(time: time, status: 500, durationMs: 1, error: nil) }

    @Test func aStoredPageNeverTriedIsSentAsStored() {
        var machine = WebhookDeliveryMachine(anchor: "a0", pending: .init(page: page, attempts: []))
        #expect(machine.start() == [.send(page, attempt: 1)])
        // Commits made while the server was down are read once the stored page is delivered.
        let ok = WebhookAttempt(time: 1, status: 200, durationMs: 1, error: nil)
        #expect(machine.handle(.attemptFinished(ok)) == [.recordAttempt(ok, messageID: "msg_p"), .advanceAnchor(to: "a1"),
                                                         .readPage(after: "a1")])
    }

    @Test func aStoredPageWithFailuresWaitsForItsRetry() {
        var machine = WebhookDeliveryMachine(anchor: "a0", pending: .init(page: page, attempts: [failure(at: 100), failure(at: 105)]))
        #expect(machine.start() == [.scheduleTimer(at: 115)])
        #expect(machine.handle(.timerFired(now: 115)) == [.send(page, attempt: 3)])
    }

    @Test func aStoredPageDeliveredButNotAdvancedAdvancesNow() {
        let ok = WebhookAttempt(time: 1, status: 204, durationMs: 1, error: nil)
        var machine = WebhookDeliveryMachine(anchor: "a0", pending: .init(page: page, attempts: [ok]))
        #expect(machine.start() == [.advanceAnchor(to: "a1"), .readPage(after: "a1")])
        #expect(machine.anchor == "a1")
    }

    @Test func aStoredPageOutOfRetriesDisables() {
        let schedule = WebhookRetrySchedule(firstDelay: 5, maximumDelay: 3600, retryWindow: 10)
        var machine = WebhookDeliveryMachine(anchor: "a0", pending: .init(page: page, attempts: [failure(at: 0), failure(at: 5)]),
                                             schedule: schedule)
        let actions = machine.start()
        guard case .disabled(let reason) = machine.state else {
            Issue.record("expected disabled")
            return
        }
        #expect(actions == [.disable(reason: reason)])
        #expect(machine.start() == [])
    }
}

@Suite struct WebhookDeliveryMachineShellEventTests {
    typealias Machine = WebhookDeliveryMachine

    func page(_ start: String, _ end: String) -> WebhookPage {
        WebhookPage(messageID: "msg_" + start, startAnchor: start, endAnchor: end, more: false, body: Array("{}".utf8))
    }

    @Test func aReadWithNothingVisibleStillMovesTheAnchor() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        #expect(machine.handle(.nothingAfter(anchor: "a3")) == [.advanceAnchor(to: "a3")])
        #expect(machine.anchor == "a3")
        #expect(machine.state == .idle)
        #expect(machine.handle(.changesCommitted) == [.readPage(after: "a3")])
    }

    @Test func aPageWaitingForItsRetryIsReadAgainWhenAccessChanges() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        let first = page("a0", "a1")
        _ = machine.handle(.pageRead(first))
        _ = machine.handle(.attemptFinished(WebhookAttempt(time: 1, status: 500, durationMs: 1, error: nil)))
        #expect(machine.handle(.accessChanged) == [.cancelTimer, .discardPage, .readPage(after: "a0")])
        #expect(machine.state == .readingPage)
        #expect(machine.handle(.timerFired(now: 100)) == [])
    }

    @Test func aFailedAttemptReadUnderOldAccessIsNotRetriedAsRead() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        let first = page("a0", "a1")
        _ = machine.handle(.pageRead(first))
        #expect(machine.handle(.accessChanged) == [])
        let failed = WebhookAttempt(time: 1, status: nil, durationMs: 1, error: "down")
        #expect(machine.handle(.attemptFinished(failed)) == [.recordAttempt(failed, messageID: first.messageID), .discardPage,
                                                              .readPage(after: "a0")])
    }

    @Test func aDeliveryReadUnderOldAccessStillCounts() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        let first = page("a0", "a1")
        _ = machine.handle(.pageRead(first))
        _ = machine.handle(.accessChanged)
        let ok = WebhookAttempt(time: 1, status: 200, durationMs: 1, error: nil)
        #expect(machine.handle(.attemptFinished(ok)) == [.recordAttempt(ok, messageID: first.messageID), .advanceAnchor(to: "a1")])
        #expect(machine.readUnderOldAccess == false)
    }

    @Test func aPageReadWhileAccessChangedIsDroppedAndReadAgain() {
        var machine = Machine(anchor: "a0")
        _ = machine.start()
        _ = machine.handle(.accessChanged)
        #expect(machine.handle(.pageRead(page("a0", "a1"))) == [.discardPage, .readPage(after: "a0")])
        #expect(machine.handle(.pageRead(nil)) == [])
        #expect(machine.state == .idle)
    }
}
