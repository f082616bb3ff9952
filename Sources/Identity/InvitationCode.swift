import Crypto

/// The code an admin hands a person to activate their account: 32 random bytes, base64url. The
/// store keeps only its SHA-256 (`hash`); it works once, for `lifetime`, and a new invitation for
/// the same person voids it.
public struct InvitationCode: Sendable, Equatable {
    public let value: String

    public static let lifetime: Double = 7 * 24 * 60 * 60

    public static func random(using generator: inout some RandomNumberGenerator) -> InvitationCode {
        InvitationCode(value: Base64URL.encode(RandomBytes.make(32, using: &generator)))
    }

    public static func random() -> InvitationCode {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    private init(value: String) { self.value = value }

    /// What a person typed or pasted, if it has the shape of a code (43 base64url characters of 32
    /// bytes; spaces around it are ignored).
    public init?(presented: String) {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        let text = String(presented.drop(while: blank).reversed().drop(while: blank).reversed())
        guard text.utf8.count == 43, let bytes = Base64URL.decode(text), bytes.count == 32, Base64URL.encode(bytes) == text else {
            return nil
        }
        value = text
    }

    /// The stored form.
    public var hash: [UInt8] { SHA256.hash(Array(value.utf8)) }
}
