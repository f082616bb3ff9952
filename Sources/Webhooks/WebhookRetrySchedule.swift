// When to try a page again: about 5 s doubling to 1 h between attempts, for 24 hours after the
// page's first failure; then the subscription is disabled and says why.

/// One attempt at delivering a page.
public struct WebhookAttempt: Sendable, Equatable {
    /// Seconds since 1970.
    public var time: Double
    /// The HTTP status, or nil when no answer came (refused, timed out, unreachable).
    public var status: Int?
    public var durationMs: Int
    /// Why it failed, for the deliveries list; nil for a delivery.
    public var error: String?

    public init(time: Double, status: Int?, durationMs: Int, error: String?) {
        self.time = time
        self.status = status
        self.durationMs = durationMs
        self.error = error
    }

    /// A 2xx counts as delivered; a 3xx is not followed and counts as a failure.
    public var delivered: Bool { status.map { (200..<300).contains($0) } ?? false }

    /// What the deliveries list shows for a failure.
    public var failureDescription: String {
        if let error { return error }
        if let status { return "The receiver answered HTTP \(status)." }
        return "No answer from the receiver."
    }
}

public enum WebhookRetryDecision: Sendable, Equatable {
    /// The last attempt delivered the page.
    case delivered
    case retry(at: Double)
    case disable(reason: String)
}

public struct WebhookRetrySchedule: Sendable, Equatable {
    public var firstDelay: Double
    public var maximumDelay: Double
    /// How long after a page's first failed attempt it is still retried.
    public var retryWindow: Double

    public init(firstDelay: Double = 5, maximumDelay: Double = 3600, retryWindow: Double = 86_400) {
        self.firstDelay = firstDelay
        self.maximumDelay = maximumDelay
        self.retryWindow = retryWindow
    }

    /// The wait after the `failures`-th consecutive failure (1-based).
    public func delay(afterFailure failures: Int) -> Double {
        guard failures > 0 else { return 0 }
        // 2^(n-1) overflows nothing: past the cap the doubling stops.
        var delay = firstDelay
        for _ in 1..<min(failures, 64) {
            delay *= 2
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }

    /// The decision after the attempts made so far at one page, oldest first. An empty history
    /// is due now.
    public func decision(after attempts: [WebhookAttempt]) -> WebhookRetryDecision {
        guard let last = attempts.last else { return .retry(at: 0) }
        if last.delivered { return .delivered }
        // The run of failures since the page's last delivery (a page is delivered at most once, so
        // in practice the whole history).
        let failures = attempts.reversed().prefix { !$0.delivered }
        let firstFailure = failures.last?.time ?? last.time
        let next = last.time + delay(afterFailure: failures.count)
        if next > firstFailure + retryWindow {
            return .disable(reason: "No 2xx answer in \(Self.describe(retryWindow)) (\(Self.count(failures.count, "attempt"))); "
                + "the last attempt: \(last.failureDescription)")
        }
        return .retry(at: next)
    }

    private static func describe(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        return whole >= 3600 && whole % 3600 == 0 ? count(whole / 3600, "hour") : count(whole, "second")
    }

    private static func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
}
