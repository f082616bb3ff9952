/// What a person's account name must be: it is what they type to sign in, what the admin's lists
/// and `healthd users` print, and what the dashboard shows, so it is one line of visible text.
public enum UserName {
    public static let maximumLength = 200

    /// Why `name` cannot name an account, or nil when it can. Refused: empty or too long; spaces at
    /// either end (two accounts would look alike); control characters (a terminal printing
    /// `healthd users` would obey them) and invisible format characters such as the bidirectional
    /// overrides and zero-width spaces (a name could then show as another's).
    public static func problem(_ name: String) -> String? {
        guard !name.isEmpty, name.count <= maximumLength else { return "must be 1 to \(maximumLength) characters" }
        guard name.first?.isWhitespace != true, name.last?.isWhitespace != true else {
            return "must not begin or end with a space"
        }
        for scalar in name.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator:
                return "must be one line without control characters"
            case .format where scalar != "\u{200D}":
                // The zero-width joiner stays: emoji sequences are made with it.
                return "must not contain invisible formatting characters (U+\(String(scalar.value, radix: 16, uppercase: true)))"
            default:
                continue
            }
        }
        return nil
    }
}
