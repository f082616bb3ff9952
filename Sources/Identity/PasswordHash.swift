import Crypto
import Foundation

/// Argon2id's cost: memory in KiB, passes over it, lanes. Kept in each stored hash (the PHC string),
/// so raising `PasswordHashing.current` later applies at each person's next sign-in (`needsRehash`).
public struct Argon2Parameters: Sendable, Equatable, CustomStringConvertible {
    public var memoryKiB: UInt32
    public var iterations: UInt32
    public var parallelism: UInt32

    public init(memoryKiB: UInt32, iterations: UInt32, parallelism: UInt32) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
        self.parallelism = parallelism
    }

    /// OWASP's Password Storage Cheat Sheet minimum for Argon2id: 19 MiB, 2 passes, 1 lane.
    public static let owaspMinimum = Argon2Parameters(memoryKiB: 19_456, iterations: 2, parallelism: 1)

    /// What new hashes use: OWASP's 46 MiB configuration with two passes instead of one, above its
    /// minimum in both memory and passes (about 80 ms of CPU on the project's machine, BENCHMARKS.md;
    /// a sign-in costs one). Each hash holds its memory while it runs: the caller bounds how many
    /// run at once.
    public static let current = Argon2Parameters(memoryKiB: 47_104, iterations: 2, parallelism: 1)

    /// At least as costly as `other` in every dimension (memory, passes; lanes only add parallel work).
    public func isAtLeast(_ other: Argon2Parameters) -> Bool {
        memoryKiB >= other.memoryKiB && iterations >= other.iterations
    }

    /// Bounds on what a stored hash may ask for, so a damaged or hostile row cannot make a sign-in
    /// allocate gigabytes or spin for minutes.
    static let memoryRange: ClosedRange<UInt32> = 8 ... 1_048_576
    static let iterationRange: ClosedRange<UInt32> = 1 ... 64
    static let parallelismRange: ClosedRange<UInt32> = 1 ... 16

    var isWithinBounds: Bool {
        Self.memoryRange.contains(memoryKiB) && Self.iterationRange.contains(iterations)
            && Self.parallelismRange.contains(parallelism) && memoryKiB >= 8 * parallelism
    }

    public var description: String { "m=\(memoryKiB),t=\(iterations),p=\(parallelism)" }
}

/// A stored password: Argon2id's parameters, salt and tag, written as a PHC string
/// (`$argon2id$v=19$m=65536,t=3,p=1$<salt>$<hash>`, unpadded standard base64).
public struct PasswordHash: Sendable, Equatable {
    public let parameters: Argon2Parameters
    public let salt: [UInt8]
    public let hash: [UInt8]

    static let saltLengths = 8 ... 64
    static let hashLengths = 16 ... 64

    public init?(parameters: Argon2Parameters, salt: [UInt8], hash: [UInt8]) {
        guard parameters.isWithinBounds, Self.saltLengths.contains(salt.count), Self.hashLengths.contains(hash.count) else { return nil }
        self.parameters = parameters
        self.salt = salt
        self.hash = hash
    }

    init(unchecked parameters: Argon2Parameters, salt: [UInt8], hash: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.hash = hash
    }

    /// Parses a PHC string; nil for anything but Argon2id version 19 within the bounds above.
    public init?(phc: String) {
        let fields = phc.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[0].isEmpty, fields[1] == "argon2id", fields[2] == "v=19" else { return nil }
        var values: [Substring: UInt32] = [:]
        let pairs = fields[3].split(separator: ",", omittingEmptySubsequences: false)
        guard pairs.count == 3 else { return nil }
        for (pair, key) in zip(pairs, ["m", "t", "p"]) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == key, let value = Self.decimal(parts[1]) else { return nil }
            values[parts[0]] = value
        }
        guard let memory = values["m"], let iterations = values["t"], let lanes = values["p"],
              let salt = PHCBase64.decode(fields[4]), let hash = PHCBase64.decode(fields[5]) else { return nil }
        self.init(parameters: Argon2Parameters(memoryKiB: memory, iterations: iterations, parallelism: lanes), salt: salt, hash: hash)
    }

    /// PHC decimals: digits only, no sign, no leading zero.
    private static func decimal(_ text: Substring) -> UInt32? {
        guard !text.isEmpty, text.count <= 10, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              text == "0" || text.first != "0" else { return nil }
        return UInt32(text)
    }

    public var phc: String {
        "$argon2id$v=19$\(parameters)$\(PHCBase64.encode(salt))$\(PHCBase64.encode(hash))"
    }
}

/// Hashing and checking passwords. The salt comes from the system's random source; everything
/// else is libargon2 and constant-time comparison.
public enum PasswordHashing {
    public static let saltLength = 16
    public static let hashLength = 32

    /// A new hash of `password` with a fresh random salt.
    public static func hash(_ password: String, parameters: Argon2Parameters = .current) throws(Argon2.Failure) -> PasswordHash {
        var generator = SystemRandomNumberGenerator()
        return try hash(password, salt: RandomBytes.make(saltLength, using: &generator), parameters: parameters)
    }

    /// The hash with a given salt (tests, and `hash` above).
    public static func hash(_ password: String, salt: [UInt8], parameters: Argon2Parameters) throws(Argon2.Failure) -> PasswordHash {
        guard parameters.isWithinBounds else { throw .outOfBounds(parameters) }
        let tag = try Argon2.argon2id(password: normalized(password), salt: salt, iterations: parameters.iterations,
                                      memoryKiB: parameters.memoryKiB, lanes: parameters.parallelism, length: hashLength)
        guard let stored = PasswordHash(parameters: parameters, salt: salt, hash: tag) else {
            throw .outOfBounds(parameters)
        }
        return stored
    }

    /// Whether `password` is the one `stored` was made from. A stored string that does not parse
    /// (or that libargon2 refuses) verifies nothing, after the same work as a real check.
    public static func verify(_ password: String, against stored: String) -> Bool {
        guard let parsed = PasswordHash(phc: stored) else {
            _ = verify(password, against: dummy)
            return false
        }
        return verify(password, against: parsed)
    }

    /// Checks the password in Normalization Form C and, when its bytes as sent differ, in those too
    /// (a hash stored before passwords were normalized). Both forms are always checked then, so the
    /// time says nothing about which matched; `dummyVerify` does the same work for the same input.
    public static func verify(_ password: String, against stored: PasswordHash) -> Bool {
        var matched = false
        for bytes in forms(password) {
            guard let tag = try? Argon2.argon2id(password: bytes, salt: stored.salt, iterations: stored.parameters.iterations,
                                                 memoryKiB: stored.parameters.memoryKiB, lanes: stored.parameters.parallelism,
                                                 length: stored.hash.count) else { continue }
            if constantTimeEquals(tag, stored.hash) { matched = true }
        }
        return matched
    }

    /// The bytes a password is hashed as: its UTF-8 in Unicode Normalization Form C (NIST SP
    /// 800-63B), so "é" typed as one code point or as "e" and a combining accent (keyboards and
    /// systems differ) is one password.
    static func normalized(_ password: String) -> [UInt8] { Array(password.precomposedStringWithCanonicalMapping.utf8) }

    static func forms(_ password: String) -> [[UInt8]] {
        let normal = normalized(password)
        let sent = Array(password.utf8)
        return normal == sent ? [normal] : [normal, sent]
    }

    /// The work of one check at the current parameters, for a name that has no account (or no
    /// password yet), so that a wrong name and a wrong password take the same time. Always false.
    @discardableResult
    public static func dummyVerify(_ password: String) -> Bool {
        _ = verify(password, against: dummy)
        return false
    }

    /// Whether a stored hash was made with less than `current`: hash the password again (it is at
    /// hand only at a successful sign-in) and store the new string.
    public static func needsRehash(_ stored: String, current: Argon2Parameters = .current) -> Bool {
        guard let parsed = PasswordHash(phc: stored) else { return true }
        return !parsed.parameters.isAtLeast(current) || parsed.hash.count < hashLength || parsed.salt.count < saltLength
    }

    /// A hash at the current parameters of a random password nobody knows, made once per process.
    private static let dummy: PasswordHash = {
        var generator = SystemRandomNumberGenerator()
        let salt = RandomBytes.make(saltLength, using: &generator)
        // A fixed hash of the right shape if libargon2 cannot allocate: the timing then still
        // matches a real check as closely as the failed allocation allows.
        return (try? hash(Base64URL.encode(RandomBytes.make(32, using: &generator)), salt: salt, parameters: .current))
            ?? PasswordHash(unchecked: .current, salt: salt, hash: [UInt8](repeating: 0, count: hashLength))
    }()
}

/// The PHC string format's base64: Crypto's standard base64 without its padding.
enum PHCBase64 {
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Base64.encode(bytes)
        while text.last == "=" { text.removeLast() }
        return text
    }

    /// Nil for padding, a character outside the alphabet, a length no encoding has, or stray bits.
    static func decode(_ text: Substring) -> [UInt8]? {
        guard !text.utf8.contains(UInt8(ascii: "=")) else { return nil }
        return Base64.decode(text)
    }
}

/// Random bytes from a generator (the system's CSPRNG in production, a seeded one in tests).
enum RandomBytes {
    static func make(_ count: Int, using generator: inout some RandomNumberGenerator) -> [UInt8] {
        (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
    }
}
