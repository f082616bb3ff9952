import Glibc

/// An IPv4 or IPv6 address. IPv4 is kept as an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), so
/// a peer seen on a dual-stack socket and the same address written in a header compare equal,
/// and one prefix match serves both families.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 16 bytes, network order.
    public let bytes: [UInt8]

    /// Parses a literal IPv4 or IPv6 address (no brackets, port or zone).
    public init?(_ text: some StringProtocol) {
        let string = String(text)
        var v4 = in_addr()
        if inet_pton(AF_INET, string, &v4) == 1 {
            bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, string, &v6) == 1 else { return nil }
        bytes = withUnsafeBytes(of: &v6) { Array($0) }
    }

    public var isIPv4: Bool { bytes[0 ..< 10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF }

    /// The canonical text (dotted quad for IPv4, RFC 5952 for IPv6): the rate limiter's key.
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        if isIPv4 {
            var v4 = in_addr()
            withUnsafeMutableBytes(of: &v4) { $0.copyBytes(from: bytes[12 ..< 16]) }
            guard inet_ntop(AF_INET, &v4, &text, socklen_t(text.count)) != nil else { return "?" }
        } else {
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
            guard inet_ntop(AF_INET6, &v6, &text, socklen_t(text.count)) != nil else { return "?" }
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension IPAddress {
    /// What the per-address rate limits count: an IPv4 address itself; for IPv6, its /64
    /// (`2001:db8:1:2::/64`). One IPv6 host or network is handed a whole /64 and may use any
    /// address in it, so counting single addresses would let it reset its budget at will.
    public var rateLimitKey: String {
        guard !isIPv4 else { return description }
        return IPAddress(prefix64Of: self).description + "/64"
    }

    private init(prefix64Of address: IPAddress) {
        bytes = Array(address.bytes[0 ..< 8]) + [UInt8](repeating: 0, count: 8)
    }
}

/// An address block in CIDR notation (`10.0.0.0/8`, `fd00::/8`); a bare address is a block of one.
public struct CIDRBlock: Sendable, Equatable, CustomStringConvertible {
    public let network: IPAddress
    /// Over the 128-bit form: an IPv4 `/n` is stored as `/(96 + n)`.
    public let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(parts[0]) else { return nil }
        let maximum = address.isIPv4 ? 32 : 128
        var length = maximum
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let value = Int(parts[1]),
                  value <= maximum else { return nil }
            length = value
        }
        prefixLength = length + (address.isIPv4 ? 96 : 0)
        network = address
    }

    public func contains(_ address: IPAddress) -> Bool {
        var remaining = prefixLength
        var index = 0
        while remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if network.bytes[index] & mask != address.bytes[index] & mask { return false }
            remaining -= bits
            index += 1
        }
        return true
    }

    public var description: String { "\(network)/\(network.isIPv4 ? prefixLength - 96 : prefixLength)" }
}

/// Which header a trusted proxy writes the client's address into.
public enum ForwardedHeader: String, Sendable, Equatable, CaseIterable {
    /// `X-Forwarded-For: client, proxy1, proxy2` (nginx, Caddy, most load balancers).
    case xForwardedFor = "X-Forwarded-For"
    /// RFC 7239 `Forwarded: for=client;proto=https, for="[2001:db8::1]:4711"`.
    case forwarded = "Forwarded"
}
