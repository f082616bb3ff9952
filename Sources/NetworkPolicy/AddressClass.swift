// Where an address points, for the SSRF policy: only `publicInternet` is reachable by default.

public enum AddressClass: String, Sendable, Equatable, CaseIterable {
    case publicInternet = "public"
    case loopback
    /// RFC 1918 (10/8, 172.16/12, 192.168/16) and IPv6 unique-local fc00::/7 and site-local fec0::/10.
    case privateNetwork = "private"
    /// 169.254/16 and fe80::/10.
    case linkLocal = "link-local"
    /// 100.64/10 (RFC 6598), the carrier's side of a NAT.
    case sharedAddressSpace = "carrier-grade NAT"
    /// Cloud instance metadata: 169.254.169.254, fd00:ec2::254, 100.100.100.200.
    case metadata
    /// 0.0.0.0 and :: (connecting there reaches the host itself).
    case unspecified
    /// 0/8: "this network".
    case thisNetwork = "this-network"
    case multicast
    case broadcast
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20.
    case documentation
    /// Reserved, benchmarking (198.18/15), IETF protocol (192.0.0/24), 240/4, discard 100::/64 and
    /// other special-purpose blocks no receiver lives in.
    case reserved

    /// "a loopback", "an unspecified": the class in a sentence.
    public var withArticle: String {
        (rawValue.first.map { "aeiou".contains($0) } == true ? "an " : "a ") + rawValue
    }

    public init(_ address: IPAddress) {
        switch address {
        case .v4(let value): self = Self.classify(v4: value)
        case .v6(let bytes): self = Self.classify(v6: bytes)
        }
    }

    private static func inBlock(_ value: UInt32, _ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, _ prefix: Int) -> Bool {
        let base = UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
        let mask: UInt32 = prefix == 0 ? 0 : ~UInt32(0) << UInt32(32 - prefix)
        return value & mask == base & mask
    }

    static func classify(v4 value: UInt32) -> AddressClass {
        if value == 0 { return .unspecified }
        if value == 0xffff_ffff { return .broadcast }
        if value == 0xa9fe_a9fe || value == 0x6464_64c8 { return .metadata }  // 169.254.169.254, 100.100.100.200
        if inBlock(value, 0, 0, 0, 0, 8) { return .thisNetwork }
        if inBlock(value, 127, 0, 0, 0, 8) { return .loopback }
        if inBlock(value, 10, 0, 0, 0, 8) || inBlock(value, 172, 16, 0, 0, 12) || inBlock(value, 192, 168, 0, 0, 16) {
            return .privateNetwork
        }
        if inBlock(value, 169, 254, 0, 0, 16) { return .linkLocal }
        if inBlock(value, 100, 64, 0, 0, 10) { return .sharedAddressSpace }
        if inBlock(value, 192, 0, 2, 0, 24) || inBlock(value, 198, 51, 100, 0, 24) || inBlock(value, 203, 0, 113, 0, 24) {
            return .documentation
        }
        if inBlock(value, 224, 0, 0, 0, 4) { return .multicast }
        if inBlock(value, 240, 0, 0, 0, 4) || inBlock(value, 198, 18, 0, 0, 15) || inBlock(value, 192, 0, 0, 0, 24)
            || inBlock(value, 192, 88, 99, 0, 24) {
            return .reserved
        }
        return .publicInternet
    }

    static func classify(v6 bytes: [UInt8]) -> AddressClass {
        guard bytes.count == 16 else { return .reserved }
        /// The first `bits` bits equal those of `pattern`, zero-filled to 16 bytes.
        func prefix(_ pattern: [UInt8], bits: Int) -> Bool {
            let full = pattern + [UInt8](repeating: 0, count: max(0, 16 - pattern.count))
            for bit in 0..<bits where (bytes[bit / 8] ^ full[bit / 8]) & (0x80 >> UInt8(bit % 8)) != 0 { return false }
            return true
        }
        func v4(at offset: Int) -> UInt32 {
            UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
        }
        let zeroPrefix = [UInt8](repeating: 0, count: 10)
        if prefix([], bits: 128) { return .unspecified }
        if prefix([UInt8](repeating: 0, count: 15) + [1], bits: 128) { return .loopback }
        // fd00:ec2::254 (AWS's IPv6 metadata).
        if prefix([0xfd, 0x00, 0x0e, 0xc2] + [UInt8](repeating: 0, count: 10) + [0x02, 0x54], bits: 128) { return .metadata }
        // Addresses that carry an IPv4 address: judged by it, so [::ffff:127.0.0.1] is loopback.
        if prefix(zeroPrefix + [0xff, 0xff], bits: 96) { return classify(v4: v4(at: 12)) }            // ::ffff:0:0/96 mapped
        if prefix([], bits: 96) {                                                                       // ::/96 compatible (deprecated)
            let embedded = classify(v4: v4(at: 12))
            return embedded == .publicInternet ? .reserved : embedded
        }
        if prefix([0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0], bits: 96) { return classify(v4: v4(at: 12)) }  // ::ffff:0:0:0/96 translated
        if prefix([0x00, 0x64, 0xff, 0x9b], bits: 96) { return classify(v4: v4(at: 12)) }             // 64:ff9b::/96 NAT64
        if prefix([0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], bits: 48) {                                   // 64:ff9b:1::/48 local NAT64
            let embedded = classify(v4: v4(at: 12))
            return embedded == .publicInternet ? .privateNetwork : embedded
        }
        if prefix([0x20, 0x02], bits: 16) { return classify(v4: v4(at: 2)) }                         // 2002::/16 6to4
        if prefix([0x20, 0x01, 0x00, 0x00], bits: 32) { return .reserved }                            // Teredo: the client address is obfuscated
        if prefix([0xfc], bits: 7) { return .privateNetwork }
        if prefix([0xfe, 0x80], bits: 10) { return .linkLocal }
        if prefix([0xfe, 0xc0], bits: 10) { return .privateNetwork }
        if prefix([0xff], bits: 8) { return .multicast }
        if prefix([0x20, 0x01, 0x0d, 0xb8], bits: 32) || prefix([0x3f, 0xff, 0x00], bits: 20) { return .documentation }
        if prefix([0x01, 0x00], bits: 64) || prefix([0x20, 0x01, 0x00, 0x02, 0x00, 0x00], bits: 48)
            || prefix([0x20, 0x01, 0x00, 0x10], bits: 28) || prefix([0x20, 0x01, 0x00, 0x20], bits: 28) {
            return .reserved  // discard-only, benchmarking, ORCHID
        }
        // Global unicast is 2000::/3; everything else is unassigned.
        return prefix([0x20], bits: 3) ? .publicInternet : .reserved
    }
}
