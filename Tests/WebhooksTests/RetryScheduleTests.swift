import Testing
import Webhooks

@Suite struct WebhookRetryScheduleTests {
    let schedule = WebhookRetrySchedule()

    func failure(at time: Double, status: Int? = 500) -> WebhookAttempt {
        WebhookAttempt(time: time, status: status, durationMs: 12, error: nil)
    }

    @Test func delaysDoubleFromFiveSecondsToAnHour() {
        #expect((1...12).map { schedule.delay(afterFailure: $0) } == [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600])
        #expect(schedule.delay(afterFailure: 10_000) == 3600)
    }

    @Test func aDeliveryEndsTheRetries() {
        #expect(schedule.decision(after: [failure(at: 0), WebhookAttempt(time: 5, status: 204, durationMs: 3, error: nil)]) == .delivered)
    }

    @Test func everyNon2xxIsRetried() {
        for status in [nil, 301, 302, 404, 429, 500, 503] as [Int?] {
            #expect(schedule.decision(after: [failure(at: 100, status: status)]) == .retry(at: 105))
        }
    }

    @Test func retriesFollowTheHistory() {
        var attempts: [WebhookAttempt] = []
        var time = 1000.0
        var waits: [Double] = []
        while true {
            attempts.append(failure(at: time))
            switch schedule.decision(after: attempts) {
            case .retry(let next):
                waits.append(next - time)
                time = next
            case .disable(let reason):
                #expect(reason.contains("24 hours"))
                #expect(reason.contains("HTTP 500"))
                // The last attempt is within the day after the first failure; the next would be past it.
                #expect(time - 1000 <= 86_400)
                #expect(time + 3600 - 1000 > 86_400)
                #expect(waits.prefix(11) == [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600])
                #expect(attempts.count == waits.count + 1)
                return
            case .delivered:
                Issue.record("a failure is never a delivery")
                return
            }
        }
    }

    @Test func aLateAttemptCountsFromTheFirstFailure() {
        // The server was down for two days: the next failure is past the window, so disable.
        let attempts = [failure(at: 0), failure(at: 172_800, status: nil)]
        guard case .disable(let reason) = schedule.decision(after: attempts) else {
            Issue.record("expected disable")
            return
        }
        #expect(reason.contains("No answer"))
    }

    @Test func errorsAppearInTheReason() {
        let attempts = [WebhookAttempt(time: 0, status: nil, durationMs: 10_000, error: "No complete answer in time.")]
        let short = WebhookRetrySchedule(firstDelay: 5, maximumDelay: 3600, retryWindow: 1)
        #expect(short.decision(after: attempts) == .disable(reason: "No 2xx answer in 1 second (1 attempt); the last attempt: No complete answer in time."))
    }
}
