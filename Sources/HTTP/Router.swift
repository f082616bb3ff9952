// A small path router, query-string parsing and safe path normalization for static files.

public enum RouteMatch<Handler> {
    case found(Handler, parameters: [String: String], pattern: String)
    /// The path exists but not for this method; `allowed` feeds the 405's `Allow` header.
    case methodNotAllowed(allowed: [HTTPMethod])
    case notFound
}

extension RouteMatch: Sendable where Handler: Sendable {}

/// Routes `METHOD /literal/{parameter}/...` patterns to handler values.
/// Literal segments win over parameters at the same position; a parameter matches one
/// non-empty, percent-decoded segment (an encoded `/` stays inside its segment).
public struct Router<Handler> {
    // A value-type trie, so copies of a router never share state and Sendable comes for free.
    fileprivate struct Node {
        var literals: [String: Node] = [:]
        var parameterName: String?
        /// Zero or one element: the child for a `{parameter}` segment (an array gives recursion without boxing).
        var parameterChild: [Node] = []
        var handlers: [HTTPMethod: Handler] = [:]
        var pattern = ""
    }

    public enum RegistrationError: Error, Equatable {
        case invalidPattern(String)
        case conflictingParameterName(pattern: String)
    }

    private var root = Node()
    public private(set) var registeredRoutes: [(HTTPMethod, String)] = []

    public init() {}

    /// Registers `handler`. A repeated method and pattern replaces the earlier handler.
    /// Patterns are programmer input: malformed ones stop the program with a clear message.
    public mutating func register(_ method: HTTPMethod, _ pattern: String, _ handler: Handler) {
        do {
            try tryRegister(method, pattern, handler)
        } catch {
            preconditionFailure("Router.register(\(method), \(pattern)): \(error)")
        }
    }

    /// Like `register`, but reports a malformed pattern instead of stopping.
    public mutating func tryRegister(_ method: HTTPMethod, _ pattern: String, _ handler: Handler) throws {
        guard pattern.hasPrefix("/") else { throw RegistrationError.invalidPattern(pattern) }
        let segments = pattern.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var isNew = false
        try Self.insert(into: &root, segments[...], method, pattern, handler, &isNew)
        if isNew { registeredRoutes.append((method, pattern)) }
    }

    private static func insert(into node: inout Node, _ segments: ArraySlice<Substring>, _ method: HTTPMethod,
                               _ pattern: String, _ handler: Handler, _ isNew: inout Bool) throws {
        guard let segment = segments.first else {
            isNew = node.handlers[method] == nil
            node.handlers[method] = handler
            node.pattern = pattern
            return
        }
        let rest = segments.dropFirst()
        if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2 {
            let name = String(segment.dropFirst().dropLast())
            if let existing = node.parameterName, existing != name {
                throw RegistrationError.conflictingParameterName(pattern: pattern)
            }
            node.parameterName = name
            if node.parameterChild.isEmpty { node.parameterChild = [Node()] }
            try insert(into: &node.parameterChild[0], rest, method, pattern, handler, &isNew)
        } else {
            guard !segment.contains("{"), !segment.contains("}") else { throw RegistrationError.invalidPattern(pattern) }
            try insert(into: &node.literals[String(segment), default: Node()], rest, method, pattern, handler, &isNew)
        }
    }

    /// Matches a raw (not yet decoded) path such as `HTTPRequest.path`.
    public func match(method: HTTPMethod, path: Substring) -> RouteMatch<Handler> {
        guard path.utf8.first == UInt8(ascii: "/") else { return .notFound }
        var segments: [String] = []
        for raw in path.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            guard let decoded = PercentDecoding.decode(raw) else { return .notFound }
            segments.append(decoded)
        }
        var parameters: [String: String] = [:]
        var allowedAtFirstPathMatch: [HTTPMethod]?
        if let (pattern, handler) = Self.search(root, segments[...], method, &parameters, &allowedAtFirstPathMatch) {
            return .found(handler, parameters: parameters, pattern: pattern)
        }
        if let allowed = allowedAtFirstPathMatch {
            return .methodNotAllowed(allowed: allowed)
        }
        return .notFound
    }

    public func match(method: HTTPMethod, path: String) -> RouteMatch<Handler> {
        match(method: method, path: path[...])
    }

    private static func search(_ node: Node, _ segments: ArraySlice<String>, _ method: HTTPMethod,
                               _ parameters: inout [String: String],
                               _ allowedAtFirstPathMatch: inout [HTTPMethod]?) -> (String, Handler)? {
        guard let segment = segments.first else {
            guard !node.handlers.isEmpty else { return nil }
            if let handler = node.handlers[method] ?? (method == .head ? node.handlers[.get] : nil) {
                return (node.pattern, handler)
            }
            if allowedAtFirstPathMatch == nil {
                var allowed = Set(node.handlers.keys)
                if allowed.contains(.get) { allowed.insert(.head) }
                allowedAtFirstPathMatch = allowed.sorted { $0.rawValue < $1.rawValue }
            }
            return nil
        }
        let rest = segments.dropFirst()
        if let child = node.literals[segment],
           let result = search(child, rest, method, &parameters, &allowedAtFirstPathMatch) {
            return result
        }
        if let name = node.parameterName, let child = node.parameterChild.first, !segment.isEmpty {
            parameters[name] = segment
            if let result = search(child, rest, method, &parameters, &allowedAtFirstPathMatch) { return result }
            parameters[name] = nil
        }
        return nil
    }
}

extension Router: Sendable where Handler: Sendable {}
extension Router.Node: Sendable where Handler: Sendable {}

public enum HTTPQueryError: Error, Equatable, Sendable {
    /// A `%` not followed by two hex digits, or escapes that decode to invalid UTF-8.
    case invalidPercentEncoding(String)
}

public enum HTTPQuery {
    /// Splits `a=1&b=2` into decoded pairs, in order. Repeated names are kept; empty pieces skipped;
    /// a piece without `=` has an empty value.
    /// `+` stays a literal `+` (not a space): clients send RFC 3339 offsets such as
    /// `start=2026-03-08T09:30:00+01:00` unencoded, and reading that `+` as a space would corrupt them.
    public static func parse(_ raw: Substring) throws -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        for piece in raw.split(separator: "&") {
            let name: Substring
            let value: Substring
            if let equals = piece.firstIndex(of: "=") {
                name = piece[..<equals]
                value = piece[piece.index(after: equals)...]
            } else {
                name = piece
                value = ""
            }
            guard let decodedName = PercentDecoding.decode(name) else { throw HTTPQueryError.invalidPercentEncoding(String(name)) }
            guard let decodedValue = PercentDecoding.decode(value) else { throw HTTPQueryError.invalidPercentEncoding(String(value)) }
            pairs.append((name: decodedName, value: decodedValue))
        }
        return pairs
    }
}

public enum PercentDecoding {
    /// Decodes `%XX` escapes; nil for a malformed escape or a result that is not valid UTF-8.
    public static func decode(_ text: Substring) -> String? {
        let utf8 = text.utf8
        guard utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                guard first < utf8.endIndex else { return nil }
                let second = utf8.index(after: first)
                guard second < utf8.endIndex,
                      let high = ASCII.hexValue(utf8[first]), let low = ASCII.hexValue(utf8[second]) else { return nil }
                bytes.append(UInt8(high << 4 | low))
                index = utf8.index(after: second)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// Turns a request path into safe relative file segments for serving a directory such as `Public/`.
public enum PathNormalizer {
    public enum Rejection: Error, Equatable, Sendable {
        case notAbsolute
        case invalidPercentEncoding
        /// `.` or `..`, written plainly or percent-encoded.
        case dotSegment
        /// An encoded `/` or a `\` (plain or encoded) inside a segment.
        case separatorInSegment
        /// NUL or another control character.
        case controlCharacter
    }

    /// `"/css/site%20main.css"` → `["css", "site main.css"]`. Empty segments (`//`, a trailing `/`)
    /// are dropped, so `"/"` gives `[]`. Never returns a segment that could leave the root directory.
    public static func segments(_ rawPath: Substring) throws(Rejection) -> [String] {
        guard rawPath.utf8.first == UInt8(ascii: "/") else { throw .notAbsolute }
        var result: [String] = []
        for raw in rawPath.split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = PercentDecoding.decode(raw) else { throw .invalidPercentEncoding }
            if segment == "." || segment == ".." { throw .dotSegment }
            for byte in segment.utf8 {
                if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") { throw .separatorInSegment }
                if byte < 0x20 || byte == 0x7F { throw .controlCharacter }
            }
            result.append(segment)
        }
        return result
    }

    public static func segments(_ rawPath: String) throws(Rejection) -> [String] {
        try segments(rawPath[...])
    }
}
