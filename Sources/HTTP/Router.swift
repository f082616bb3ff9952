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
    public enum RegistrationError: Error, Equatable {
        case invalidPattern(String)
        case conflictingParameterName(pattern: String)
    }

    // The matching itself lives in a non-generic table of handler slots, so it is compiled once,
    // fully optimized, in this module; only the slot-to-handler step below is generic (and
    // inlinable, so callers get it specialized).
    @usableFromInline var table = RouteTable()
    @usableFromInline var handlers: [Handler] = []

    public var registeredRoutes: [(HTTPMethod, String)] { table.registeredRoutes }

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
        let slot: Int
        switch table.insert(method, pattern, newSlot: handlers.count) {
        case .success(let assigned): slot = assigned
        case .failure(.invalidPattern): throw RegistrationError.invalidPattern(pattern)
        case .failure(.conflictingParameterName): throw RegistrationError.conflictingParameterName(pattern: pattern)
        }
        if slot == handlers.count { handlers.append(handler) } else { handlers[slot] = handler }
    }

    /// Matches a raw (not yet decoded) path such as `HTTPRequest.path`.
    @inlinable
    public func match(method: HTTPMethod, path: Substring) -> RouteMatch<Handler> {
        handlerMatch(table.match(method: method, path: path))
    }

    @inlinable
    public func match(method: HTTPMethod, path: String) -> RouteMatch<Handler> {
        match(method: method, path: path[...])
    }

    /// Matches a request's raw path, read in place: a path equal to a literal pattern (most
    /// requests) is found without making a String or Substring of it.
    @inlinable
    public func match(method: HTTPMethod, request: HTTPRequest) -> RouteMatch<Handler> {
        handlerMatch(table.match(method: method, request: request))
    }

    /// The table's slot replaced by its handler.
    @inlinable
    func handlerMatch(_ match: RouteTable.Match) -> RouteMatch<Handler> {
        switch match {
        case .found(let slot, let parameters, let pattern): return .found(handlers[slot], parameters: parameters, pattern: pattern)
        case .methodNotAllowed(let allowed): return .methodNotAllowed(allowed: allowed)
        case .notFound: return .notFound
        }
    }
}

extension Router: Sendable where Handler: Sendable {}

/// The router's trie over handler slots (indices into `Router.handlers`).
@usableFromInline
struct RouteTable: Sendable {
    @usableFromInline
    enum Match {
        case found(slot: Int, parameters: [String: String], pattern: String)
        case methodNotAllowed([HTTPMethod])
        case notFound
    }

    enum Failure: Error { case invalidPattern, conflictingParameterName }

    private struct Node: Sendable {
        var literals: [String: Int] = [:]
        var parameterName: String?
        var parameterChild: Int?
        var slots: [HTTPMethod: Int] = [:]
        var pattern = ""
    }

    /// Node 0 is the root.
    private var nodes = [Node()]
    /// Patterns without parameters, by their exact bytes: most requests match one of these with a
    /// single lookup instead of a segment-by-segment walk.
    private var literalRoutes = LiteralRoutes()
    private(set) var registeredRoutes: [(HTTPMethod, String)] = []

    @usableFromInline init() {}

    /// The slot for (method, pattern): an existing one when this replaces a handler, else `newSlot`.
    mutating func insert(_ method: HTTPMethod, _ pattern: String, newSlot: Int) -> Result<Int, Failure> {
        guard pattern.hasPrefix("/") else { return .failure(.invalidPattern) }
        var node = 0
        var hasParameter = false
        for segment in pattern.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2 {
                let name = String(segment.dropFirst().dropLast())
                if let existing = nodes[node].parameterName, existing != name { return .failure(.conflictingParameterName) }
                nodes[node].parameterName = name
                if nodes[node].parameterChild == nil {
                    nodes.append(Node())
                    nodes[node].parameterChild = nodes.count - 1
                }
                node = nodes[node].parameterChild ?? 0
                hasParameter = true
            } else {
                guard !segment.contains("{"), !segment.contains("}") else { return .failure(.invalidPattern) }
                if let child = nodes[node].literals[String(segment)] {
                    node = child
                } else {
                    nodes.append(Node())
                    nodes[node].literals[String(segment)] = nodes.count - 1
                    node = nodes.count - 1
                }
            }
        }
        nodes[node].pattern = pattern
        if let existing = nodes[node].slots[method] { return .success(existing) }
        nodes[node].slots[method] = newSlot
        if !hasParameter { literalRoutes.add(path: Array(pattern.utf8), method: method, slot: newSlot, pattern: pattern) }
        registeredRoutes.append((method, pattern))
        return .success(newSlot)
    }

    @usableFromInline
    func match(method: HTTPMethod, path: Substring) -> Match {
        // `withUTF8` rather than the UTF-8 view's `withContiguousStorageIfAvailable`, whose
        // generic slice version measured the offsets with String indices (about 300 instructions).
        var bytesOfPath = path
        if case .found(let slot, let pattern) = bytesOfPath.withUTF8({ literalLookup($0, method: method) }) {
            return .found(slot: slot, parameters: [:], pattern: pattern)
        }
        return walk(method: method, path: path)
    }

    @usableFromInline
    func match(method: HTTPMethod, request: HTTPRequest) -> Match {
        if case .found(let slot, let pattern) = request.withPathBytes({ literalLookup($0, method: method) }) {
            return .found(slot: slot, parameters: [:], pattern: pattern)
        }
        return walk(method: method, path: request.path)
    }

    /// A path without escapes that equals a literal pattern whose node takes this method is
    /// exactly what the walk would find first (literals are tried before parameters). Scanned in
    /// the contiguous bytes: `Substring.UTF8View.contains` walks String indices at about 40
    /// instructions a byte, on every request.
    private func literalLookup(_ bytes: UnsafeBufferPointer<UInt8>, method: HTTPMethod) -> LiteralRoutes.Lookup {
        guard bytes.first == UInt8(ascii: "/") else { return .miss }
        return bytes.contains(UInt8(ascii: "%")) ? .escaped : literalRoutes.lookup(bytes, method: method)
    }

    /// The segment-by-segment walk: parameters, escapes, 404 and 405.
    private func walk(method: HTTPMethod, path: Substring) -> Match {
        guard path.utf8.first == UInt8(ascii: "/") else { return .notFound }
        var segments: [String] = []
        for raw in path.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            guard let decoded = PercentDecoding.decode(raw) else { return .notFound }
            // An escaped control character (`%00`) names no id, name or file: it would otherwise
            // reach a route as a parameter, and PostgreSQL text cannot even hold a NUL. (The parser
            // refuses raw control bytes in the target.)
            if decoded.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return .notFound }
            segments.append(decoded)
        }
        var parameters: [String: String] = [:]
        var allowedAtFirstPathMatch: [HTTPMethod]?
        if let (node, slot) = search(0, segments[...], method, &parameters, &allowedAtFirstPathMatch) {
            return .found(slot: slot, parameters: parameters, pattern: nodes[node].pattern)
        }
        if let allowed = allowedAtFirstPathMatch { return .methodNotAllowed(allowed) }
        return .notFound
    }

    private func slot(in node: Node, for method: HTTPMethod) -> Int? {
        node.slots[method] ?? (method == .head ? node.slots[.get] : nil)
    }

    private func search(_ index: Int, _ segments: ArraySlice<String>, _ method: HTTPMethod,
                        _ parameters: inout [String: String], _ allowedAtFirstPathMatch: inout [HTTPMethod]?) -> (node: Int, slot: Int)? {
        let node = nodes[index]
        guard let segment = segments.first else {
            guard !node.slots.isEmpty else { return nil }
            if let slot = slot(in: node, for: method) { return (index, slot) }
            if allowedAtFirstPathMatch == nil {
                var allowed = Set(node.slots.keys)
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
        if let name = node.parameterName, let child = node.parameterChild, !segment.isEmpty {
            parameters[name] = segment
            if let result = search(child, rest, method, &parameters, &allowedAtFirstPathMatch) { return result }
            parameters[name] = nil
        }
        return nil
    }
}

/// The literal patterns (those without parameters) by their exact bytes, each with its methods'
/// slots: an FNV-1a hash of the path and one byte comparison find a route, where a dictionary keyed
/// by the path (SipHash) and the node's method table (SipHash again) cost about 1,300 instructions
/// on every request. Open addressing over a power-of-two table kept at most half full.
struct LiteralRoutes: Sendable {
    enum Lookup {
        case found(slot: Int, pattern: String)
        /// The path has percent escapes: only the segment walk decodes them.
        case escaped
        /// No literal pattern has this path and method (the walk decides between 404 and 405).
        case miss
    }

    private struct Entry: Sendable {
        var path: [UInt8]
        var methods: [HTTPMethod] = []
        var slots: [Int] = []
        var pattern: String
    }

    private var entries: [Entry] = []
    /// Entry index + 1 per bucket; 0 is empty.
    private var buckets = [Int](repeating: 0, count: 16)

    mutating func add(path: [UInt8], method: HTTPMethod, slot: Int, pattern: String) {
        let index: Int
        if let existing = path.withUnsafeBufferPointer({ entryIndex($0) }) {
            index = existing
        } else {
            entries.append(Entry(path: path, pattern: pattern))
            index = entries.count - 1
            if entries.count * 2 > buckets.count { rehash(buckets.count * 2) } else { place(index) }
        }
        entries[index].methods.append(method)
        entries[index].slots.append(slot)
    }

    func lookup(_ path: UnsafeBufferPointer<UInt8>, method: HTTPMethod) -> Lookup {
        guard let index = entryIndex(path) else { return .miss }
        // Read in place (a copy of the entry would retain each of its arrays and strings).
        // A HEAD is answered by the GET handler unless the path registered HEAD itself.
        var fallback: Int?
        for position in entries[index].methods.indices {
            if entries[index].methods[position] == method { return .found(slot: entries[index].slots[position], pattern: entries[index].pattern) }
            if method == .head && entries[index].methods[position] == .get { fallback = entries[index].slots[position] }
        }
        if let fallback { return .found(slot: fallback, pattern: entries[index].pattern) }
        return .miss
    }

    private func entryIndex(_ path: UnsafeBufferPointer<UInt8>) -> Int? {
        let mask = buckets.count - 1
        var bucket = Self.hash(path) & mask
        while buckets[bucket] != 0 {
            let index = buckets[bucket] - 1
            if entries[index].path.withUnsafeBufferPointer({ Self.equal($0, path) }) { return index }
            bucket = (bucket + 1) & mask
        }
        return nil
    }

    private mutating func place(_ index: Int) {
        let mask = buckets.count - 1
        var bucket = entries[index].path.withUnsafeBufferPointer { Self.hash($0) } & mask
        while buckets[bucket] != 0 { bucket = (bucket + 1) & mask }
        buckets[bucket] = index + 1
    }

    private mutating func rehash(_ count: Int) {
        buckets = [Int](repeating: 0, count: count)
        for index in entries.indices { place(index) }
    }

    private static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for index in 0 ..< a.count where a[index] != b[index] { return false }
        return true
    }

    /// FNV-1a, 64 bits: the table is built from the server's own patterns, so there is no
    /// attacker-chosen key set to defend against, and a probe never runs past a short cluster.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return Int(truncatingIfNeeded: hash ^ (hash >> 32))
    }
}

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
        // Split as bytes: `&` and `=` are ASCII, and Character-by-Character splitting costs more than the decoding.
        for piece in raw.utf8.split(separator: UInt8(ascii: "&")) {
            let name: Substring
            let value: Substring
            if let equals = piece.firstIndex(of: UInt8(ascii: "=")) {
                name = Substring(piece[..<equals])
                value = Substring(piece[piece.index(after: equals)...])
            } else {
                name = Substring(piece)
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
