// Standard base64 with padding (RFC 4648 §4): the alphabet Standard Webhooks uses for its
// secrets and signatures, so receivers' existing verifier libraries read ours.

public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let rest = min(3, bytes.count - i)
            let n = UInt32(bytes[i]) << 16
                | (rest > 1 ? UInt32(bytes[i + 1]) << 8 : 0)
                | (rest > 2 ? UInt32(bytes[i + 2]) : 0)
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(rest > 1 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(rest > 2 ? alphabet[Int(n & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Nil for a character outside the alphabet, misplaced padding, an impossible length, or
    /// non-zero trailing bits. Padding may be left off, as some encoders do.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        var padding = 0
        for c in text.utf8 {
            if c == UInt8(ascii: "=") { padding += 1; continue }
            guard padding == 0 else { return nil }  // data after padding
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(c - 65)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(c - 97 + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(c - 48 + 52)
            case UInt8(ascii: "+"): values.append(62)
            case UInt8(ascii: "/"): values.append(63)
            default: return nil
            }
        }
        let rest = values.count % 4
        if rest == 1 { return nil }
        if padding > 0 && (padding > 2 || (values.count + padding) % 4 != 0) { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var i = 0
        while i + 4 <= values.count {
            let n = UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12 | UInt32(values[i + 2]) << 6 | UInt32(values[i + 3])
            out.append(UInt8(n >> 16 & 255))
            out.append(UInt8(n >> 8 & 255))
            out.append(UInt8(n & 255))
            i += 4
        }
        if rest == 2 {
            let n = UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12
            guard n & 0xFFFF == 0 else { return nil }
            out.append(UInt8(n >> 16 & 255))
        } else if rest == 3 {
            let n = UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12 | UInt32(values[i + 2]) << 6
            guard n & 0xFF == 0 else { return nil }
            out.append(UInt8(n >> 16 & 255))
            out.append(UInt8(n >> 8 & 255))
        }
        return out
    }
}
