// IP addresses as values, with the parsing both URL hosts and resolver answers need.

public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(UInt32)
    /// 16 bytes, network order.
    case v6([UInt8])

    public init(v4 a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        self = .v4(UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d))
    }

    /// A dotted-decimal IPv4 address or an IPv6 address in RFC 4291 text form (no brackets, no
    /// zone). Strict: `0x7f.1` is not an address here (see `parseIPv4Loosely` for that).
    public init?(_ text: some StringProtocol) {
        if let v4 = Self.parseDottedDecimal(Substring(text)) {
            self = .v4(v4)
        } else if let v6 = Self.parseIPv6(Substring(text)) {
            self = .v6(v6)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .v4(let value):
            return "\(value >> 24).\(value >> 16 & 255).\(value >> 8 & 255).\(value & 255)"
        case .v6(let bytes):
            let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
            // The longest run of two or more zero groups becomes "::" (RFC 5952).
            var bestStart = -1, bestLength = 0, index = 0
            while index < 8 {
                if groups[index] == 0 {
                    var end = index
                    while end < 8 && groups[end] == 0 { end += 1 }
                    if end - index > bestLength && end - index >= 2 { bestStart = index; bestLength = end - index }
                    index = end
                } else {
                    index += 1
                }
            }
            func hex(_ range: Range<Int>) -> String { range.map { String(groups[$0], radix: 16) }.joined(separator: ":") }
            guard bestStart >= 0 else { return hex(0..<8) }
            return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
        }
    }

    static func parseDottedDecimal(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            // No leading zeros: `010` is 8 to `inet_aton`, so it is not dotted decimal.
            guard !part.isEmpty, part.count <= 3, part == "0" || !part.hasPrefix("0"), part.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                  let octet = UInt32(part), octet <= 255 else { return nil }
            value = value << 8 | octet
        }
        return value
    }

    /// The forms the C library's `inet_aton` (and so `getaddrinfo`) and URL parsers take as IPv4:
    /// one to four parts, each decimal, octal (leading 0) or hex (0x), the last filling the
    /// remaining bytes: `2130706433`, `0x7f.1`, `0177.0.0.1` are all 127.0.0.1. Nil when the text
    /// is not such a number (then it is a name).
    public static func parseIPv4Loosely(_ text: some StringProtocol) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = parseNumber(Substring(part)) else { return nil }
            numbers.append(number)
        }
        var value: UInt64 = 0
        for (index, number) in numbers.enumerated() {
            if index < numbers.count - 1 {
                guard number <= 255 else { return nil }
                value = value << 8 | number
            } else {
                let remainingBits = UInt64(8 * (4 - index))
                guard number < (1 << remainingBits) else { return nil }
                value = value << remainingBits | number
            }
        }
        return UInt32(value)
    }

    private static func parseNumber(_ text: Substring) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 40 else { return nil }
        var digits = text
        var radix = 10
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") {
            radix = 16
            digits = digits.dropFirst(2)
            if digits.isEmpty { return 0 }  // "0x" alone is zero to inet_aton
        } else if digits.count > 1 && digits.hasPrefix("0") {
            radix = 8
            digits = digits.dropFirst()
        }
        var value: UInt64 = 0
        for c in digits.utf8 {
            let digit: UInt64
            switch c {
            case 48...57: digit = UInt64(c - 48)
            case 97...102: digit = UInt64(c - 97 + 10)
            case 65...70: digit = UInt64(c - 65 + 10)
            default: return nil
            }
            guard digit < UInt64(radix) else { return nil }
            value = value * UInt64(radix) + digit
            guard value <= UInt64(UInt32.max) else { return nil }
        }
        return value
    }

    static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.utf8.count >= 2, text.utf8.count <= 45 else { return nil }
        var head: [UInt16] = []
        var tail: [UInt16] = []
        var sawDoubleColon = false
        var rest = text
        if rest.hasPrefix("::") {
            sawDoubleColon = true
            rest = rest.dropFirst(2)
        } else if rest.hasPrefix(":") {
            return nil
        }
        var embeddedV4: UInt32?
        while !rest.isEmpty {
            let end = rest.firstIndex(of: ":") ?? rest.endIndex
            let group = rest[rest.startIndex..<end]
            if group.contains(".") {
                // A dotted IPv4 tail (`::ffff:127.0.0.1`) takes the last 32 bits.
                guard end == rest.endIndex, let v4 = parseDottedDecimal(group) else { return nil }
                embeddedV4 = v4
                rest = rest[end...]
                break
            }
            guard !group.isEmpty, group.utf8.count <= 4, let value = UInt16(group, radix: 16),
                  group.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) })
            else { return nil }
            if sawDoubleColon { tail.append(value) } else { head.append(value) }
            rest = rest[end...]
            if rest.hasPrefix("::") {
                guard !sawDoubleColon else { return nil }
                sawDoubleColon = true
                rest = rest.dropFirst(2)
            } else if rest.hasPrefix(":") {
                rest = rest.dropFirst()
                guard !rest.isEmpty else { return nil }  // a trailing single colon
            }
        }
        if let embeddedV4 {
            let pair = [UInt16(embeddedV4 >> 16), UInt16(embeddedV4 & 0xffff)]
            if sawDoubleColon { tail += pair } else { head += pair }
        }
        let count = head.count + tail.count
        if sawDoubleColon {
            guard count <= 7 else { return nil }
        } else {
            guard count == 8 else { return nil }
        }
        let groups = head + [UInt16](repeating: 0, count: 8 - count) + tail
        return groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 255)] }
    }
}
