import Crypto

/// A signed-in person's session: 32 random bytes, base64url, as the cookie's value. The store keeps
/// only its SHA-256, so a copy of the sessions table signs nobody in.
public struct SessionToken: Sendable, Equatable {
    public let value: String

    /// Idle lifetime, renewed on use.
    public static let idleLifetime: Double = 30 * 24 * 60 * 60

    public static func random(using generator: inout some RandomNumberGenerator) -> SessionToken {
        SessionToken(value: Base64URL.encode(RandomBytes.make(32, using: &generator)))
    }

    /// A new token from the system's CSPRNG: made at every sign-in, never taken from the request,
    /// so a cookie planted before sign-in is not the session after it.
    public static func random() -> SessionToken {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    private init(value: String) { self.value = value }

    /// A cookie value of the right shape (43 base64url characters of 32 bytes), else nil.
    public init?(presented: some StringProtocol) {
        let text = String(presented)
        guard text.utf8.count == 43, let bytes = Base64URL.decode(text), bytes.count == 32, Base64URL.encode(bytes) == text else {
            return nil
        }
        value = text
    }

    /// The stored form.
    public var hash: [UInt8] { SHA256.hash(Array(value.utf8)) }

    /// Whether a session last used at `lastUsed` has passed its idle lifetime at `now`.
    public static func isExpired(lastUsed: Double, at now: Double) -> Bool { now - lastUsed >= idleLifetime }
}

/// The session cookie's header lines. Over https the name carries the `__Host-` prefix, which
/// browsers accept only with `Secure`, `Path=/` and no `Domain`: a sibling subdomain or a plain-http
/// page cannot set or shadow it.
public enum SessionCookie {
    public static let plainName = "healthd_session"
    public static let secureName = "__Host-healthd_session"

    public static func name(secure: Bool) -> String { secure ? secureName : plainName }

    /// `Set-Cookie` for a new or renewed session. `secure`: the request came over https, or through
    /// a trusted proxy that says it did.
    public static func setCookie(_ token: SessionToken, secure: Bool, maxAge: Double = SessionToken.idleLifetime) -> String {
        "\(name(secure: secure))=\(token.value); Path=/; Max-Age=\(Int(maxAge)); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// `Set-Cookie` that removes the cookie (sign-out).
    public static func clearCookie(secure: Bool) -> String {
        "\(name(secure: secure))=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// The session token in a request's `Cookie` header, if there is exactly one well-formed one
    /// under the name for this scheme. Two different values under that name (a cookie tossed in
    /// beside the real one) are refused, not guessed between.
    public static func token(fromCookieHeader header: String, secure: Bool) -> SessionToken? {
        let wanted = name(secure: secure)
        let values = CookieHeader.pairs(header, named: wanted).map(\.value)
        guard let first = values.first, values.allSatisfy({ $0 == first }) else { return nil }
        return SessionToken(presented: first)
    }
}

/// RFC 6265 section 5.4's `Cookie` header: `name=value` pairs separated by `;`. Lenient in what it
/// skips (pairs without `=`, empty names, stray spaces and tabs), strict in what it returns: a value
/// loses one pair of surrounding double quotes and nothing else.
public enum CookieHeader {
    public struct Pair: Sendable, Equatable {
        public let name: String
        public let value: String
    }

    /// At most this many pairs are returned, so a header of thousands of pairs makes no large array.
    public static let maximumPairs = 64

    /// The header's pairs, or with `named` only the pairs of that name, looked for among all of the
    /// header's pairs (a browser may send more than `maximumPairs` cookies for a host, the
    /// session's after them).
    public static func pairs(_ header: String, named wanted: String? = nil) -> [Pair] {
        var result: [Pair] = []
        let wantedBytes = wanted.map { Array($0.utf8) }
        for piece in header.utf8.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: true) {
            guard result.count < maximumPairs else { break }
            guard let equals = piece.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = trim(piece[piece.startIndex ..< equals])
            if let wantedBytes, !name.elementsEqual(wantedBytes) { continue }
            var value = trim(piece[piece.index(after: equals)...])
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else { continue }
            if value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") {
                value = value.dropFirst().dropLast()
            }
            guard value.allSatisfy(isCookieOctet) else { continue }
            result.append(Pair(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
        }
        return result
    }

    private static func trim(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
        var bytes = bytes
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        return bytes
    }

    /// RFC 6265's cookie-octet: visible ASCII except `"`, `,`, `;` and `\`.
    private static func isCookieOctet(_ byte: UInt8) -> Bool {
        byte == 0x21 || (0x23 ... 0x2B).contains(byte) || (0x2D ... 0x3A).contains(byte) || (0x3C ... 0x5B).contains(byte)
            || (0x5D ... 0x7E).contains(byte)
    }

    /// RFC 9110's token characters, for the cookie's name.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30 ... 0x39, 0x41 ... 0x5A, 0x61 ... 0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }
}
