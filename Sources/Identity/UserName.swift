/// What a name shown to people must be: one line of visible text. An account's name is what the
/// person types to sign in and what the admin's lists, `healthd users` and the dashboard show; an
/// app's name and display name are what the permission sheet and the apps page show the person
/// before they allow anything.
public enum VisibleName {
    /// Why `name` cannot be shown as a name, or nil when it can. Refused: empty or longer than
    /// `maximumLength` characters; spaces at either end (two names would look alike); control
    /// characters (a terminal printing `healthd users` would obey them) and invisible format
    /// characters such as the bidirectional overrides and zero-width spaces (a name could then
    /// show as another's: "\u{202E}ppa-htlaeH" reads as an app the person trusts).
    public static func problem(_ name: String, maximumLength: Int) -> String? {
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

    /// Why `text` (several lines shown as written, such as a permission request's reason) cannot be
    /// shown, or nil: control characters other than line breaks, and the bidirectional embedding,
    /// override and isolate controls, which make text show in another order than it is stored.
    /// The marks a right-to-left language needs (U+200E, U+200F) and the joiners stay.
    public static func textProblem(_ text: String) -> String? {
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control && scalar != "\n" || scalar == "\u{2028}" || scalar == "\u{2029}" {
                return "must not contain control characters other than line breaks"
            }
            if (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value) {
                return "must not contain bidirectional override or isolate characters (U+\(String(scalar.value, radix: 16, uppercase: true)))"
            }
        }
        return nil
    }
}

/// An account's name: 1-200 characters of visible text (`VisibleName`).
public enum UserName {
    public static let maximumLength = 200

    public static func problem(_ name: String) -> String? {
        VisibleName.problem(name, maximumLength: maximumLength)
    }
}

/// An app's name (its samples' source, what the sheet and the apps page show): 1-200 characters of
/// visible text (`VisibleName`).
public enum AppName {
    public static let maximumLength = 200

    public static func problem(_ name: String) -> String? {
        VisibleName.problem(name, maximumLength: maximumLength)
    }
}
