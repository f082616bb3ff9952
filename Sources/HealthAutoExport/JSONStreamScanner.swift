import JSON

/// A forward-only pass over one JSON document in memory that walks its outer structure without
/// building a tree: containers are entered member by member, and only the values a caller asks
/// for become `JSONValue`s, each parsed by the strict `JSONParser` over its own bytes. So a
/// payload of millions of points costs one small tree per point, never one tree for all of it.
///
/// A value that is skipped (`skipValue`) is checked for JSON structure only: balanced
/// containers, terminated strings with valid escapes, literals and number characters. Values
/// that are used are checked fully (UTF-8, number grammar, duplicate keys).
public struct JSONStreamScanner {
    public let bytes: UnsafeRawBufferPointer
    public internal(set) var position = 0
    private let maxDepth: Int

    public init(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = JSONParser.defaultMaxDepth) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// What the next value is, judged by its first byte.
    public enum Kind: Sendable, Equatable {
        case object, array, string, number, bool, null
    }

    public mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    public var isAtEnd: Bool { position >= bytes.count }

    /// The kind of the value at the current position (after whitespace).
    public mutating func peekKind() throws(JSONParseError) -> Kind {
        skipWhitespace()
        guard position < bytes.count else { throw error("unexpected end of input (expected a value)") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: throw error("unexpected character \(Self.describe(bytes[position])) (expected a value)")
        }
    }

    /// Calls `body` with each member's key; `body` must consume the member's value (read or skip it).
    /// Duplicate keys are refused, as the strict parser refuses them. Syntax errors are `JSONParseError`s;
    /// `body`'s own errors pass through.
    public mutating func forEachMember(_ body: (inout JSONStreamScanner, String) throws -> Void) throws {
        skipWhitespace()
        try expect(UInt8(ascii: "{"), "'{'")
        var seen: Set<String> = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            let keyStart = position
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try parseString()
            guard seen.insert(key).inserted else {
                throw JSONParseError(offset: keyStart, reason: "duplicate key \"\(key)\"")
            }
            skipWhitespace()
            try expect(UInt8(ascii: ":"), "':' after a key")
            try body(&self, key)
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input (expected ',' or '}')") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return
            }
            throw error("unexpected character \(Self.describe(bytes[position])) (expected ',' or '}')")
        }
    }

    /// Calls `body` with each element's index; `body` must consume the element.
    public mutating func forEachElement(_ body: (inout JSONStreamScanner, Int) throws -> Void) throws {
        skipWhitespace()
        try expect(UInt8(ascii: "["), "'['")
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return
        }
        var index = 0
        while true {
            try body(&self, index)
            index += 1
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input (expected ',' or ']')") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return
            }
            throw error("unexpected character \(Self.describe(bytes[position])) (expected ',' or ']')")
        }
    }

    /// The next value as a tree, checked by the strict parser.
    public mutating func readValue() throws(JSONParseError) -> JSONValue {
        let range = try skipValue()
        do {
            return try JSONParser.parse(UnsafeRawBufferPointer(rebasing: bytes[range]), maxDepth: maxDepth)
        } catch {
            throw JSONParseError(offset: range.lowerBound + error.offset, reason: error.reason)
        }
    }

    /// The bytes of the next value, whose structure is checked on the way: containers balance,
    /// object members are `"key": value`, elements and members are separated by commas.
    @discardableResult
    public mutating func skipValue() throws(JSONParseError) -> Range<Int> {
        skipWhitespace()
        let start = position
        // Open containers, innermost last: true for an object.
        var objects: [Bool] = []
        while true {
            // A value starts here.
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end of input (expected a value)") }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard objects.count < maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
                let isObject = byte == UInt8(ascii: "{")
                position += 1
                skipWhitespace()
                if position < bytes.count, bytes[position] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    position += 1
                } else {
                    objects.append(isObject)
                    if isObject { try skipKeyAndColon() }
                    continue
                }
            case UInt8(ascii: "\""):
                try skipString()
            case UInt8(ascii: "t"): try expectLiteral("true")
            case UInt8(ascii: "f"): try expectLiteral("false")
            case UInt8(ascii: "n"): try expectLiteral("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                while position < bytes.count, Self.isNumberByte(bytes[position]) { position += 1 }
            default:
                throw error("unexpected character \(Self.describe(byte)) (expected a value)")
            }
            // After a value: the next member or element, or the end of containers.
            while let isObject = objects.last {
                skipWhitespace()
                guard position < bytes.count else { throw error("unexpected end of input inside a container") }
                let next = bytes[position]
                if next == UInt8(ascii: ",") {
                    position += 1
                    if isObject { try skipKeyAndColon() }
                    break
                }
                guard next == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else {
                    throw error("unexpected character \(Self.describe(next)) (expected ',' or \(isObject ? "'}'" : "']'"))")
                }
                position += 1
                objects.removeLast()
            }
            if objects.isEmpty { return start..<position }
        }
    }

    private mutating func skipKeyAndColon() throws(JSONParseError) {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error("expected a string key") }
        try skipString()
        skipWhitespace()
        try expect(UInt8(ascii: ":"), "':' after a key")
    }

    /// Fails unless only whitespace is left.
    public mutating func expectEnd() throws(JSONParseError) {
        skipWhitespace()
        guard position >= bytes.count else { throw error("unexpected data after the document") }
    }

    public func error(_ reason: String) -> JSONParseError { JSONParseError(offset: position, reason: reason) }

    // MARK: Pieces

    private mutating func expect(_ byte: UInt8, _ what: String) throws(JSONParseError) {
        guard position < bytes.count else { throw error("unexpected end of input (expected \(what))") }
        guard bytes[position] == byte else { throw error("unexpected character \(Self.describe(bytes[position])) (expected \(what))") }
        position += 1
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw error("unexpected end of input in a literal") }
        for offset in 0..<count where bytes[position + offset] != literal.utf8Start[offset] {
            throw error("invalid literal (expected \(literal))")
        }
        position += count
    }

    /// A string key or value, decoded by the strict parser.
    private mutating func parseString() throws(JSONParseError) -> String {
        let start = position
        try skipString()
        let value: JSONValue
        do {
            value = try JSONParser.parse(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        } catch {
            throw JSONParseError(offset: start + error.offset, reason: error.reason)
        }
        guard case .string(let text) = value else { throw JSONParseError(offset: start, reason: "expected a string") }
        return text
    }

    /// Past a string: escapes are checked for their form, raw control characters refused.
    private mutating func skipString() throws(JSONParseError) {
        position += 1
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return
            }
            if byte < 0x20 { throw error("control character in a string") }
            if byte == UInt8(ascii: "\\") {
                guard position + 1 < bytes.count else { break }
                switch bytes[position + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    position += 2
                case UInt8(ascii: "u"):
                    // `break` here would leave only the switch and spin on the same byte forever.
                    guard position + 6 <= bytes.count else { throw error("unexpected end of input in a \\u escape") }
                    for offset in 2..<6 where !Self.isHexDigit(bytes[position + offset]) {
                        throw error("invalid \\u escape")
                    }
                    position += 6
                default:
                    throw error("invalid escape")
                }
                continue
            }
            position += 1
        }
        throw error("unexpected end of input in a string")
    }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
             UInt8(ascii: "e"), UInt8(ascii: "E"): return true
        default: return false
        }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): return true
        default: return false
        }
    }

    private static func describe(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "0x" + String(byte, radix: 16)
    }
}
