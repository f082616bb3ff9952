import Crypto
import Foundation
import Testing
@testable import HealthAPI

/// Cursors carry a fingerprint of their query and an HMAC; both must stay what earlier versions
/// computed, or a client paging across an upgrade would be told its cursor is forged.
@Suite struct PageTokenTests {
    /// The fingerprint as first defined: SHA-256 of the parts as Strings joined by U+001F.
    static func joinedFingerprint(_ parts: [String]) -> Int64 {
        let digest = SHA256.hash(Array(parts.joined(separator: "\u{1F}").utf8))
        var value: Int64 = 0
        for byte in digest.prefix(8) { value = value << 8 | Int64(byte) }
        return value
    }

    @Test(arguments: [
        (Int64.min, Int64.max, false, false, "", false),
        (0, -1, true, false, "my-phone", true),
        (1_772_962_200_000, 1_772_962_800_001, false, true, "odd \u{1F} app ü", false),
    ])
    func builtFingerprintsMatchTheJoinedStrings(start: Int64, end: Int64, strictStart: Bool, strictEnd: Bool,
                                                source: String, descending: Bool) {
        let user = "0195c8a4-1f00-7000-8000-000000000001"
        var parts = SignedToken.Fingerprint()
        parts.append(user)
        parts.append("stepCount")
        parts.append(start)
        parts.append(end)
        parts.append(strictStart)
        parts.append(strictEnd)
        parts.append(source)
        parts.append(descending)
        let expected = Self.joinedFingerprint([user, "stepCount", "\(start)", "\(end)", "\(strictStart)", "\(strictEnd)",
                                               source, "\(descending)"])
        #expect(parts.value == expected)
        // A second time from the memo.
        #expect(parts.value == expected)
        #expect(SignedToken.fingerprint([user, "stepCount"]) == Self.joinedFingerprint([user, "stepCount"]))
    }

    @Test func aPrecomputedKeySignsAsTheSecretDoes() {
        let secret = (0..<32).map { UInt8($0 &* 7 &+ 3) }
        let fields: [Int64] = [1_772_962_200_000, 42, -5]
        let token = SignedToken.encode(kind: 1, fields: fields, key: HMACSHA256.Key(secret))
        #expect(token == SignedToken.encode(kind: 1, fields: fields, secret: secret))
        #expect(SignedToken.decode(token, kind: 1, fieldCount: 3, secret: secret) == fields)
        #expect(SignedToken.decode(token, kind: 1, fieldCount: 3, key: HMACSHA256.Key(secret.map { $0 ^ 1 })) == nil)
        #expect(SignedToken.decode(token, kind: 2, fieldCount: 3, secret: secret) == nil)
    }

    /// The token layout, built independently: the kind byte, the fields big-endian, the first 16
    /// bytes of their HMAC-SHA-256, in unpadded base64url; the memo of signed cursors answers the
    /// same text the first time and from memory.
    @Test func tokensArePayloadAndTruncatedMACInBase64URL() {
        let secret = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 1) }
        let fields: [Int64] = [1_772_962_200_000, 7, Int64.min]
        var payload: [UInt8] = [1]
        for field in fields { withUnsafeBytes(of: field.bigEndian) { payload += $0 } }
        let mac = Array(HMACSHA256.authenticationCode(for: payload, key: secret).prefix(16))
        let expected = Data(payload + mac).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(SignedToken.encode(kind: 1, fields: fields, secret: secret) == expected)
        let memo = SignedToken.Memo(kind: 1, key: HMACSHA256.Key(secret))
        #expect(memo.encode(fields) == expected)
        #expect(memo.encode(fields) == expected)
        let other = memo.encode([fields[0], 8, fields[2]])
        #expect(other != expected && other == SignedToken.encode(kind: 1, fields: [fields[0], 8, fields[2]], secret: secret))
        #expect(SignedToken.decode(other, kind: 1, fieldCount: 3, secret: secret) == [fields[0], 8, fields[2]])
    }

    @Test func bearerPrefixInAnyCase() {
        #expect(HealthApplication.hasBearerPrefix("Bearer hdt_x"))
        #expect(HealthApplication.hasBearerPrefix("bEaReR hdt_x"))
        #expect(!HealthApplication.hasBearerPrefix("Bearer "))
        #expect(!HealthApplication.hasBearerPrefix("Basic abc"))
        #expect(!HealthApplication.hasBearerPrefix("Bearerhdt_x"))
        #expect(!HealthApplication.hasBearerPrefix(""))
    }
}
