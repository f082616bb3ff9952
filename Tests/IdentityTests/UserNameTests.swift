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
