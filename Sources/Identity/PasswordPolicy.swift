/// Why a new password is refused. `reason` is the sentence the person reads.
public enum PasswordRefusal: Error, Equatable, Sendable {
    case tooShort(minimum: Int)
    case tooLong(maximumBytes: Int)
    /// Among the most commonly used (and so first guessed) passwords.
    case common
    /// One character repeated, or a short run repeated (`1212121212`, `abcabcabca`).
    case repetition
    /// An ascending or descending run of letters or digits (`1234567890`, `abcdefghij`, `9876543210`).
    case sequence
    /// Contains the account's own name.
    case containsName

    public var reason: String {
        switch self {
        case .tooShort(let minimum): "The password must be at least \(minimum) characters long."
        case .tooLong(let maximum): "The password must be at most \(maximum) bytes long."
        case .common: "This password is one of the most commonly used passwords, so it is guessed first. Choose another."
        case .repetition: "The password repeats one character or a short pattern. Choose one that does not."
        case .sequence: "The password is a run of consecutive letters or digits. Choose one that is not."
        case .containsName: "The password must not contain your name."
        }
    }
}

/// What a new password must be: long enough, not among the most common ones, not trivial. Pure:
/// the common list is compiled in.
public struct PasswordPolicy: Sendable {
    public static let minimumLength = 10
    /// A bound on what one sign-in hashes (libargon2 reads the whole password).
    public static let maximumBytes = 1024

    public static let standard = PasswordPolicy()

    /// All lower case (a test checks), compared with the lowercased password, so `Password123` is
    /// refused as `password123` is.
    let commonPasswords: Set<Substring>

    public init() {
        commonPasswords = Set(commonPasswordList.split(separator: "\n"))
    }

    /// How many passwords the common list refuses.
    public var commonPasswordCount: Int { commonPasswords.count }

    /// The first reason `password` is refused for the account `name`, or nil when it is acceptable.
    /// Length counts characters as the person sees them (extended grapheme clusters).
    public func refusal(of password: String, name: String) -> PasswordRefusal? {
        guard password.count >= Self.minimumLength else { return .tooShort(minimum: Self.minimumLength) }
        guard password.utf8.count <= Self.maximumBytes else { return .tooLong(maximumBytes: Self.maximumBytes) }
        let folded = password.lowercased()
        if commonPasswords.contains(Substring(folded)) { return .common }
        // The first thing a guesser tries: a common password with digits or symbols around it
        // (`password1234`, `Iloveyou2024!`), since the list's entries are mostly shorter than 10.
        let core = folded.drop { !$0.isLetter }.reversed().drop { !$0.isLetter }.reversed()
        if core.count >= 4 && core.count < folded.count && commonPasswords.contains(Substring(String(core))) { return .common }
        let scalars = Array(folded.unicodeScalars)
        if Self.isRepetition(scalars) { return .repetition }
        if Self.isSequence(scalars) { return .sequence }
        let foldedName = name.lowercased().trimmingSpaces
        if foldedName.count >= 3 && folded.contains(foldedName) { return .containsName }
        return nil
    }

    /// The whole password is one unit of at most 4 characters, repeated (the last copy may be cut short).
    static func isRepetition(_ scalars: [Unicode.Scalar]) -> Bool {
        for period in 1 ... 4 where period < scalars.count {
            if scalars.indices.allSatisfy({ $0 < period || scalars[$0] == scalars[$0 - period] }) { return true }
        }
        return false
    }

    /// Every character is the one before it plus one (or minus one), all letters or all digits;
    /// digits wrap around (`1234567890`, the keyboard's digit row; `3210987654`).
    static func isSequence(_ scalars: [Unicode.Scalar]) -> Bool {
        guard scalars.count >= 2 else { return false }
        let digits = scalars.allSatisfy { ("0" ... "9").contains($0) }
        let letters = scalars.allSatisfy { ("a" ... "z").contains($0) }
        guard digits || letters else { return false }
        for step in [1, -1] {
            var matches = true
            for index in 1 ..< scalars.count {
                let previous = Int(scalars[index - 1].value), current = Int(scalars[index].value)
                let wraps = digits && (step == 1 ? previous == 0x39 && current == 0x30 : previous == 0x30 && current == 0x39)
                if current - previous != step && !wraps { matches = false; break }
            }
            if matches { return true }
        }
        return false
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var view = Substring(self)
        while view.first?.isWhitespace == true { view.removeFirst() }
        while view.last?.isWhitespace == true { view.removeLast() }
        return String(view)
    }
}
