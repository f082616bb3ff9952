import Testing
@testable import NetworkPolicy

@Suite struct ReceiverURLTests {
    @Test func parsesAnOrdinaryURL() throws {
        let url = try ReceiverURL(parsing: "http://hooks.example.com:8080/health/in?x=1")
        #expect(url.scheme == .http)
        #expect(url.host == "hooks.example.com")
        #expect(url.port == 8080)
        #expect(url.target == "/health/in?x=1")
        #expect(url.literalAddress == nil)
        #expect(!url.needsForwardProxy)
        #expect(url.authority == "hooks.example.com:8080")
    }

    @Test func defaultsAndHTTPS() throws {
        let plain = try ReceiverURL(parsing: "HTTP://example.com")
        #expect(plain.port == 80 && plain.target == "/" && plain.authority == "example.com")
        let query = try ReceiverURL(parsing: "http://example.com?a=b")
        #expect(query.target == "/?a=b")
        let secure = try ReceiverURL(parsing: "https://example.com/in")
        #expect(secure.port == 443 && secure.needsForwardProxy)
    }

    @Test func ipv6Literals() throws {
        let url = try ReceiverURL(parsing: "http://[::ffff:127.0.0.1]:9000/x")
        #expect(url.host == "::ffff:127.0.0.1")
        #expect(url.literalAddress == IPAddress("::ffff:7f00:1"))
        #expect(url.authority == "[::ffff:127.0.0.1]:9000")
        #expect(throws: ReceiverURLError.invalidHost) { try ReceiverURL(parsing: "http://[fe80::1%25eth0]/") }
        #expect(throws: ReceiverURLError.invalidHost) { try ReceiverURL(parsing: "http://[::1/") }
        #expect(throws: ReceiverURLError.invalidHost) { try ReceiverURL(parsing: "http://[::1]x/") }
    }

    @Test(arguments: [
        ("http://2130706433/", "127.0.0.1"), ("http://0x7f.1/", "127.0.0.1"), ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://127.0.0.1./", "127.0.0.1"), ("http://0xa9fea9fe/latest/meta-data", "169.254.169.254"),
        ("http://10.1:8080/", "10.0.0.1"), ("http://0/", "0.0.0.0"),
    ])
    func numericHostsAreLiterals(text: String, address: String) throws {
        #expect(try ReceiverURL(parsing: text).literalAddress == IPAddress(address))
    }

    @Test(arguments: [
        ("ftp://example.com/", ReceiverURLError.unsupportedScheme("ftp")),
        ("file:///etc/passwd", .unsupportedScheme("file")),
        ("gopher://127.0.0.1:6379/_INFO", .unsupportedScheme("gopher")),
        ("example.com/hook", .notAnAbsoluteURL), ("//example.com/", .notAnAbsoluteURL), ("", .notAnAbsoluteURL),
        ("http://user:pass@example.com/", .userInfo), ("http://example.com@127.0.0.1/", .userInfo),
        ("http://@example.com/", .userInfo),
        ("http://exa mple.com/", .invalidCharacters), ("http://example.com/a b", .invalidCharacters),
        ("http://example.com\\@evil.com/", .invalidCharacters), ("http://exämple.com/", .invalidCharacters),
        ("http://example.com/\n", .invalidCharacters),
        ("http://example.com/#frag", .fragment),
        ("http:///path", .invalidHost), ("http://:80/", .invalidHost), ("http://exa%6dple.com/", .invalidHost),
        ("http://example..com/", .invalidHost), ("http://-/", .invalidHost), ("http://1.2.3.4.5/", .invalidHost),
        ("http://08.1.2.3/", .invalidHost), ("http://256.0.0.1/", .invalidHost), ("http://example.com../", .invalidHost),
        ("http://example.com:0/", .invalidPort), ("http://example.com:65536/", .invalidPort), ("http://example.com:/", .invalidPort),
        ("http://example.com:-1/", .invalidPort), ("http://example.com:8o/", .invalidPort), ("http://example.com:080808/", .invalidPort),
        ("http://example.com:25/", .portNotAllowed(25)), ("http://example.com:22/", .portNotAllowed(22)),
        ("http://example.com:6667/", .portNotAllowed(6667)),
    ])
    func refusals(text: String, error: ReceiverURLError) {
        #expect(throws: error) { try ReceiverURL(parsing: text) }
    }

    @Test func overlongURLsAreRefused() {
        let long = "http://example.com/" + String(repeating: "a", count: 2048)
        #expect(throws: ReceiverURLError.tooLong) { try ReceiverURL(parsing: long) }
    }

    @Test func trailingDotNamesAndUnderscoresAreNames() throws {
        let url = try ReceiverURL(parsing: "http://hooks.example.com./in")
        #expect(url.host == "hooks.example.com." && url.literalAddress == nil)
        #expect(try ReceiverURL(parsing: "http://my_service.internal:8080/").host == "my_service.internal")
    }
}

@Suite struct SSRFPolicyTests {
    let policy = SSRFPolicy()

    func decision(_ text: String, allowing allowed: Set<String> = []) throws -> SSRFDecision {
        SSRFPolicy(allowedHosts: allowed).check(try ReceiverURL(parsing: text))
    }

    @Test(arguments: [
        ("http://127.0.0.1:8080/", AddressClass.loopback), ("http://2130706433/", .loopback), ("http://0x7f.1/", .loopback),
        ("http://[::1]/", .loopback), ("http://[::ffff:127.0.0.1]/", .loopback), ("http://127.0.0.1./", .loopback),
        ("http://localhost/", .loopback), ("http://LOCALHOST./", .loopback), ("http://api.localhost/", .loopback),
        ("http://169.254.169.254/latest/meta-data/", .metadata), ("http://[fd00:ec2::254]/", .metadata),
        ("http://0xa9fea9fe/", .metadata), ("http://10.0.0.5/", .privateNetwork), ("http://192.168.0.1/", .privateNetwork),
        ("http://[fd00::1]/", .privateNetwork), ("http://[fe80::1]/", .linkLocal), ("http://100.64.1.1/", .sharedAddressSpace),
        ("http://0/", .unspecified), ("http://0.0.0.0/", .unspecified), ("http://[::]/", .unspecified),
        ("http://224.0.0.1/", .multicast), ("http://255.255.255.255/", .broadcast), ("http://192.0.2.1/", .documentation),
        ("http://[64:ff9b::7f00:1]/", .loopback),
    ])
    func literalsAndLocalNamesAreRefused(text: String, addressClass: AddressClass) throws {
        guard case .refuse(_, let refused) = try decision(text) else {
            Issue.record("\(text) was allowed")
            return
        }
        #expect(refused == addressClass)
    }

    @Test func publicLiteralsAndNamesPassBeforeResolution() throws {
        #expect(try decision("http://8.8.8.8/") == .allow)
        #expect(try decision("http://[2606:4700:4700::1111]/") == .allow)
        #expect(try decision("http://hooks.example.com/") == .allow)
    }

    @Test func theAllowListMatchesTheHostExactlyAsWritten() throws {
        #expect(try decision("http://127.0.0.1:9000/", allowing: ["127.0.0.1"]) == .allow)
        #expect(try decision("http://localhost:9000/", allowing: ["localhost"]) == .allow)
        #expect(try decision("http://[::1]:9000/", allowing: ["::1"]) == .allow)
        // Another spelling of the same address is not the listed host.
        #expect(try decision("http://2130706433/", allowing: ["127.0.0.1"]) != .allow)
        #expect(try decision("http://127.0.0.1./", allowing: ["127.0.0.1"]) != .allow)
        #expect(try decision("http://localhost./", allowing: ["localhost"]) != .allow)
        #expect(try decision("http://[::ffff:127.0.0.1]/", allowing: ["127.0.0.1"]) != .allow)
    }

    @Test func resolvedAddressesMustAllBePublic() throws {
        let public1 = try #require(IPAddress("93.184.216.34"))
        let private1 = try #require(IPAddress("10.1.2.3"))
        let mapped = try #require(IPAddress("::ffff:169.254.169.254"))
        #expect(policy.check(host: "hooks.example.com", addresses: [public1]) == .allow)
        #expect(policy.check(host: "hooks.example.com", addresses: [public1, private1]) == .refuse(address: private1, .privateNetwork))
        #expect(policy.check(host: "rebind.example.com", addresses: [mapped]) == .refuse(address: mapped, .metadata))
        let allowing = SSRFPolicy(allowedHosts: ["receiver.internal"])
        #expect(allowing.check(host: "receiver.internal", addresses: [private1]) == .allow)
        #expect(allowing.check(host: "other.internal", addresses: [private1]) != .allow)
    }
}
