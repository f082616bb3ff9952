import Crypto
import HealthStore
import Synchronization

/// Opaque, tamper-evident tokens (paging cursors, change anchors): a payload of Int64 fields and
/// an HMAC-SHA-256 over it with the server's secret, base64url-encoded. A forged or altered token,
/// or one minted for another user or query, fails the check and is a 400.
struct SignedToken {
    static let macByteCount = 16

    static func encode(kind: UInt8, fields: [Int64], secret: [UInt8]) -> String {
        encode(kind: kind, fields: fields, key: HMACSHA256.Key(secret))
    }

    /// `key`: the server's secret with its HMAC pads hashed once (routes keep it for their lifetime).
    static func encode(kind: UInt8, fields: [Int64], key: HMACSHA256.Key) -> String {
        // One buffer for the payload and its MAC, encoded in place (a cursor is signed on every page).
        var token = [UInt8](repeating: 0, count: 1 + fields.count * 8 + macByteCount)
        token[0] = kind
        for (index, field) in fields.enumerated() {
            for byte in 0..<8 { token[1 + index * 8 + byte] = UInt8(truncatingIfNeeded: field >> Int64(56 - 8 * byte)) }
        }
        let payloadCount = 1 + fields.count * 8
        let mac = token.withUnsafeBufferPointer { key.authenticationCode(for: UnsafeBufferPointer(rebasing: $0[0..<payloadCount])) }
        for index in 0..<macByteCount { token[payloadCount + index] = mac[index] }
        return token.withUnsafeBufferPointer { Base64URL.encode($0) }
    }

    static func decode(_ text: String, kind: UInt8, fieldCount: Int, secret: [UInt8]) -> [Int64]? {
        decode(text, kind: kind, fieldCount: fieldCount, key: HMACSHA256.Key(secret))
    }

    /// The fields, or nil when the token is malformed, of another kind, or its MAC does not match.
    static func decode(_ text: String, kind: UInt8, fieldCount: Int, key: HMACSHA256.Key) -> [Int64]? {
        guard text.utf8.count <= 256, let bytes = Base64URL.decode(text),
              bytes.count == 1 + fieldCount * 8 + macByteCount, bytes[0] == kind else { return nil }
        let payload = Array(bytes[0..<(1 + fieldCount * 8)])
        let mac = Array(bytes[(1 + fieldCount * 8)...])
        let expected = Array(key.authenticationCode(for: payload).prefix(macByteCount))
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
        var builder = Fingerprint()
        for part in parts { builder.append(part) }
        return builder.value
    }

    /// The parts of a fingerprint, written straight into one buffer: the SHA-256 of the parts'
    /// UTF-8 joined by U+001F, integers and flags in their decimal and `true`/`false` spelling
    /// (what string interpolation gives, so cursors stay valid across versions).
    struct Fingerprint {
        private var bytes: [UInt8] = []
        private var isEmpty = true

        init() { bytes.reserveCapacity(160) }

        private mutating func separate() {
            if !isEmpty { bytes.append(0x1F) }
            isEmpty = false
        }

        mutating func append(_ text: String) {
            separate()
            bytes.append(contentsOf: text.utf8)
        }

        mutating func append(_ number: Int64) {
            separate()
            if number < 0 { bytes.append(UInt8(ascii: "-")) }
            var magnitude = number.magnitude
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
                var cursor = 20
                repeat {
                    cursor -= 1
                    buffer[cursor] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                    magnitude /= 10
                } while magnitude > 0
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[cursor...]))
            }
        }

        mutating func append(_ flag: Bool) {
            separate()
            let word: StaticString = flag ? "true" : "false"
            bytes.append(contentsOf: UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount))
        }

        var value: Int64 { SignedToken.fingerprints.value(of: bytes) }
    }

    static let fingerprints = FingerprintCache()

    /// Tokens of one kind already signed, by their fields: a page read again (a dashboard
    /// polling its first page, clients reading the same query) ends at the same place, and a
    /// lookup costs a fraction of the HMAC. A signature depends only on the fields and the key,
    /// so a remembered token is exactly the one `encode` makes. Bounded: past `limit` entries it
    /// starts over.
    final class Memo: Sendable {
        let kind: UInt8
        let key: HMACSHA256.Key
        private let entries = Mutex<[[Int64]: String]>([:])
        static let limit = 4_096

        init(kind: UInt8, key: HMACSHA256.Key) {
            self.kind = kind
            self.key = key
        }

        func encode(_ fields: [Int64]) -> String {
            if let known = entries.withLock({ $0[fields] }) { return known }
            let token = SignedToken.encode(kind: kind, fields: fields, key: key)
            entries.withLock { entries in
                if entries.count >= Self.limit { entries.removeAll() }
                entries[fields] = token
            }
            return token
        }
    }

    /// Fingerprints already computed, by their parts: a client paging through a query, and every
    /// client polling the same one, repeat the same parts, and a lookup costs a fraction of the
    /// SHA-256. Bounded: past `limit` entries it starts over.
    final class FingerprintCache: Sendable {
        private let entries = Mutex<[String: Int64]>([:])
        static let limit = 4_096

        func value(of parts: [UInt8]) -> Int64 {
            let key = String(decoding: parts, as: UTF8.self)
            if let known = entries.withLock({ $0[key] }) { return known }
            let digest = SHA256.hash(parts)
            var value: Int64 = 0
            for byte in digest.prefix(8) { value = value << 8 | Int64(byte) }
            entries.withLock { entries in
                if entries.count >= Self.limit { entries.removeAll() }
                entries[key] = value
            }
            return value
        }
    }
}
