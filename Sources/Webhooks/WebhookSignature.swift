import Crypto

// Standard Webhooks (standardwebhooks.com) signing: the headers `webhook-id`, `webhook-timestamp`
// and `webhook-signature`, where the signature is `v1,` + base64 of HMAC-SHA256 over
// `id.timestamp.body`, keyed with the bytes the `whsec_` secret encodes.

/// A subscription's signing secret. Its text form (`whsec_` + base64 of the key) is shown once.
public struct WebhookSecret: Sendable, Equatable {
    public static let prefix = "whsec_"
    /// 32 bytes: the HMAC-SHA256 block holds them without hashing, and 256 bits is the MAC's strength.
    public static let generatedByteCount = 32

    public let key: [UInt8]

    /// Nil for an empty key: a MAC with no key authenticates nothing.
    public init?(key: [UInt8]) {
        guard !key.isEmpty else { return nil }
        self.key = key
    }

    /// Reads `whsec_` + base64. Nil for anything else.
    public init?(text: String) {
        guard text.hasPrefix(Self.prefix), let key = Base64.decode(text.dropFirst(Self.prefix.count)) else { return nil }
        self.init(key: key)
    }

    public var text: String { Self.prefix + Base64.encode(key) }

    public static func generate<Generator: RandomNumberGenerator>(using generator: inout Generator) -> WebhookSecret {
        WebhookSecret(generatedKey: (0..<generatedByteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    private init(generatedKey: [UInt8]) {
        key = generatedKey
    }

    public static func generate() -> WebhookSecret {
        var system = SystemRandomNumberGenerator()
        return generate(using: &system)
    }
}

/// Signs outgoing deliveries.
public struct WebhookSigner: Sendable {
    private let key: HMACSHA256.Key

    public init(secret: WebhookSecret) {
        key = HMACSHA256.Key(secret.key)
    }

    /// The raw MAC of `id.timestamp.body`.
    func authenticationCode(id: String, timestamp: Int64, body: [UInt8]) -> [UInt8] {
        var message = Array(id.utf8)
        message.append(UInt8(ascii: "."))
        message += Array(String(timestamp).utf8)
        message.append(UInt8(ascii: "."))
        message += body
        return key.authenticationCode(for: message)
    }

    /// The `webhook-signature` value: `v1,` + base64 MAC.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        "v1," + Base64.encode(authenticationCode(id: id, timestamp: timestamp, body: body))
    }

    /// The three headers of one attempt; a retry signs again with its own timestamp and the same id.
    public func headers(id: String, timestamp: Int64, body: [UInt8]) -> [(name: String, value: String)] {
        [("webhook-id", id), ("webhook-timestamp", String(timestamp)),
         ("webhook-signature", signature(id: id, timestamp: timestamp, body: body))]
    }
}

public enum WebhookVerificationError: Error, Equatable, Sendable {
    case malformedTimestamp
    /// The timestamp is further from the receiver's clock than the tolerance (a replay, or a stale retry).
    case timestampOutOfTolerance
    case noMatchingSignature
}

/// What a receiver does; here to test the signer against, and for tests of the delivery path.
public struct WebhookVerifier: Sendable {
    private let signer: WebhookSigner
    public let toleranceSeconds: Int64

    public init(secret: WebhookSecret, toleranceSeconds: Int64 = 300) {
        signer = WebhookSigner(secret: secret)
        self.toleranceSeconds = toleranceSeconds
    }

    /// `signatureHeader` may hold several space-separated signatures (a secret rotation); one
    /// matching `v1` signature is enough, and other versions are skipped.
    public func verify(id: String, timestamp: String, signatureHeader: String, body: [UInt8], now: Int64) throws(WebhookVerificationError) {
        guard !timestamp.isEmpty, timestamp.utf8.count <= 18, timestamp.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let seconds = Int64(timestamp) else { throw .malformedTimestamp }
        guard abs(now - seconds) <= toleranceSeconds else { throw .timestampOutOfTolerance }
        let expected = signer.authenticationCode(id: id, timestamp: seconds, body: body)
        for candidate in signatureHeader.split(separator: " ") {
            guard candidate.hasPrefix("v1,"), let mac = Base64.decode(candidate.dropFirst(3)) else { continue }
            if constantTimeEquals(mac, expected) { return }
        }
        throw .noMatchingSignature
    }
}

/// The `webhook-id` of a page: the same for every attempt at it, and for the same page read again
/// after a restart, since it names the subscription and the anchor the page starts after.
public enum WebhookMessageID {
    public static func make(subscriptionID: String, startAnchor: String) -> String {
        var input = Array(subscriptionID.utf8)
        input.append(0)
        input += Array(startAnchor.utf8)
        return "msg_" + Base64URL.encode(Array(SHA256.hash(input).prefix(18)))
    }
}
