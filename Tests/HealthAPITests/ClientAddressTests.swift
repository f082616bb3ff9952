import HealthdSettings
import HTTP
import Testing
@testable import HealthAPI

@Suite struct ClientAddressTests {
    private func headers(_ pairs: [(String, String)]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for (name, value) in pairs { headers.add(name, value) }
        return headers
    }

    private func resolver(_ blocks: [String], _ header: ForwardedHeader = .xForwardedFor) -> ClientAddressResolver {
        ClientAddressResolver(trustedProxies: blocks.compactMap(CIDRBlock.init), header: header)
    }

    @Test func addressesAndBlocks() throws {
        #expect(IPAddress("192.0.2.1")?.description == "192.0.2.1")
        #expect(IPAddress("2001:DB8:0:0::1")?.description == "2001:db8::1")
        // A dual-stack socket reports IPv4 peers as IPv4-mapped IPv6: the same address.
        #expect(IPAddress("::ffff:192.0.2.1") == IPAddress("192.0.2.1"))
        #expect(IPAddress("::ffff:192.0.2.1")?.description == "192.0.2.1")
        for bad in ["", "192.0.2", "192.0.2.256", "example.com", "[::1]", "1.2.3.4:80", "unknown"] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
        let ten = try #require(CIDRBlock("10.0.0.0/8"))
        #expect(ten.contains(try #require(IPAddress("10.255.1.2"))))
        #expect(!ten.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(!ten.contains(try #require(IPAddress("::a00:1"))), "an IPv6 address is not in an IPv4 block")
        let odd = try #require(CIDRBlock("192.168.4.0/22"))
        #expect(odd.contains(try #require(IPAddress("192.168.7.255"))))
        #expect(!odd.contains(try #require(IPAddress("192.168.8.0"))))
        let v6 = try #require(CIDRBlock("fd00::/8"))
        #expect(v6.contains(try #require(IPAddress("fd12:3456::1"))))
        #expect(!v6.contains(try #require(IPAddress("fe80::1"))))
        #expect(CIDRBlock("0.0.0.0/0")?.contains(try #require(IPAddress("203.0.113.9"))) == true)
        #expect(CIDRBlock("192.0.2.7")?.description == "192.0.2.7/32")
        for bad in ["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/8/8", "10.0.0.0/-1", "10.0.0.0/ 8", "host/8"] {
            #expect(CIDRBlock(bad) == nil, "\(bad)")
        }
    }

    @Test func anUntrustedPeerIsTheClientWhateverItsHeadersSay() {
        let proxies = resolver(["10.0.0.0/8"])
        let forged = headers([("X-Forwarded-For", "198.51.100.7"), ("Forwarded", "for=198.51.100.8")])
        #expect(proxies.clientAddress(peer: "203.0.113.5", headers: forged) == "203.0.113.5")
        #expect(resolver([]).clientAddress(peer: "10.0.0.1", headers: forged) == "10.0.0.1", "no trusted proxies: headers ignored")
    }

    @Test func behindTrustedProxiesTheRightmostUntrustedHopIsTheClient() {
        let proxies = resolver(["10.0.0.0/8", "2001:db8:ffff::/48"])
        // The client forged the first entry; the proxy appended what it saw (198.51.100.7).
        let chain = headers([("X-Forwarded-For", "1.2.3.4, 198.51.100.7")])
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: chain) == "198.51.100.7")
        // Two proxies: the inner one's address is skipped as trusted.
        let twoHops = headers([("X-Forwarded-For", "1.2.3.4, 198.51.100.7, 10.1.1.1")])
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: twoHops) == "198.51.100.7")
        // Field lines are one list, in order; ports and IPv4-mapped forms normalize.
        let lines = headers([("X-Forwarded-For", "1.2.3.4"), ("x-forwarded-for", "198.51.100.9:5555 , 10.2.2.2")])
        #expect(proxies.clientAddress(peer: "::ffff:10.0.0.2", headers: lines) == "198.51.100.9")
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([("X-Forwarded-For", "[2001:db8::5]:443")])) == "2001:db8::5")
        // Every hop trusted: the leftmost one is the best there is.
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([("X-Forwarded-For", "10.9.9.9, 10.8.8.8")])) == "10.9.9.9")
        // No header from a trusted peer: the peer itself (a health check from the proxy).
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([])) == "10.0.0.2")
        // A hop that is not an address stops the walk at the last trusted hop.
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([("X-Forwarded-For", "198.51.100.7, garbage")])) == "10.0.0.2")
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([("X-Forwarded-For", "198.51.100.7, , 10.3.3.3")])) == "10.3.3.3")
        // The other header is not read: a proxy that appends X-Forwarded-For passes a forged Forwarded on.
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([("Forwarded", "for=198.51.100.8")])) == "10.0.0.2")
    }

    @Test func forwardedHeaderOfRFC7239() {
        let proxies = resolver(["10.0.0.0/8"], .forwarded)
        let rfcExample = headers([("Forwarded", #"for=192.0.2.43, for="[2001:db8:cafe::17]:4711";proto=https, For=10.4.4.4;by=10.0.0.1"#)])
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: rfcExample) == "2001:db8:cafe::17")
        let quotedV4 = headers([("Forwarded", #"proto=http;for="198.51.100.17:8080";host="a,b;c""#)])
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: quotedV4) == "198.51.100.17")
        // `unknown` and obfuscated identifiers name nobody: the proxy that wrote them is the client.
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([("Forwarded", "for=unknown")])) == "10.0.0.2")
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([("Forwarded", "for=_hidden, for=10.5.5.5")])) == "10.5.5.5")
        // An element without `for` is a hop we cannot name.
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([("Forwarded", "for=198.51.100.1, proto=https")])) == "10.0.0.2")
        #expect(proxies.clientAddress(peer: "10.0.0.2", headers: headers([("X-Forwarded-For", "198.51.100.1")])) == "10.0.0.2")
    }
}

@Suite struct ClientLimitTests {
    /// A valid token's requests count against the token only: one address with a legitimate
    /// load never meets the address budget, while unauthenticated traffic from it does.
    @Test func aValidTokenIsLimitedByItsTokenNotItsAddress() throws {
        let server = try TestServer {
            $0.rateLimitPerAddressPerSecond = 0.01
            $0.rateLimitPerAddressBurst = 5
        }
        let user = server.createUser("busy")
        let token = server.token(user: user, app: "phone", read: ["stepCount"], share: ["stepCount"])
        for _ in 0 ..< 50 { #expect(server.request(.get, "/v1/samples?type=stepCount", token: token).status == 200) }
        let statuses = (0 ..< 6).map { _ in server.request(.get, "/healthz").status }
        #expect(statuses.filter { $0 == 200 }.count == 5 && statuses.last == 429, "\(statuses)")
        let refused = server.request(.get, "/healthz")
        #expect(refused.code == "errorRateLimited" && refused.headers["Retry-After"] != nil)
        // Still fine with the token: its own bucket is far from empty.
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: token).status == 200)
        // A token on an open route does not escape the address budget.
        #expect(server.request(.get, "/healthz", token: token).status == 429)
    }

    /// Once an address has spent its budget on failed guesses, a token not seen lately is refused
    /// before any SQLite lookup; a token in use goes on working.
    @Test func anAddressOutOfBudgetCannotMakeTheServerLookUpTokens() throws {
        let server = try TestServer {
            $0.rateLimitPerAddressPerSecond = 0.01
            $0.rateLimitPerAddressBurst = 100
            $0.authenticationFailureCost = 60
        }
        let user = server.createUser("guessed")
        let token = server.token(user: user, app: "phone", read: ["stepCount"], share: [])
        let fresh = server.token(user: user, app: "watch", read: ["stepCount"], share: [])
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: token).status == 200)
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: "guess-1").status == 401)
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: "guess-2").status == 401)
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: "guess-3").status == 429)
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: fresh).status == 429, "not looked up while out of budget")
        #expect(server.request(.get, "/v1/samples?type=stepCount", token: token).status == 200, "a token in use is not locked out")
    }

    @Test func behindATrustedProxyEachClientHasItsOwnBudget() throws {
        let server = try TestServer {
            $0.rateLimitPerAddressPerSecond = 0.01
            $0.rateLimitPerAddressBurst = 2
            $0.trustedProxies = [CIDRBlock("10.0.0.0/8")].compactMap { $0 }
        }
        func healthz(_ client: String, via peer: String) -> Int {
            server.request(.get, "/healthz", headers: [("X-Forwarded-For", client)], remote: peer).status
        }
        #expect([healthz("198.51.100.1", via: "10.0.0.2"), healthz("198.51.100.1", via: "10.0.0.2"),
                 healthz("198.51.100.1", via: "10.0.0.2")] == [200, 200, 429])
        #expect(healthz("198.51.100.2", via: "10.0.0.2") == 200, "another client behind the same proxy")
        // An untrusted peer cannot pick a fresh address with the header.
        #expect([healthz("198.51.100.3", via: "203.0.113.9"), healthz("198.51.100.4", via: "203.0.113.9"),
                 healthz("198.51.100.5", via: "203.0.113.9")] == [200, 200, 429])
    }

    @Test("rate limits count IPv4 per address and IPv6 per /64")
    func rateLimitKeys() {
        #expect(ClientAddressResolver.rateLimitKey("198.51.100.7") == "198.51.100.7")
        #expect(ClientAddressResolver.rateLimitKey("::ffff:198.51.100.7") == "198.51.100.7")
        #expect(ClientAddressResolver.rateLimitKey("2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64")
        #expect(ClientAddressResolver.rateLimitKey("2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(ClientAddressResolver.rateLimitKey("2001:db8:1:3::1") == "2001:db8:1:3::/64")
        #expect(ClientAddressResolver.rateLimitKey("::1") == "::/64")
        #expect(ClientAddressResolver.rateLimitKey("unix") == "unix")
    }

    @Test("addresses rotating within one IPv6 /64 share one failed-authentication budget; IPv4 neighbours do not")
    func rotatingIPv6AddressesShareTheBudget() throws {
        let server = try TestServer {
            $0.rateLimitPerAddressPerSecond = 0.01
            $0.rateLimitPerAddressBurst = 100
            $0.authenticationFailureCost = 60
        }
        func guess(_ remote: String) -> Int {
            server.request(.get, "/v1/samples?type=stepCount", token: "guess-\(remote)", remote: remote).status
        }
        // Each guess costs 61 of 100: two from anywhere in the /64 spend it.
        #expect(guess("2001:db8:5:6::1") == 401)
        #expect(guess("2001:db8:5:6:1234:5678:9abc:def0") == 401)
        #expect(guess("2001:db8:5:6::ffff") == 429)
        #expect(server.request(.get, "/healthz", remote: "2001:db8:5:6:ffff:ffff:ffff:ffff").status == 429)
        // The next /64 is another client.
        #expect(guess("2001:db8:5:7::1") == 401)
        // IPv4 is counted per address, as before.
        #expect(guess("198.51.100.1") == 401)
        #expect(guess("198.51.100.1") == 401)
        #expect(guess("198.51.100.1") == 429)
        #expect(guess("198.51.100.2") == 401)
    }

    @Test("behind a trusted proxy, forwarded IPv6 clients are counted per /64 too")
    func forwardedIPv6AddressesShareTheBudget() throws {
        let server = try TestServer {
            $0.rateLimitPerAddressPerSecond = 0.01
            $0.rateLimitPerAddressBurst = 100
            $0.authenticationFailureCost = 60
            $0.trustedProxies = [CIDRBlock("10.0.0.0/8")].compactMap { $0 }
        }
        func guess(_ client: String) -> Int {
            server.request(.get, "/v1/samples?type=stepCount", token: "guess-\(client)",
                           headers: [("X-Forwarded-For", client)], remote: "10.0.0.2").status
        }
        #expect(guess("2001:db8:9:9::1") == 401)
        #expect(guess("2001:db8:9:9::2") == 401)
        #expect(guess("2001:db8:9:9::3") == 429)
        #expect(guess("2001:db8:9:a::1") == 401, "another /64 behind the same proxy")
    }
}
