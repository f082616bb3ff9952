import Testing
@testable import HealthStore
@testable import SQLiteStore

@Suite struct SecureRandomTests {
    @Test func tokensAreLongAndDistinct() {
        let a = SecureRandom.token(prefix: "hd_"), b = SecureRandom.token(prefix: "hd_")
        #expect(a != b)
        #expect(a.hasPrefix("hd_") && a.count == 3 + 43)
        #expect(SecureRandom.bytes(32).count == 32 && SecureRandom.bytes(32) != SecureRandom.bytes(32))
    }
}
