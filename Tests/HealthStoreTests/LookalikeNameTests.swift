import Testing
import HealthStore

/// Two account names that read alike share a key; names that differ in letters or accents do not.
@Suite struct LookalikeNameTests {
    @Test(arguments: [("Maya", "maya"), ("MAYA", "maya"), ("ｍａｙａ", "maya"), ("José", "Jose\u{301}"), ("ﬁona", "fiona"),
                      ("Straße", "STRASSE"), ("李小龍", "李小龍")])
    func namesThatReadAlikeShareAKey(_ pair: (String, String)) {
        #expect(LookalikeNames.key(pair.0) == LookalikeNames.key(pair.1))
    }

    @Test(arguments: [("José", "Jose"), ("maya", "mayan"), ("ana", "anna"), ("Zoë", "Zoe")])
    func namesThatDifferKeepTheirOwnKey(_ pair: (String, String)) {
        #expect(LookalikeNames.key(pair.0) != LookalikeNames.key(pair.1))
    }

    @Test func theExistingLookalikeIsNamed() {
        #expect(LookalikeNames.existing("MAYA", among: ["ada", "Maya"]) == "Maya")
        #expect(LookalikeNames.existing("Mayan", among: ["ada", "Maya"]) == nil)
    }
}
