import Primitives
/// A syntax error in a JSON document: where it is and what is wrong.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset into the input at which the problem was detected.
    public let offset: Int
    /// What is wrong, without the position ("unexpected character 'x' (expected a value)").
    public let reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "\(reason) at byte \(offset)" }

    /// The two mistakes people make with files and editors, named so they know what to fix: a
    /// UTF-8 byte-order mark, and no value at all. Nil when the text may start a JSON value.
    public static func atDocumentStart(_ text: UnsafeRawBufferPointer) -> JSONParseError? {
        if text.count >= 3, text[0] == 0xEF, text[1] == 0xBB, text[2] == 0xBF {
            return JSONParseError(offset: 0, reason: "the text starts with a UTF-8 byte-order mark (EF BB BF), which JSON "
                                  + "does not allow (RFC 8259, 8.1); save or send it without the mark")
        }
        var position = 0
        while position < text.count, text[position] == 0x20 || text[position] == 0x09 || text[position] == 0x0A
                || text[position] == 0x0D {
            position += 1
        }
        guard position == text.count else { return nil }
        return JSONParseError(offset: position, reason: "the text is empty" + (position > 0 ? " (only whitespace)" : "")
                              + "; expected a JSON value")
    }
}

/// Strict RFC 8259 parser.
///
/// Beyond the grammar it rejects invalid UTF-8 (overlong forms, encoded
/// surrogates, truncated sequences), lone surrogates in `\u` escapes, numbers
/// that overflow `Double`, duplicate keys within one object, and nesting deeper
/// than `maxDepth`. It is iterative, so hostile nesting cannot overflow the stack.
public enum JSONParser {
    public static let defaultMaxDepth = 64

    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> JSONValue in
            var parser = Parser(input: buffer, maxDepth: maxDepth)
            return try parser.parseDocument()
        }
    }

    /// Offsets in errors are relative to the start of the slice.
    public static func parse(_ bytes: ArraySlice<UInt8>, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> JSONValue in
            var parser = Parser(input: buffer, maxDepth: maxDepth)
            return try parser.parseDocument()
        }
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        let buffer = UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        var parser = Parser(input: buffer, maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }

    /// Parses the one value that starts at `offset` (after any whitespace) and returns it with the
    /// offset just past it; what follows is left to the caller. Decoders that read most of a
    /// document straight from its bytes (`JSONByteCursor`) hand the parts they do not read
    /// themselves to this. Offsets in errors are relative to `bytes`.
    public static func parseValue(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int,
                                  maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> (value: JSONValue, end: Int) {
        var parser = Parser(input: bytes, maxDepth: maxDepth)
        parser.position = offset
        parser.stopsAfterValue = true
        let value = try parser.parseDocument()
        return (value, parser.position)
    }
}

private enum Byte {
    static let quote: UInt8 = 0x22  // "
    static let backslash: UInt8 = 0x5C
    static let slash: UInt8 = 0x2F
    static let comma: UInt8 = 0x2C
    static let colon: UInt8 = 0x3A
    static let openBrace: UInt8 = 0x7B
    static let closeBrace: UInt8 = 0x7D
    static let openBracket: UInt8 = 0x5B
    static let closeBracket: UInt8 = 0x5D
    static let minus: UInt8 = 0x2D
    static let plus: UInt8 = 0x2B
    static let dot: UInt8 = 0x2E
    static let zero: UInt8 = 0x30
    static let nine: UInt8 = 0x39
    static let lowerE: UInt8 = 0x65
    static let upperE: UInt8 = 0x45
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let newline: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
}

private struct Parser {
    enum ContainerKind { case array, object }

    /// An open container collecting its contents. Each frame owns its arrays, so
    /// closing it moves them into the finished value without copying elements.
    struct Frame {
        let kind: ContainerKind
        var elements: [JSONValue] = []
        var members: [JSONObject.Member] = []
        /// Key of the member whose value is being parsed.
        var pendingKey = ""
        /// Keys seen so far, built only once an object grows large, so that
        /// duplicate detection stays linear for hostile inputs.
        var keyIndex: Set<String>?

        init(kind: ContainerKind) {
            self.kind = kind
            // Request objects (a sample, a device) have a handful of members: one allocation
            // instead of growing 1, 2, 4, 8.
            if kind == .object { members.reserveCapacity(8) }
        }
    }

    /// Beyond this many members, duplicate detection switches from a scan to a set.
    static let linearKeyScanLimit = 16

    let input: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var position = 0
    /// Set by `parseValue`: the value need not end the input.
    var stopsAfterValue = false
    var frames: [Frame] = []
    /// Reused buffer for strings that contain escapes.
    var scratch: [UInt8] = []

    init(input: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.input = input
        self.maxDepth = maxDepth
    }

    // MARK: Document structure

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if !stopsAfterValue, let problem = JSONParseError.atDocumentStart(UnsafeRawBufferPointer(input)) { throw problem }
        skipWhitespace()
        nextValue: while true {
            // Here a value must start at `position` (whitespace already skipped).
            guard position < input.count else { throw endOfInput() }
            var completed: JSONValue
            switch input[position] {
            case Byte.openBrace:
                try openContainer(.object)
                skipWhitespace()
                if position < input.count, input[position] == Byte.closeBrace {
                    position += 1
                    frames.removeLast()
                    completed = .object(JSONObject())
                } else {
                    try parseKeyAndColon()
                    continue nextValue
                }
            case Byte.openBracket:
                try openContainer(.array)
                skipWhitespace()
                if position < input.count, input[position] == Byte.closeBracket {
                    position += 1
                    frames.removeLast()
                    completed = .array([])
                } else {
                    continue nextValue
                }
            case Byte.quote:
                completed = .string(try parseString())
            case 0x74:  // t
                try expectLiteral("true")
                completed = .bool(true)
            case 0x66:  // f
                try expectLiteral("false")
                completed = .bool(false)
            case 0x6E:  // n
                try expectLiteral("null")
                completed = .null
            case Byte.minus, Byte.zero...Byte.nine:
                completed = .number(try parseNumber())
            default:
                throw unexpected(at: position, expecting: "a value")
            }

            // A value is complete: hand it to its container, closing every container that ends here.
            while true {
                let top = frames.count - 1
                guard top >= 0 else {
                    if stopsAfterValue { return completed }
                    skipWhitespace()
                    if position < input.count {
                        throw unexpected(at: position, expecting: "end of input")
                    }
                    return completed
                }
                let kind = frames[top].kind
                switch kind {
                case .array:
                    frames[top].elements.append(completed)
                case .object:
                    frames[top].members.append((key: frames[top].pendingKey, value: completed))
                }
                skipWhitespace()
                guard position < input.count else { throw endOfInput() }
                let byte = input[position]
                switch kind {
                case .array:
                    if byte == Byte.comma {
                        position += 1
                        skipWhitespace()
                        continue nextValue
                    }
                    guard byte == Byte.closeBracket else {
                        throw unexpected(at: position, expecting: "',' or ']'")
                    }
                    position += 1
                    completed = .array(frames.removeLast().elements)
                case .object:
                    if byte == Byte.comma {
                        position += 1
                        skipWhitespace()
                        try parseKeyAndColon()
                        continue nextValue
                    }
                    guard byte == Byte.closeBrace else {
                        throw unexpected(at: position, expecting: "',' or '}'")
                    }
                    position += 1
                    completed = .object(JSONObject(frames.removeLast().members))
                }
            }
        }
    }

    mutating func openContainer(_ kind: ContainerKind) throws(JSONParseError) {
        guard frames.count < maxDepth else {
            throw JSONParseError(offset: position, reason: "nesting deeper than \(maxDepth) levels")
        }
        frames.append(Frame(kind: kind))
        position += 1
    }

    /// Parses `"key" :` into the innermost (object) frame, rejecting a key the
    /// object already has, and leaves `position` at the start of the member's value.
    mutating func parseKeyAndColon() throws(JSONParseError) {
        guard position < input.count else { throw endOfInput() }
        guard input[position] == Byte.quote else {
            throw unexpected(at: position, expecting: "a string key")
        }
        let keyOffset = position
        let key = try parseString()
        let top = frames.count - 1
        if frames[top].members.count < Self.linearKeyScanLimit {
            for member in frames[top].members where JSONObject.sameKey(member.key, key) {
                throw JSONParseError(offset: keyOffset, reason: "duplicate key \"\(key)\"")
            }
        } else {
            if frames[top].keyIndex == nil {
                frames[top].keyIndex = Set(frames[top].members.map(\.key))
            }
            guard frames[top].keyIndex?.insert(key).inserted == true else {
                throw JSONParseError(offset: keyOffset, reason: "duplicate key \"\(key)\"")
            }
        }
        frames[top].pendingKey = key
        skipWhitespace()
        guard position < input.count else { throw endOfInput() }
        guard input[position] == Byte.colon else {
            throw unexpected(at: position, expecting: "':'")
        }
        position += 1
        skipWhitespace()
    }

    mutating func skipWhitespace() {
        while position < input.count {
            switch input[position] {
            case Byte.space, Byte.newline, Byte.carriageReturn, Byte.tab:
                position += 1
            default:
                return
            }
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for index in 0..<count {
            let offset = position + index
            guard offset < input.count else { throw endOfInput() }
            guard input[offset] == expected[index] else {
                throw unexpected(at: offset, expecting: "'\(literal)'")
            }
        }
        position += count
    }

    // MARK: Strings

    /// Parses a string starting at the opening quote. Strings without escapes
    /// are decoded straight from the input with no intermediate copy.
    mutating func parseString() throws(JSONParseError) -> String {
        let start = position + 1
        var index = start
        while index < input.count {
            let byte = input[index]
            if byte == Byte.quote {
                position = index + 1
                return String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)
            }
            if byte == Byte.backslash {
                return try parseEscapedString(contentStart: start, firstEscape: index)
            }
            if byte < 0x20 {
                throw controlCharacter(at: index)
            }
            index += byte < 0x80 ? 1 : try utf8SequenceLength(at: index)
        }
        throw JSONParseError(offset: input.count, reason: "unterminated string starting at byte \(position)")
    }

    mutating func parseEscapedString(contentStart: Int, firstEscape: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[contentStart..<firstEscape]))
        var index = firstEscape
        while index < input.count {
            let byte = input[index]
            if byte == Byte.quote {
                position = index + 1
                return String(decoding: scratch, as: UTF8.self)
            }
            if byte == Byte.backslash {
                index = try appendEscape(at: index)
            } else if byte < 0x20 {
                throw controlCharacter(at: index)
            } else if byte < 0x80 {
                scratch.append(byte)
                index += 1
            } else {
                let length = try utf8SequenceLength(at: index)
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[index..<(index + length)]))
                index += length
            }
        }
        throw JSONParseError(offset: input.count, reason: "unterminated string starting at byte \(contentStart - 1)")
    }

    /// Decodes the escape at `backslashIndex` into `scratch`; returns the index after it.
    mutating func appendEscape(at backslashIndex: Int) throws(JSONParseError) -> Int {
        let letterIndex = backslashIndex + 1
        guard letterIndex < input.count else { throw endOfInput() }
        let decoded: UInt8
        switch input[letterIndex] {
        case Byte.quote: decoded = Byte.quote
        case Byte.backslash: decoded = Byte.backslash
        case Byte.slash: decoded = Byte.slash
        case 0x62: decoded = 0x08  // \b
        case 0x66: decoded = 0x0C  // \f
        case 0x6E: decoded = Byte.newline  // \n
        case 0x72: decoded = Byte.carriageReturn  // \r
        case 0x74: decoded = Byte.tab  // \t
        case 0x75:  // \u
            return try appendUnicodeEscape(at: backslashIndex)
        default:
            throw JSONParseError(offset: letterIndex, reason: "invalid escape sequence \(describe(input[letterIndex]))")
        }
        scratch.append(decoded)
        return letterIndex + 1
    }

    mutating func appendUnicodeEscape(at backslashIndex: Int) throws(JSONParseError) -> Int {
        let unit = try hexCodeUnit(at: backslashIndex + 2)
        var next = backslashIndex + 6
        let scalarValue: UInt32
        switch unit {
        case 0xD800...0xDBFF:
            // A high surrogate must be followed immediately by an escaped low surrogate.
            guard next + 1 < input.count, input[next] == Byte.backslash, input[next + 1] == 0x75 else {
                throw JSONParseError(offset: backslashIndex, reason: "unpaired high surrogate in \\u escape")
            }
            let low = try hexCodeUnit(at: next + 2)
            guard (0xDC00...0xDFFF).contains(low) else {
                throw JSONParseError(offset: backslashIndex, reason: "unpaired high surrogate in \\u escape")
            }
            scalarValue = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            next += 6
        case 0xDC00...0xDFFF:
            throw JSONParseError(offset: backslashIndex, reason: "unpaired low surrogate in \\u escape")
        default:
            scalarValue = unit
        }
        appendUTF8(scalarValue)
        return next
    }

    func hexCodeUnit(at start: Int) throws(JSONParseError) -> UInt32 {
        var unit: UInt32 = 0
        for offset in start..<(start + 4) {
            guard offset < input.count else { throw endOfInput() }
            let byte = input[offset]
            guard let digit = HexDigit.value(byte) else {
                throw JSONParseError(offset: offset, reason: "invalid hex digit \(describe(byte)) in \\u escape")
            }
            unit = unit << 4 | UInt32(digit)
        }
        return unit
    }

    /// `value` is a Unicode scalar: surrogates were excluded by the caller.
    mutating func appendUTF8(_ value: UInt32) {
        switch value {
        case 0..<0x80:
            scratch.append(UInt8(value))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | (value >> 6)))
            scratch.append(UInt8(0x80 | (value & 0x3F)))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | (value >> 12)))
            scratch.append(UInt8(0x80 | ((value >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (value & 0x3F)))
        default:
            scratch.append(UInt8(0xF0 | (value >> 18)))
            scratch.append(UInt8(0x80 | ((value >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((value >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (value & 0x3F)))
        }
    }

    /// Length of the well-formed multi-byte UTF-8 sequence at `index` (Unicode
    /// Table 3-7), which rules out overlong forms, surrogates and values above U+10FFFF.
    func utf8SequenceLength(at index: Int) throws(JSONParseError) -> Int {
        guard let length = JSONBytes.utf8SequenceLength(input, at: index) else { throw invalidUTF8(at: index) }
        return length
    }

    // MARK: Numbers

    mutating func parseNumber() throws(JSONParseError) -> Double {
        switch JSONBytes.number(input, at: position) {
        case .value(let value, end: let end):
            position = end
            return value
        case .unexpected(at: let offset, expecting: let expected):
            throw offset < input.count ? unexpected(at: offset, expecting: expected) : endOfInput()
        case .leadingZero(start: let start):
            throw JSONParseError(offset: start, reason: "leading zeros are not allowed in numbers")
        case .outOfRange(start: let start, text: let text):
            throw JSONParseError(offset: start, reason: "number \(text) is out of range")
        }
    }

    // MARK: Errors

    func endOfInput() -> JSONParseError {
        JSONParseError(offset: input.count, reason: "unexpected end of input")
    }

    func unexpected(at offset: Int, expecting expected: String) -> JSONParseError {
        let byte = input[offset]
        if byte >= 0x80 {
            if (try? utf8SequenceLength(at: offset)) == nil {
                return invalidUTF8(at: offset)
            }
        }
        return JSONParseError(offset: offset, reason: "unexpected \(describe(byte)) (expected \(expected))")
    }

    func controlCharacter(at offset: Int) -> JSONParseError {
        JSONParseError(offset: offset, reason: "unescaped control character \(describe(input[offset])) in string")
    }

    func invalidUTF8(at offset: Int) -> JSONParseError {
        JSONParseError(offset: offset, reason: "invalid UTF-8 byte \(hex(input[offset]))")
    }

    func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x21..<0x7F: "character '\(Character(Unicode.Scalar(byte)))'"
        case Byte.space: "space"
        case Byte.newline: "newline"
        case Byte.carriageReturn: "carriage return"
        case Byte.tab: "tab"
        case 0x80...: "non-ASCII byte \(hex(byte))"
        default: "control character \(hex(byte))"
        }
    }

    func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0x0\(digits)" : "0x\(digits)"
    }
}
