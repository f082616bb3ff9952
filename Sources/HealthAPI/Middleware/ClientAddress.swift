import Glibc
import HTTP
import HealthdSettings

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
        // IPv4 text, the common case, needs no parsing. The colon is looked for in the string's
        // contiguous bytes: `contains` on the UTF-8 view is unspecialized (about 300 instructions a
        // request on GET /healthz).
        let colon = UInt8(ascii: ":")
        let hasColon = client.utf8.withContiguousStorageIfAvailable { $0.contains(colon) } ?? client.utf8.contains(colon)
        guard hasColon, let address = IPAddress(client) else { return client }
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
