import Testing
@testable import NetworkPolicy

@Suite struct AddressClassTests {
    @Test(arguments: [
        ("8.8.8.8", AddressClass.publicInternet), ("1.1.1.1", .publicInternet), ("93.184.216.34", .publicInternet),
        ("127.0.0.1", .loopback), ("127.255.255.254", .loopback),
        ("10.0.0.1", .privateNetwork), ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork),
        ("172.15.255.255", .publicInternet), ("172.32.0.0", .publicInternet),
        ("192.168.1.1", .privateNetwork), ("192.169.0.1", .publicInternet),
        ("169.254.1.1", .linkLocal), ("169.254.169.254", .metadata), ("100.100.100.200", .metadata),
        ("100.64.0.1", .sharedAddressSpace), ("100.127.255.255", .sharedAddressSpace), ("100.128.0.0", .publicInternet),
        ("0.0.0.0", .unspecified), ("0.1.2.3", .thisNetwork),
        ("224.0.0.1", .multicast), ("239.255.255.255", .multicast), ("255.255.255.255", .broadcast),
        ("192.0.2.1", .documentation), ("198.51.100.7", .documentation), ("203.0.113.9", .documentation),
        ("240.0.0.1", .reserved), ("198.18.0.1", .reserved), ("192.0.0.8", .reserved),
    ])
    func ipv4(text: String, expected: AddressClass) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressClass(address) == expected)
    }

    @Test(arguments: [
        ("2606:4700:4700::1111", AddressClass.publicInternet), ("2a00:1450:4001:81b::200e", .publicInternet),
        ("::1", .loopback), ("::", .unspecified),
        ("fc00::1", .privateNetwork), ("fd12:3456:789a::1", .privateNetwork), ("fec0::1", .privateNetwork),
        ("fe80::1", .linkLocal), ("febf::1", .linkLocal),
        ("fd00:ec2::254", .metadata), ("fd00:ec2::253", .privateNetwork),
        ("ff02::1", .multicast), ("2001:db8::1", .documentation), ("3fff::1", .documentation),
        // IPv4 inside IPv6: judged by the IPv4 address.
        ("::ffff:127.0.0.1", .loopback), ("::ffff:7f00:1", .loopback), ("::ffff:10.0.0.1", .privateNetwork),
        ("::ffff:169.254.169.254", .metadata), ("::ffff:8.8.8.8", .publicInternet),
        ("::127.0.0.1", .loopback), ("::8.8.8.8", .reserved),
        ("64:ff9b::7f00:1", .loopback), ("64:ff9b::a9fe:a9fe", .metadata), ("64:ff9b::8.8.8.8", .publicInternet),
        ("64:ff9b:1::10.1.2.3", .privateNetwork), ("64:ff9b:1::8.8.8.8", .privateNetwork),
        ("2002:7f00:1::", .loopback), ("2002:c0a8:101::1", .privateNetwork), ("2002:808:808::1", .publicInternet),
        ("2001:0:4136:e378::1", .reserved), ("100::1", .reserved), ("4000::1", .reserved),
    ])
    func ipv6(text: String, expected: AddressClass) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressClass(address) == expected)
    }

    @Test(arguments: [
        ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"), ("0xA9.0xFE.0xA9.0xFE", "169.254.169.254"), ("10.1", "10.0.0.1"),
        ("192.168.257", "192.168.1.1"), ("0", "0.0.0.0"), ("3232235777", "192.168.1.1"),
    ])
    func looseIPv4Forms(text: String, expected: String) {
        #expect(IPAddress.parseIPv4Loosely(text).map { IPAddress.v4($0).description } == expected)
    }

    @Test(arguments: ["", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "4294967296", "0x1.0x100.1", "08.1.2.3", "1..2", "1.2.3.",
                      "example", "0xg"])
    func notLooseIPv4(text: String) {
        #expect(IPAddress.parseIPv4Loosely(text) == nil)
    }

    @Test(arguments: ["1:2:3:4:5:6:7:8:9", "1::2::3", ":1::", "1:", "12345::", "::g", "1.2.3.4", ":::", "::ffff:1.2.3",
                      "1:2:3:4:5:6:7:1.2.3.4", "fe80::1%eth0"])
    func strictParsingRefuses(text: String) {
        #expect(IPAddress.parseIPv6(Substring(text)) == nil)
    }

    @Test(arguments: ["::1", "::", "2001:db8::1", "fe80::1:2", "1:2:3:4:5:6:7:8", "1::8", "::ffff:7f00:1", "1:0:0:2::3"])
    func ipv6DescriptionRoundTrips(text: String) throws {
        #expect(try #require(IPAddress(text)).description == text)
    }

    @Test func strictIPv4RefusesLooseForms() {
        #expect(IPAddress("127.1") == nil)
        #expect(IPAddress("0127.0.0.1") == nil)
        #expect(IPAddress("010.0.0.1") == nil)
        #expect(IPAddress("::ffff:010.0.0.1") == nil)
        #expect(IPAddress("10.0.0.0") == IPAddress(v4: 10, 0, 0, 0))
        #expect(IPAddress.parseIPv4Loosely("010.0.0.1").map { IPAddress.v4($0) } == IPAddress(v4: 8, 0, 0, 1))
        #expect(IPAddress("1.2.3.4") == IPAddress(v4: 1, 2, 3, 4))
    }
}
