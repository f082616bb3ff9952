import HealthStore
import Identity

/// `SignInLimiter`'s rules (10 failures per account name, 30 per client address, in 15 minutes)
/// over failures kept in the store instead of one node's memory: every node serving the same data
/// counts the same failures, so more nodes do not mean more guesses, and a restart forgets none.
struct SignInThrottle: Sendable {
    let people: PeopleAccounts
    static let windowMilliseconds = Int64(SignInLimiter.window * 1000)

    /// The budget a name's guesses count against: every name that reads like it (`LookalikeNames.key`:
    /// "Maya", "MAYA", full-width "ｍａｙａ") signs in to the same account, so they share one.
    static func accountKey(_ name: String) -> String { SignInLimiter.accountKey(LookalikeNames.key(name)) }

    /// Seconds until this name may try from this address, or nil when it may try now.
    func retryAfter(accountKey: String, addressKey: String, nowMs: Int64) throws -> Int? {
        let since = nowMs - Self.windowMilliseconds
        return Self.retryAfter(accountFailures: try people.signInFailures(kind: .account, key: accountKey, sinceMs: since),
                               addressFailures: try people.signInFailures(kind: .address, key: addressKey, sinceMs: since), nowMs: nowMs)
    }

    func recordFailure(accountKey: String, addressKey: String, nowMs: Int64) throws {
        try people.recordSignInFailure(keys: [(.account, accountKey), (.address, addressKey)], atMs: nowMs,
                                       forgetBeforeMs: nowMs - Self.windowMilliseconds)
    }

    /// The answer `SignInLimiter` gives after these failures (times in ms, oldest first): its
    /// windows are replayed, so the two cannot disagree.
    static func retryAfter(accountFailures: [Int64], addressFailures: [Int64], nowMs: Int64) -> Int? {
        func window(_ limit: Int, _ times: [Int64]) -> Int? {
            var window = AttemptWindow(limit: limit, window: SignInLimiter.window)
            for time in times { window.recordFailure("", at: Double(time) / 1000) }
            return window.retryAfter("", at: Double(nowMs) / 1000)
        }
        return [window(SignInLimiter.accountLimit, accountFailures), window(SignInLimiter.addressLimit, addressFailures)]
            .compactMap { $0 }.max()
    }
}
