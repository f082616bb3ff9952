import Testing
@testable import Identity

/// A deterministic generator (SplitMix64) for codes made in tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct UserCodeTests {
    @Test func randomCodesUseTheAlphabetAndShowWithADash() {
        var generator = SeededGenerator(state: 1)
        var seen = Set<Character>()
        for _ in 0 ..< 200 {
            let code = UserCode.random(using: &generator)
            #expect(code.letters.count == 8)
            #expect(code.letters.allSatisfy { UserCode.alphabet.contains($0) })
            let shown = code.description
            #expect(shown.count == 9 && Array(shown)[4] == "-")
            #expect(UserCode(shown) == code)
            seen.formUnion(code.letters)
        }
        #expect(seen.count == 20)
        #expect(UserCode.random() != UserCode.random())
    }

    @Test(arguments: ["BCDF-GHJK", "bcdfghjk", "bcdf-ghjk", " BcDf GhJk ", "BCDF - GHJK", "B-C-D-F-G-H-J-K"])
    func normalizesInput(_ input: String) {
        #expect(UserCode(input)?.letters == "BCDFGHJK")
    }

    @Test(arguments: ["", "BCDF-GHJ", "BCDF-GHJKL", "ABCD-FGHJ", "BCDF-GHJ0", "BCDF_GHJK", "BCDF-GHJＫ", "BCDF-GHJK\u{0301}", "ＢCDF-GHJK"])
    func refusesWhatIsNotACode(_ input: String) {
        #expect(UserCode(input) == nil)
    }
}

@Suite struct DeviceCodeTests {
    @Test func deviceCodesAreRandomAndStoredAsAHash() {
        let code = DeviceCode.random()
        #expect(code.value.utf8.count == 43)
        #expect(code.hash.count == 32)
        #expect(DeviceCode(presented: code.value) == code)
        #expect(DeviceCode.random() != code)
        #expect(DeviceCode.random().hash != code.hash)
    }

    @Test(arguments: ["", "short", String(repeating: "A", count: 44), String(repeating: "=", count: 43), String(repeating: "A", count: 42) + "B"])
    func refusesMalformedDeviceCodes(_ presented: String) {
        #expect(DeviceCode(presented: presented) == nil)
    }
}

@Suite struct DeviceAuthorizationTests {
    @Test func pendingThenAllowedIssuesExactlyOnce() throws {
        var request = DeviceAuthorization(created: 1000)
        #expect(request.poll(at: 1000) == .authorizationPending)
        #expect(request.poll(at: 1005) == .authorizationPending)
        try request.decide(allow: true, share: ["HKQuantityTypeIdentifierStepCount"], read: ["HKQuantityTypeIdentifierHeartRate"], at: 1007)
        #expect(request.poll(at: 1010) == .issue(share: ["HKQuantityTypeIdentifierStepCount"], read: ["HKQuantityTypeIdentifierHeartRate"]))
        #expect(request.state == .issued)
        // Replay of the spent device code, at any pace and even after expiry.
        #expect(request.poll(at: 1020) == .invalidGrant)
        #expect(request.poll(at: 1020.5) == .invalidGrant)
        #expect(request.poll(at: 5000) == .invalidGrant)
        #expect(DeviceAuthorization.PollAnswer.invalidGrant.error == "invalid_grant")
    }

    @Test func pollingFasterThanTheIntervalSlowsDownByFiveSecondsEachTime() {
        var request = DeviceAuthorization(created: 0)
        #expect(request.poll(at: 0) == .authorizationPending)
        #expect(request.poll(at: 1) == .slowDown(interval: 10))
        #expect(request.interval == 10)
        // The interval now runs from the last poll, and is 10 s.
        #expect(request.poll(at: 9) == .slowDown(interval: 15))
        #expect(request.poll(at: 24) == .authorizationPending)
        #expect(request.poll(at: 39) == .authorizationPending)
        #expect(request.interval == 15)
        #expect(DeviceAuthorization.PollAnswer.slowDown(interval: 15).error == "slow_down")
    }

    @Test func deniedAnswersAccessDenied() throws {
        var request = DeviceAuthorization(created: 0)
        try request.decide(allow: false, share: [], read: [], at: 30)
        #expect(request.poll(at: 40) == .accessDenied)
        #expect(request.poll(at: 50) == .accessDenied)
        #expect(DeviceAuthorization.PollAnswer.accessDenied.error == "access_denied")
    }

    @Test func expiresAfterSixHundredSeconds() throws {
        var request = DeviceAuthorization(created: 100)
        #expect(request.poll(at: 699.9) == .authorizationPending)
        #expect(request.poll(at: 700) == .expiredToken)
        #expect(throws: DeviceAuthorization.DecisionError.expired) {
            try request.decide(allow: true, share: [], read: [], at: 700)
        }
        var allowedLate = DeviceAuthorization(created: 100)
        try allowedLate.decide(allow: true, share: ["a"], read: [], at: 600)
        #expect(allowedLate.poll(at: 700) == .expiredToken)
        #expect(DeviceAuthorization.PollAnswer.expiredToken.error == "expired_token")
    }

    @Test func decidesOnlyOnce() throws {
        var request = DeviceAuthorization(created: 0)
        try request.decide(allow: false, share: [], read: [], at: 1)
        #expect(throws: DeviceAuthorization.DecisionError.alreadyDecided) {
            try request.decide(allow: true, share: ["a"], read: ["b"], at: 2)
        }
        #expect(request.state == .denied)
    }

    @Test func storedFieldsRoundTrip() {
        var request = DeviceAuthorization(created: 0)
        _ = request.poll(at: 0)
        _ = request.poll(at: 1)
        var restored = DeviceAuthorization(state: request.state, created: request.created, interval: request.interval, lastPoll: request.lastPoll)
        #expect(restored == request)
        #expect(restored.poll(at: 5) == .slowDown(interval: 15))
    }
}
