import Glibc
import HTTP

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

/// Who the client is when requests arrive through reverse proxies. Only a peer inside
/// `trustedProxies` is believed; then the address is the rightmost hop in its header that is not
/// itself a trusted proxy (everything left of that was written by the client and can be forged).
/// Only the one configured header is read: a proxy that appends to X-Forwarded-For passes a
/// client's own `Forwarded` header on untouched, so reading both would let clients choose.
public struct ClientAddressResolver: Sendable {
    public let trustedProxies: [CIDRBlock]
    public let header: ForwardedHeader

    public init(trustedProxies: [CIDRBlock], header: ForwardedHeader = .xForwardedFor) {
        self.trustedProxies = trustedProxies
        self.header = header
    }

    public func isTrusted(_ address: IPAddress) -> Bool { trustedProxies.contains { $0.contains(address) } }

    /// The client's address for limits and logs: the peer itself unless it is a trusted proxy.
    public func clientAddress(peer: String, headers: HTTPHeaders) -> String {
        guard !trustedProxies.isEmpty, let peerAddress = IPAddress(peer), isTrusted(peerAddress) else { return peer }
        let values = headers.values(header.rawValue)
        guard !values.isEmpty else { return peer }
        let hops = header == .forwarded ? Self.forwardedHops(values) : Self.forwardedForHops(values)
        return rightmostUntrusted(hops, nearest: peerAddress).description
    }

    /// The per-address budget's key for a client address as `clientAddress` gives it: IPv4 as it
    /// is, IPv6 by its /64 (`IPAddress.rateLimitKey`). Text that is no address (a Unix socket's
    /// peer) is its own key.
    public static func rateLimitKey(_ client: String) -> String {
        // IPv4 text, the common case, needs no parsing.
        guard client.utf8.contains(UInt8(ascii: ":")), let address = IPAddress(client) else { return client }
        return address.rateLimitKey
    }

    /// Walks from the nearest hop outwards. A hop that is not an address (`unknown`, an
    /// obfuscated identifier, garbage) ends the walk at the last trusted hop: the proxy that wrote
    /// it is the best we can name.
    func rightmostUntrusted(_ hops: [String], nearest: IPAddress) -> IPAddress {
        var current = nearest
        for hop in hops.reversed() {
            guard let address = IPAddress(Self.withoutPort(hop)) else { return current }
            guard isTrusted(address) else { return address }
            current = address
        }
        return current
    }

    /// `X-Forwarded-For` lists, in order, from every field line.
    static func forwardedForHops(_ values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { String($0.trimmingASCIIWhitespaceForHeaders()) }
    }

    /// The `for` of each RFC 7239 element, in order; an element without one, or one that does not
    /// parse, is an empty hop (which stops the walk).
    static func forwardedHops(_ values: [String]) -> [String] {
        var hops: [String] = []
        for value in values {
            for element in splitOutsideQuotes(value, on: ",") {
                var found = ""
                for pair in splitOutsideQuotes(element, on: ";") {
                    let trimmed = pair.trimmingASCIIWhitespaceForHeaders()
                    guard let equals = trimmed.firstIndex(of: "=") else { continue }
                    guard trimmed[..<equals].lowercased() == "for" else { continue }
                    found = unquote(trimmed[trimmed.index(after: equals)...])
                }
                hops.append(found)
            }
        }
        return hops
    }

    /// `[v6]:port` → `v6`, `v4:port` → `v4`; a bare IPv6 address is left alone.
    static func withoutPort(_ node: String) -> String {
        if node.hasPrefix("[") {
            guard let close = node.firstIndex(of: "]") else { return node }
            return String(node[node.index(after: node.startIndex) ..< close])
        }
        let colons = node.filter { $0 == ":" }.count
        if colons == 1, let colon = node.firstIndex(of: ":") { return String(node[..<colon]) }
        return node
    }

    private static func splitOutsideQuotes(_ text: some StringProtocol, on separator: Character) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var inQuotes = false
        var escaped = false
        var index = text.startIndex
        let whole = Substring(text)
        while index < text.endIndex {
            let character = text[index]
            if escaped {
                escaped = false
            } else if inQuotes && character == "\\" {
                escaped = true
            } else if character == "\"" {
                inQuotes.toggle()
            } else if !inQuotes && character == separator {
                parts.append(whole[start ..< index])
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        parts.append(whole[start...])
        return parts
    }

    private static func unquote(_ value: Substring) -> String {
        guard value.count >= 2, value.first == "\"", value.last == "\"" else { return String(value) }
        var result = ""
        var escaped = false
        for character in value.dropFirst().dropLast() {
            if !escaped && character == "\\" { escaped = true; continue }
            escaped = false
            result.append(character)
        }
        return result
    }
}

extension StringProtocol {
    /// Without the spaces and tabs a list element may carry around it (RFC 9110 OWS).
    func trimmingASCIIWhitespaceForHeaders() -> Substring {
        var result = Substring(self)
        while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }
}
