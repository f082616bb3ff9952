import Crypto
import HealthStore

/// Opaque, tamper-evident tokens (paging cursors, change anchors): a payload of Int64 fields and
/// an HMAC-SHA-256 over it with the server's secret, base64url-encoded. A forged or altered token,
/// or one minted for another user or query, fails the check and is a 400.
struct SignedToken {
    static let macByteCount = 16

    static func encode(kind: UInt8, fields: [Int64], secret: [UInt8]) -> String {
        var payload: [UInt8] = [kind]
        for field in fields {
            for shift in stride(from: 56, through: 0, by: -8) { payload.append(UInt8(truncatingIfNeeded: field >> Int64(shift))) }
        }
        let mac = HMACSHA256.authenticationCode(for: payload, key: secret).prefix(macByteCount)
        return Base64URL.encode(payload + mac)
    }

    /// The fields, or nil when the token is malformed, of another kind, or its MAC does not match.
    static func decode(_ text: String, kind: UInt8, fieldCount: Int, secret: [UInt8]) -> [Int64]? {
        guard text.utf8.count <= 256, let bytes = Base64URL.decode(text),
              bytes.count == 1 + fieldCount * 8 + macByteCount, bytes[0] == kind else { return nil }
        let payload = Array(bytes[0..<(1 + fieldCount * 8)])
        let mac = Array(bytes[(1 + fieldCount * 8)...])
        let expected = Array(HMACSHA256.authenticationCode(for: payload, key: secret).prefix(macByteCount))
        guard constantTimeEquals(mac, expected) else { return nil }
        var fields: [Int64] = []
        for index in 0..<fieldCount {
            var value: Int64 = 0
            for byte in payload[(1 + index * 8)..<(1 + index * 8 + 8)] { value = value << 8 | Int64(byte) }
            fields.append(value)
        }
        return fields
    }

    /// A 64-bit fingerprint of a query's parameters, so a cursor works only for the query that made it.
    static func fingerprint(_ parts: [String]) -> Int64 {
        let digest = SHA256.hash(Array(parts.joined(separator: "\u{1F}").utf8))
        var value: Int64 = 0
        for byte in digest.prefix(8) { value = value << 8 | Int64(byte) }
        return value
    }
}
