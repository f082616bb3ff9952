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
            case UInt8(ascii: "+"): values.append(62)
            case UInt8(ascii: "/"): values.append(63)
            default:
                guard let value = Base64Sextets.alphanumericValue(c) else { return nil }
                values.append(value)
            }
        }
        if padding > 0 && (padding > 2 || (values.count + padding) % 4 != 0) { return nil }
        return Base64Sextets.bytes(values)
    }
}
