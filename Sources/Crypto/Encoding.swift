// Text forms for secrets and opaque tokens: base64url without padding (RFC 4648 §5) and hex.

public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { encode($0) }
    }

    /// Writes the text straight into the string's storage: a paging cursor is encoded on every page.
    public static func encode(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let count = (bytes.count * 4 + 2) / 3
        guard count > 0 else { return "" }
        return alphabet.withUnsafeBufferPointer { alphabet in
            String(unsafeUninitializedCapacity: count) { out in
                var i = 0
                var o = 0
                while i + 3 <= bytes.count {
                    let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                    out[o] = alphabet[Int(n >> 18 & 63)]
                    out[o + 1] = alphabet[Int(n >> 12 & 63)]
                    out[o + 2] = alphabet[Int(n >> 6 & 63)]
                    out[o + 3] = alphabet[Int(n & 63)]
                    i += 3
                    o += 4
                }
                let rest = bytes.count - i
                if rest > 0 {
                    let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
                    out[o] = alphabet[Int(n >> 18 & 63)]
                    out[o + 1] = alphabet[Int(n >> 12 & 63)]
                    o += 2
                    if rest == 2 {
                        out[o] = alphabet[Int(n >> 6 & 63)]
                        o += 1
                    }
                }
                return o
            }
        }
    }

    /// Nil for any character outside the alphabet, padding, or an impossible length.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default:
                guard let value = Base64Sextets.alphanumericValue(c) else { return nil }
                values.append(value)
            }
        }
        return Base64Sextets.bytes(values)
    }
}

/// What the two base64 alphabets share: letters and digits, and turning 6-bit values into bytes.
enum Base64Sextets {
    /// The value of A-Z, a-z, 0-9 (0...61) in both alphabets; nil for any other byte.
    static func alphanumericValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - 65
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - 97 + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - 48 + 52
        default: nil
        }
    }

    /// The bytes 6-bit values spell; nil for an impossible length or non-canonical trailing bits.
    static func bytes(_ values: [UInt8]) -> [UInt8]? {
        let rest = values.count % 4
        if rest == 1 { return nil }
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

public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
