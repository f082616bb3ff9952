import HealthdSettings
import Testing
@testable import Identity

@Suite struct SignInLimiterTests {
    func address(_ text: String) throws -> IPAddress { try #require(IPAddress(text)) }

    @Test func tenFailuresLockTheAccountFromEveryAddressUntilTheWindowPasses() throws {
        var limiter = SignInLimiter()
        for attempt in 0 ..< 10 {
            #expect(limiter.retryAfter(name: "maria", address: try address("192.0.2.\(attempt + 1)"), at: Double(attempt)) == nil)
            limiter.recordFailure(name: "maria", address: try address("192.0.2.\(attempt + 1)"), at: Double(attempt))
        }
        // Locked from a fresh address, and whatever the case of the name; the first failure (t=0)
        // leaves the 900 s window at t=900.
        #expect(limiter.retryAfter(name: "maria", address: try address("198.51.100.7"), at: 10) == 890)
        #expect(limiter.retryAfter(name: "MARIA", address: try address("198.51.100.7"), at: 899.5) == 1)
        #expect(limiter.retryAfter(name: "maria", address: try address("198.51.100.7"), at: 900) == nil)
        // Another account is not affected.
        #expect(limiter.retryAfter(name: "ana", address: try address("198.51.100.7"), at: 10) == nil)
    }

    @Test func unknownNamesAreLimitedTheSameWay() throws {
        var limiter = SignInLimiter()
        for attempt in 0 ..< 10 { limiter.recordFailure(name: "nobody-\(attempt % 1)", address: try address("2001:db8::\(attempt)"), at: 0) }
        #expect(limiter.retryAfter(name: "nobody-0", address: try address("203.0.113.1"), at: 1) == 899)
    }

    /// A key is text any store can keep: PostgreSQL text cannot hold the NUL of a guessed name.
    @Test func anAccountKeyHasNoControlCharacters() {
        #expect(SignInLimiter.accountKey("Maria") == "maria")
        #expect(SignInLimiter.accountKey("A\u{0}b\u{7}") == "a\u{FFFD}b\u{FFFD}")
        #expect(SignInLimiter.accountKey("tab\there").unicodeScalars.allSatisfy { $0.properties.generalCategory != .control })
    }

    @Test func thirtyFailuresLockTheAddressForEveryName() throws {
        var limiter = SignInLimiter()
        for attempt in 0 ..< 30 { limiter.recordFailure(name: "name\(attempt)", address: try address("203.0.113.9"), at: Double(attempt)) }
        #expect(limiter.retryAfter(name: "someone-else", address: try address("203.0.113.9"), at: 30) == 870)
        #expect(limiter.retryAfter(name: "someone-else", address: try address("203.0.113.10"), at: 30) == nil)
    }

    @Test func ipv6AddressesInOneSlash64ShareOneBudget() throws {
        var limiter = SignInLimiter()
        for attempt in 0 ..< 30 {
            limiter.recordFailure(name: "name\(attempt)", address: try address("2001:db8:1:2::\(String(attempt + 1, radix: 16))"), at: 0)
        }
        #expect(limiter.retryAfter(name: "fresh", address: try address("2001:db8:1:2:ffff:ffff:ffff:ffff"), at: 1) == 899)
        #expect(limiter.retryAfter(name: "fresh", address: try address("2001:db8:1:3::1"), at: 1) == nil)
    }

    @Test func aLockoutHoldsWhateverTheNextAttemptWouldBe() throws {
        // The limiter is asked before the password is checked: no success path can clear it.
        var limiter = SignInLimiter()
        for attempt in 0 ..< 10 { limiter.recordFailure(name: "maria", address: try address("192.0.2.1"), at: Double(attempt)) }
        #expect(limiter.retryAfter(name: "maria", address: try address("192.0.2.1"), at: 100) != nil)
        #expect(limiter.retryAfter(name: "maria", address: try address("192.0.2.1"), at: 500) != nil)
    }

    @Test func theWindowSlides() {
        var window = AttemptWindow(limit: 3, window: 10)
        window.recordFailure("k", at: 0)
        window.recordFailure("k", at: 4)
        window.recordFailure("k", at: 8)
        #expect(window.retryAfter("k", at: 9) == 1)
        #expect(window.retryAfter("k", at: 10) == nil)
        window.recordFailure("k", at: 11)
        // 4, 8 and 11 are within (1, 11]: the next may try when 4 leaves, at 14.
        #expect(window.retryAfter("k", at: 11) == 3)
        window.prune(at: 100)
        #expect(window.keyCount == 0)
    }
}
