import Testing
@testable import Identity

@Suite struct UserNameTests {
    @Test(arguments: ["maya", "Maya Okafor", "José", "李小龍", "o'brien-smith", "family 👩‍👩‍👧"])
    func acceptsNamesPeopleHave(_ name: String) {
        #expect(UserName.problem(name) == nil)
    }

    @Test(arguments: ["", " maya", "maya ", "ma\nya", "ma\u{7}ya", "\u{1B}[2Jmaya", "ma\u{0}ya", "\u{202E}ayam", "ma\u{200B}ya",
                      "maya\u{2028}", "\u{2066}maya\u{2069}", "\u{FEFF}maya"])
    func refusesNamesThatHideOrControlSomething(_ name: String) {
        #expect(UserName.problem(name) != nil)
    }

    @Test func refusesOverlongNames() {
        #expect(UserName.problem(String(repeating: "a", count: 200)) == nil)
        #expect(UserName.problem(String(repeating: "a", count: 201)) != nil)
    }
}

/// App names follow the same rule (the sheet shows them); a reason may span lines and hold the
/// marks right-to-left text needs, never the controls that reorder what is shown.
@Suite struct VisibleTextTests {
    @Test func appNamesAreVisibleNames() {
        #expect(AppName.problem("Runner") == nil)
        #expect(AppName.problem("\u{202E}ppa-htlaeH") != nil)
        #expect(AppName.problem(String(repeating: "a", count: AppName.maximumLength + 1)) != nil)
    }

    @Test(arguments: ["Counts your runs.", "two\nlines", "סופר \u{200F}steps", "👩‍👩‍👧 family"])
    func acceptsReasonsAsPeopleWriteThem(_ text: String) {
        #expect(VisibleName.textProblem(text) == nil)
    }

    @Test(arguments: ["a\u{202E}b", "\u{2066}x\u{2069}", "a\u{202A}b", "tab\there", "a\u{2028}b", "nul\u{0}"])
    func refusesReasonsThatReorderOrControlWhatIsShown(_ text: String) {
        #expect(VisibleName.textProblem(text) != nil)
    }
}
