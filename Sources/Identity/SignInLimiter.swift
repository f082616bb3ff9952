import HealthdSettings

/// Failures of one kind under one key within a sliding window: after `limit` of them, further
/// attempts wait until the oldest leaves the window. Times are seconds from an injected clock.
public struct AttemptWindow: Sendable {
    public let limit: Int
    public let window: Double
    private var failures: [String: [Double]] = [:]

    public init(limit: Int, window: Double) {
        self.limit = limit
        self.window = window
    }

    /// Seconds until `key` may try again (at least 1), or nil when it may try now.
    public func retryAfter(_ key: String, at now: Double) -> Int? {
        let recent = (failures[key] ?? []).filter { $0 > now - window }
        guard recent.count >= limit else { return nil }
        // The attempt that must leave the window before the count drops below the limit.
        let freeing = recent[recent.count - limit]
        return max(1, Int((freeing + window - now).rounded(.up)))
    }

    public mutating func recordFailure(_ key: String, at now: Double) {
        var recent = (failures[key] ?? []).filter { $0 > now - window }
        recent.append(now)
        // Only the last `limit` failures decide when the key may try again.
        failures[key] = Array(recent.suffix(limit))
    }

    /// Forgets keys whose failures have all left the window (call now and then, so names an
    /// attacker made up do not pile up).
    public mutating func prune(at now: Double) {
        failures = failures.compactMapValues { times in
            let recent = times.filter { $0 > now - window }
            return recent.isEmpty ? nil : recent
        }
    }

    public var keyCount: Int { failures.count }
}

/// Failed sign-ins, limited per account name (whatever the address; a name with no account
/// counts the same way, so the answer does not tell which names exist) and per client address
/// (IPv6 per /64). Check `retryAfter` before checking the password: while it answers a value the
/// sign-in is refused with 429 and `Retry-After`, even with the right password.
public struct SignInLimiter: Sendable {
    public static let accountLimit = 10
    public static let addressLimit = 30
    public static let window: Double = 15 * 60
    /// Past this many keys, each failure also prunes keys with no recent failures.
    static let pruneThreshold = 10_000

    private var accounts = AttemptWindow(limit: accountLimit, window: window)
    private var addresses = AttemptWindow(limit: addressLimit, window: window)

    public init() {}

    /// Names compare case-insensitively here, so `Alice` and `alice` share one budget. A control
    /// character (no name has one) becomes U+FFFD, so every key is text any store can keep
    /// (PostgreSQL text cannot hold a NUL); a guess at such a name still counts.
    public static func accountKey(_ name: String) -> String {
        let key = name.lowercased()
        guard key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return key }
        var replaced = String.UnicodeScalarView()
        for scalar in key.unicodeScalars {
            replaced.append(scalar.properties.generalCategory == .control ? "\u{FFFD}" : scalar)
        }
        return String(replaced)
    }

    /// Seconds to wait before this name may try from this address, or nil when it may try now.
    public func retryAfter(name: String, address: IPAddress, at now: Double) -> Int? {
        let waits = [accounts.retryAfter(Self.accountKey(name), at: now), addresses.retryAfter(address.rateLimitKey, at: now)]
        return waits.compactMap { $0 }.max()
    }

    /// A wrong password, or a name with no account.
    public mutating func recordFailure(name: String, address: IPAddress, at now: Double) {
        accounts.recordFailure(Self.accountKey(name), at: now)
        addresses.recordFailure(address.rateLimitKey, at: now)
        if accounts.keyCount + addresses.keyCount > Self.pruneThreshold {
            accounts.prune(at: now)
            addresses.prune(at: now)
        }
    }
}
