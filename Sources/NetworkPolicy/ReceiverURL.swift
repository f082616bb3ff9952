// A webhook receiver's URL, parsed strictly: http, or https (which goes through the forward
// proxy), a host, a port, a path. Anything a URL parser and the C resolver might read
// differently (user info, backslashes, percent-encoded or non-ASCII hosts, zone ids) is refused.

public enum ReceiverURLError: Error, Sendable, Equatable, CustomStringConvertible {
    case notAnAbsoluteURL
    case unsupportedScheme(String)
    case userInfo
    case invalidHost
    case invalidPort
    case portNotAllowed(Int)
    case fragment
    case tooLong
    case invalidCharacters

    public var description: String {
        switch self {
        case .notAnAbsoluteURL: "The URL must be absolute: http://host[:port]/path."
        case .unsupportedScheme(let scheme): "The scheme \"\(scheme)\" is not supported; use http or https."
        case .userInfo: "The URL must not carry a user name or password."
        case .invalidHost: "The URL's host is not a valid name or address."
        case .invalidPort: "The URL's port is not a number from 1 to 65535."
        case .portNotAllowed(let port): "Port \(port) belongs to another protocol and is not allowed."
        case .fragment: "The URL must not have a fragment (#...)."
        case .tooLong: "The URL is longer than 2,048 characters."
        case .invalidCharacters: "The URL has spaces, control characters, backslashes or non-ASCII characters; percent-encode them (and use the punycode form of a name)."
        }
    }
}

public struct ReceiverURL: Sendable, Equatable, CustomStringConvertible {
    public enum Scheme: String, Sendable { case http, https }

    public static let maximumLength = 2048

    public let scheme: Scheme
    /// The host exactly as written, brackets of an IPv6 literal removed: what `webhookAllowedHosts` is matched against.
    public let host: String
    public let port: Int
    /// Path and query, at least "/".
    public let target: String
    /// The address when the host is a literal (in any form the C resolver reads as one).
    public let literalAddress: IPAddress?

    /// https goes through the configured forward proxy, which makes the TLS connection.
    public var needsForwardProxy: Bool { scheme == .https }

    /// The Host header's value.
    public var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        let defaultPort = scheme == .http ? 80 : 443
        return port == defaultPort ? name : "\(name):\(port)"
    }

    public var description: String { "\(scheme.rawValue)://\(authority)\(target)" }

    /// Ports the Fetch standard blocks ("bad ports"): a POST there could talk to a mail, SSH or
    /// other server in its own protocol.
    public static let blockedPorts: Set<Int> = [
        1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104,
        109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515,
        526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
        3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
    ]

    /// Whether a URL's host (as `host` holds it) is an address, in any form the resolver reads,
    /// rather than a name.
    public static func isLiteralHost(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? host.dropFirst().dropLast() : Substring(host)
        if IPAddress.parseIPv6(bare) != nil { return true }
        return IPAddress.parseIPv4Loosely(bare.hasSuffix(".") ? bare.dropLast() : bare) != nil
    }

    public init(parsing text: String) throws(ReceiverURLError) {
        guard text.utf8.count <= Self.maximumLength else { throw .tooLong }
        // Printable ASCII only, no spaces: nothing for another parser to read differently.
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }), !text.contains("\\") else { throw .invalidCharacters }
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else { throw .notAnAbsoluteURL }
        let schemeText = text[..<colon].lowercased()
        guard let scheme = Scheme(rawValue: schemeText) else {
            throw schemeText.isEmpty ? .notAnAbsoluteURL : .unsupportedScheme(String(schemeText.prefix(20)))
        }
        let rest = text[text.index(colon, offsetBy: 3)...]
        guard !rest.contains("#") else { throw .fragment }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.contains("@") else { throw .userInfo }
        var target = String(rest[authorityEnd...])
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }

        var hostText: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .invalidHost }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidHost }
                portText = after.dropFirst()
            }
            guard let bytes = IPAddress.parseIPv6(hostText) else { throw .invalidHost }  // zone ids ("%25eth0") fail here
            literalAddress = .v6(bytes)
        } else {
            if let colon = authority.firstIndex(of: ":") {
                hostText = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                hostText = authority
            }
            guard Self.isValidName(hostText) else { throw .invalidHost }
            // A trailing dot is the same name to the resolver; the literal check must see it too.
            let unrooted = hostText.hasSuffix(".") ? hostText.dropLast() : hostText
            if let v4 = IPAddress.parseIPv4Loosely(unrooted) {
                literalAddress = .v4(v4)
            } else {
                // A last label that is all digits (or 0x...) but no valid number: WHATWG refuses
                // such hosts, and the resolver might still read a prefix of it as an address.
                let lastLabel = unrooted.split(separator: ".").last ?? ""
                if let first = lastLabel.utf8.first, first >= 48 && first <= 57 {
                    throw .invalidHost
                }
                literalAddress = nil
            }
        }
        var port = scheme == .http ? 80 : 443
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                  let number = Int(portText), (1...65535).contains(number) else { throw .invalidPort }
            port = number
        }
        guard !Self.blockedPorts.contains(port) else { throw .portNotAllowed(port) }

        self.scheme = scheme
        self.host = String(hostText)
        self.port = port
        self.target = target
    }

    /// Letters, digits, hyphens (not first or last in a label) and dots, and underscores, which some
    /// internal names use; labels of 1 to 63 characters, at most 253 in all; one trailing dot allowed.
    static func isValidName(_ name: Substring) -> Bool {
        let unrooted = name.hasSuffix(".") ? name.dropLast() : name
        guard !unrooted.isEmpty, unrooted.utf8.count <= 253 else { return false }
        for label in unrooted.split(separator: ".", omittingEmptySubsequences: false) {
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-",
                  label.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122)
                                          || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") })
            else { return false }
        }
        return true
    }
}
