import Testing
@testable import Identity

@Suite struct PasswordPolicyTests {
    let policy = PasswordPolicy.standard

    @Test func shipsTenThousandCommonPasswords() {
        #expect(policy.commonPasswordCount == 10_000)
        #expect(policy.commonPasswords.allSatisfy { $0 == Substring($0.lowercased()) })
        #expect(policy.commonPasswords.contains("password") && policy.commonPasswords.contains("123456"))
    }

    @Test(arguments: ["1234567890", "qwertyuiop", "PASSWORD123", "1q2w3e4r5t", "Qwertyuiop"])
    func refusesCommonPasswords(_ password: String) {
        #expect(policy.refusal(of: password, name: "maria") == .common)
    }

    @Test(arguments: ["password1234", "Password123!", "Iloveyou2024", "!!qwertyuiop", "2024monkey!!", "dragon 12345", "Sunshine_1990"])
    func refusesCommonPasswordsWithDigitsOrSymbolsAround(_ password: String) {
        #expect(policy.refusal(of: password, name: "maria") == .common)
    }

    @Test func aCommonWordInsideALongerPasswordIsNotRefused() {
        // Only what is around a common password is looked through, never the middle of a phrase.
        #expect(policy.refusal(of: "1 dragon flies home", name: "maria") == nil)
        #expect(policy.refusal(of: "abc!12345678", name: "maria") == nil)
    }

    @Test func refusesShortPasswords() {
        #expect(policy.refusal(of: "k7#vQ2!pz", name: "maria") == .tooShort(minimum: 10))
        #expect(policy.refusal(of: "", name: "maria") == .tooShort(minimum: 10))
        // Ten characters as the person sees them, though more bytes and scalars.
        #expect(policy.refusal(of: "🇩🇪🇫🇷🇮🇹k7#vQ2!", name: "maria") == nil)
        #expect(policy.refusal(of: "🇩🇪🇫🇷🇮🇹k7#vQ2", name: "maria") == .tooShort(minimum: 10))
    }

    @Test func refusesOverlongPasswords() {
        let long = String(repeating: "k7#vQ2!pz", count: 200)
        #expect(policy.refusal(of: long, name: "maria") == .tooLong(maximumBytes: 1024))
    }

    @Test(arguments: ["zzzzzzzzzzzz", "ZZZZZZZZZZz", "xyxyxyxyxyxy", "abcabcabcabc", "k7#qk7#qk7#q", "ééééééééééé"])
    func refusesRepetitions(_ password: String) {
        #expect(policy.refusal(of: password, name: "maria") == .repetition)
    }

    @Test(arguments: ["bcdefghijklm", "BCDEFGHIJKLM", "98765432109", "23456789012", "zyxwvutsrqpo", "mnopqrstuvwxyz"])
    func refusesSequences(_ password: String) {
        #expect(policy.refusal(of: password, name: "maria") == .sequence)
    }

    @Test func refusesTheOwnName() {
        #expect(policy.refusal(of: "Gonzalez-k7#vQ2", name: "gonzalez") == .containsName)
        #expect(policy.refusal(of: "k7#vQ2!pzMARIAx", name: " Maria ") == .containsName)
        // A name too short to matter is not searched for.
        #expect(policy.refusal(of: "k7#vQ2!pzalx", name: "al") == nil)
    }

    @Test(arguments: ["correct horse battery staple", "k7#vQ2!pzL", "Sleep at 23:00, run at 7", "abcdefghik"])
    func acceptsReasonablePasswords(_ password: String) {
        #expect(policy.refusal(of: password, name: "maria") == nil)
    }

    @Test func everyRefusalHasAReason() {
        let refusals: [PasswordRefusal] = [.tooShort(minimum: 10), .tooLong(maximumBytes: 1024), .common, .repetition, .sequence, .containsName]
        #expect(Set(refusals.map(\.reason)).count == refusals.count)
        #expect(PasswordRefusal.tooShort(minimum: 10).reason.contains("10"))
    }
}
