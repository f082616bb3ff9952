import Crypto

/// RFC 8628's user code: 8 letters from 20 consonants (no vowels, so no words; no letters that look
/// like digits), about 34.6 bits. Shown as `XXXX-XXXX`; typed in any case, with or without the
/// dash and spaces. Guessing is bounded by limiting attempts per person (`AttemptWindow`) and by
/// the request's 600 s life.
public struct UserCode: Hashable, Sendable, CustomStringConvertible {
    public static let alphabet: [Character] = Array("BCDFGHJKLMNPQRSTVWXZ")
    public static let length = 8

    /// The 8 letters, upper case, no dash: what the store keys on.
    public let letters: String

    /// Parses what a person typed or a link carried: letters of the alphabet in either case, with
    /// dashes and spaces anywhere ignored; nil for anything else.
    public init?(_ input: some StringProtocol) {
        var letters = ""
        for character in input {
            if character == "-" || character == " " || character == "\u{00A0}" || character == "\t" { continue }
            guard let upper = character.uppercased().first, character.uppercased().count == 1, Self.alphabet.contains(upper) else { return nil }
            letters.append(upper)
            if letters.count > Self.length { return nil }
        }
        guard letters.count == Self.length else { return nil }
        self.letters = letters
    }

    /// A new code from the generator (the system's CSPRNG in production), each letter uniform.
    public static func random(using generator: inout some RandomNumberGenerator) -> UserCode {
        var letters = ""
        for _ in 0 ..< length { letters.append(alphabet[Int.random(in: 0 ..< alphabet.count, using: &generator)]) }
        return UserCode(unchecked: letters)
    }

    public static func random() -> UserCode {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    private init(unchecked letters: String) { self.letters = letters }

    /// `XXXX-XXXX`, as shown to the person.
    public var description: String { String(letters.prefix(4)) + "-" + String(letters.suffix(4)) }
}

/// RFC 8628's device code: 32 random bytes the app polls with, base64url. The store keeps only
/// its SHA-256 (`hash`), so a copy of the database cannot poll for anyone's token.
public struct DeviceCode: Sendable, Equatable {
    public let value: String

    public static func random(using generator: inout some RandomNumberGenerator) -> DeviceCode {
        DeviceCode(value: Base64URL.encode(RandomBytes.make(32, using: &generator)))
    }

    public static func random() -> DeviceCode {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    private init(value: String) { self.value = value }

    /// What a poll carried, if it has the shape of a device code (43 base64url characters of 32 bytes).
    public init?(presented: String) {
        guard presented.utf8.count == 43, let bytes = Base64URL.decode(presented), bytes.count == 32,
              Base64URL.encode(bytes) == presented else { return nil }
        value = presented
    }

    /// The stored form.
    public var hash: [UInt8] { SHA256.hash(Array(value.utf8)) }
}

/// One permission request's life on the server, as a value the store saves (times in seconds since
/// 1970 from an injected clock). The poll and the person's decision are the only ways it changes.
public struct DeviceAuthorization: Sendable, Equatable {
    public static let lifetime: Double = 600
    public static let initialInterval = 5
    /// RFC 8628 section 3.5: each slow_down adds 5 seconds to the interval.
    public static let slowDownIncrement = 5

    public enum State: Sendable, Equatable {
        case pending
        /// The person allowed (some of) the asked types; `share`/`read` are what they turned on.
        case allowed(share: [String], read: [String])
        case denied
        /// The token was handed out; the device code is spent.
        case issued
    }

    /// What the token endpoint answers a poll.
    public enum PollAnswer: Sendable, Equatable {
        case authorizationPending
        /// Polled sooner than `interval` after the last poll; carries the new interval.
        case slowDown(interval: Int)
        case accessDenied
        case expiredToken
        /// Issue the token now (exactly once) for these granted types. The answer to the app names only
        /// `share`: the read decision is never disclosed.
        case issue(share: [String], read: [String])
        /// The device code was already exchanged (RFC 6749's error for a spent grant).
        case invalidGrant

        /// The `error` member of the 400 answer; nil for `issue`.
        public var error: String? {
            switch self {
            case .authorizationPending: "authorization_pending"
            case .slowDown: "slow_down"
            case .accessDenied: "access_denied"
            case .expiredToken: "expired_token"
            case .invalidGrant: "invalid_grant"
            case .issue: nil
            }
        }
    }

    public enum DecisionError: Error, Sendable, Equatable {
        case expired
        case alreadyDecided
    }

    public private(set) var state: State
    public let created: Double
    public private(set) var interval: Int
    public private(set) var lastPoll: Double?

    public init(created: Double) {
        state = .pending
        self.created = created
        interval = Self.initialInterval
        lastPoll = nil
    }

    /// The stored fields, as a store reads them back.
    public init(state: State, created: Double, interval: Int, lastPoll: Double?) {
        self.state = state
        self.created = created
        self.interval = interval
        self.lastPoll = lastPoll
    }

    public var expires: Double { created + Self.lifetime }

    public func isExpired(at now: Double) -> Bool { now >= expires }

    /// One poll by the app at `now`. A spent code answers invalid_grant whatever the time; then
    /// expiry; then a poll sooner than the interval slows the app down (and counts as its last poll);
    /// then the state. Allowed answers `issue` once and moves to `issued`.
    public mutating func poll(at now: Double) -> PollAnswer {
        if state == .issued { return .invalidGrant }
        if isExpired(at: now) { return .expiredToken }
        defer { lastPoll = now }
        if let last = lastPoll, now - last < Double(interval) {
            interval += Self.slowDownIncrement
            return .slowDown(interval: interval)
        }
        switch state {
        case .pending: return .authorizationPending
        case .denied: return .accessDenied
        case .allowed(let share, let read):
            state = .issued
            return .issue(share: share, read: read)
        case .issued: return .invalidGrant
        }
    }

    /// The person's answer on the sheet: allow with the types they turned on, or deny. Only a
    /// pending, unexpired request can be decided.
    public mutating func decide(allow: Bool, share: [String], read: [String], at now: Double) throws(DecisionError) {
        guard !isExpired(at: now) else { throw .expired }
        guard state == .pending else { throw .alreadyDecided }
        state = allow ? .allowed(share: share, read: read) : .denied
    }
}
