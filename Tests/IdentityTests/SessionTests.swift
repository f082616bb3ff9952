import Testing
@testable import Identity

@Suite struct SessionTests {
    @Test func tokensAreRandomAndStoredAsAHash() {
        let token = SessionToken.random()
        #expect(token.value.utf8.count == 43)
        #expect(token.hash.count == 32)
        #expect(SessionToken.random() != token)
        #expect(SessionToken(presented: token.value) == token)
    }

    @Test func idleExpiryIsThirtyDays() {
        #expect(!SessionToken.isExpired(lastUsed: 0, at: 30 * 86_400 - 1))
        #expect(SessionToken.isExpired(lastUsed: 0, at: 30 * 86_400))
    }

    @Test func setCookieCarriesTheProtections() {
        var generator = SeededGenerator(state: 7)
        let token = SessionToken.random(using: &generator)
        let plain = SessionCookie.setCookie(token, secure: false)
        #expect(plain == "healthd_session=\(token.value); Path=/; Max-Age=2592000; HttpOnly; SameSite=Strict")
        let secure = SessionCookie.setCookie(token, secure: true)
        #expect(secure == "__Host-healthd_session=\(token.value); Path=/; Max-Age=2592000; HttpOnly; SameSite=Strict; Secure")
        #expect(!secure.contains("Domain"))
        #expect(SessionCookie.clearCookie(secure: true) == "__Host-healthd_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure")
    }

    @Test func readsTheSessionFromACookieHeader() {
        let token = SessionToken.random()
        #expect(SessionCookie.token(fromCookieHeader: "theme=dark; healthd_session=\(token.value); lang=en", secure: false) == token)
        #expect(SessionCookie.token(fromCookieHeader: "healthd_session=\"\(token.value)\"", secure: false) == token)
        #expect(SessionCookie.token(fromCookieHeader: "__Host-healthd_session=\(token.value)", secure: true) == token)
        // The plain name is not read over https, nor the prefixed one over http.
        #expect(SessionCookie.token(fromCookieHeader: "healthd_session=\(token.value)", secure: true) == nil)
        #expect(SessionCookie.token(fromCookieHeader: "__Host-healthd_session=\(token.value)", secure: false) == nil)
        // The same value twice is one session; two values are refused.
        #expect(SessionCookie.token(fromCookieHeader: "healthd_session=\(token.value); healthd_session=\(token.value)", secure: false) == token)
        let other = SessionToken.random()
        #expect(SessionCookie.token(fromCookieHeader: "healthd_session=\(other.value); healthd_session=\(token.value)", secure: false) == nil)
    }

    @Test(arguments: [
        "", ";", ";;;;", "=", "==", "healthd_session", "healthd_session=", "healthd_session==",
        "healthd_session=short", "healthd_session=" + String(repeating: "A", count: 44),
        "healthd_session=" + String(repeating: "A", count: 42) + "B",
        "healthd_session=\"" + String(repeating: "A", count: 43),
        "healthd_session=" + String(repeating: "A", count: 42) + "\\",
        "Healthd_session=" + String(repeating: "A", count: 43),
        "healthd session=" + String(repeating: "A", count: 43),
        "healthd_session=" + String(repeating: "A", count: 21) + " " + String(repeating: "A", count: 21),
        "healthd_session=" + String(repeating: "A", count: 42) + "é",
        "healthd_session=\u{0}" + String(repeating: "A", count: 42),
    ])
    func refusesHostileCookieHeaders(_ header: String) {
        #expect(SessionCookie.token(fromCookieHeader: header, secure: false) == nil)
    }

    @Test func parsesPairsLeniently() {
        let pairs = CookieHeader.pairs(" a=1 ;\tb = 2;novalue; =x; c=\"3\"; d=\"; e=")
        #expect(pairs == [.init(name: "a", value: "1"), .init(name: "b", value: "2"), .init(name: "c", value: "3"), .init(name: "e", value: "")])
        #expect(CookieHeader.pairs(String(repeating: "a=1;", count: 1000)).count == CookieHeader.maximumPairs)
        // The session's cookie is found after more cookies than that (a host sharing a parent
        // domain's many cookies), and two different values of it still sign no one in.
        let token = SessionToken.random()
        let many = (0 ..< 200).map { "analytics\($0)=x" }.joined(separator: "; ")
        #expect(SessionCookie.token(fromCookieHeader: many + "; healthd_session=" + token.value, secure: false)?.hash == token.hash)
        #expect(SessionCookie.token(fromCookieHeader: "healthd_session=\(SessionToken.random().value); " + many
                                    + "; healthd_session=" + token.value, secure: false) == nil)
    }
}
