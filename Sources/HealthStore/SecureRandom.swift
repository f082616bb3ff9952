import Crypto

/// Secrets (bearer tokens, the database's signing key) from the system's CSPRNG: getrandom on
/// Linux, through SystemRandomNumberGenerator. It lives with the store, a shell, because reading
/// the system's random source is I/O that the pure `Crypto` module does not do.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// A bearer token of 256 random bits with a readable prefix that says what it is.
    public static func token(prefix: String) -> String { prefix + Base64URL.encode(bytes(32)) }
}
