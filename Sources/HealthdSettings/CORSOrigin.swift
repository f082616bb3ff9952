/// An origin a dashboard on another site is served from (`corsOrigins`).
public enum CORSOrigin {
    /// scheme://host[:port] with an http(s) scheme and nothing after the authority.
    public static func isValid(_ text: String) -> Bool {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") { rest = lower.dropFirst(8) } else if lower.hasPrefix("http://") { rest = lower.dropFirst(7) } else { return false }
        guard !rest.isEmpty, rest.count <= 253 else { return false }
        return rest.allSatisfy { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "[" || $0 == "]" }
            && rest.first != ":"
    }
}
