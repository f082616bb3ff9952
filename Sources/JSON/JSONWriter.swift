import Primitives

/// Streams JSON as UTF-8 into a byte buffer.
///
/// The writer places commas and colons; the caller is responsible for a sane
/// sequence of calls (a `key` before each value inside an object, none inside an
/// array). Non-finite numbers cannot be represented in JSON: `number(_:)` writes
/// `null` for NaN and ±infinity, as JavaScript's `JSON.stringify` does, so the
/// output is always valid JSON and no call can fail.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]
    public let prettyPrinted: Bool
    /// True after a complete value or member, when the next one needs a comma first.
    private var needsComma = false
    /// True right after a key: its value stays on the key's line when pretty-printing.
    private var afterKey = false
    private var depth = 0

    /// The most bytes `number(_: Double)` writes: 17 significant digits, a sign, a point and a
    /// three-digit exponent ("-2.2250738585072014e-308"); integral values are shorter.
    public static let maximumDoubleBytes = 24

    public init(capacity: Int = 1024, prettyPrinted: Bool = false) {
        bytes = []
        bytes.reserveCapacity(capacity)
        self.prettyPrinted = prettyPrinted
    }

    // MARK: Structure

    public mutating func beginObject() {
        beginValue()
        bytes.append(0x7B)  // {
        depth += 1
        needsComma = false
    }

    public mutating func endObject() {
        endContainer(closing: 0x7D)  // }
    }

    public mutating func beginArray() {
        beginValue()
        bytes.append(0x5B)  // [
        depth += 1
        needsComma = false
    }

    public mutating func endArray() {
        endContainer(closing: 0x5D)  // ]
    }

    /// Writes an object member name; the next call writes its value.
    public mutating func key(_ name: String) {
        beginValue()
        appendQuoted(name)
        bytes.append(0x3A)  // :
        if prettyPrinted { bytes.append(0x20) }
        needsComma = false
        afterKey = true
    }

    /// An object member name quoted, escaped and followed by its colon once, for writers that
    /// emit the same names for every row of a page.
    public struct Key: Sendable {
        /// `,"name":`: the comma a member after another needs, then the quoted name and colon.
        let encoded: [UInt8]

        public init(_ name: String) {
            var writer = JSONWriter(capacity: name.utf8.count + 4)
            writer.bytes.append(0x2C)  // ,
            writer.appendQuoted(name)
            writer.bytes.append(0x3A)  // :
            encoded = writer.bytes
        }
    }

    /// Writes a member name prepared as a `Key`; the same bytes as `key(_: String)`. Compact
    /// output copies the comma (when one is due), the name and the colon in one go.
    public mutating func key(_ name: Key) {
        name.encoded.withUnsafeBufferPointer { encoded in
            if prettyPrinted {
                beginValue()
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: encoded.dropFirst()))
                bytes.append(0x20)
            } else {
                bytes.append(contentsOf: needsComma ? encoded : UnsafeBufferPointer(rebasing: encoded.dropFirst()))
            }
        }
        needsComma = false
        afterKey = true
    }

    // MARK: Scalars

    public mutating func string(_ value: String) {
        beginValue()
        appendQuoted(value)
        needsComma = true
    }

    /// Writes a string from UTF-8 bytes the caller vouches need no escaping (digits, hex, ASCII
    /// punctuation), formatted into a stack buffer: saves building a String for values formatted
    /// per row (uuids, instants).
    public mutating func unescapedString(_ utf8: UnsafeBufferPointer<UInt8>) {
        beginValue()
        bytes.append(0x22)
        bytes.append(contentsOf: utf8)
        bytes.append(0x22)
        needsComma = true
    }

    /// Writes a string the caller formatted with its quotes from bytes that need no escaping
    /// (digits, hex, ASCII punctuation): one copy for a uuid or an instant written per row.
    public mutating func quotedUnescapedString(_ quoted: UnsafeBufferPointer<UInt8>) {
        beginValue()
        bytes.append(contentsOf: quoted)
        needsComma = true
    }

    /// Writes a value already serialized, compactly, by another JSONWriter (a device object that
    /// repeats on every row of a page is serialized once). Only for writers that do not pretty-print.
    public mutating func serializedValue(_ json: [UInt8]) {
        precondition(!prettyPrinted, "a compact fragment in pretty-printed output")
        beginValue()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    /// Integral values within ±2^53 print without a fraction (`5`, not `5.0`);
    /// others print in the shortest form that reads back to the same Double.
    /// NaN and infinities print as `null`.
    public mutating func number(_ value: Double) {
        beginValue()
        appendNumber(value)
        needsComma = true
    }

    public mutating func integer(_ value: Int64) {
        beginValue()
        appendInteger(value)
        needsComma = true
    }

    public mutating func integer(_ value: Int) {
        integer(Int64(value))
    }

    public mutating func bool(_ value: Bool) {
        beginValue()
        appendLiteral(value ? "true" : "false")
        needsComma = true
    }

    public mutating func null() {
        beginValue()
        appendLiteral("null")
        needsComma = true
    }

    /// Writes a whole value. Recursion depth equals the value's nesting depth,
    /// which the parser bounds for untrusted input.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .number(let number): self.number(number)
        case .string(let text): string(text)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let object):
            beginObject()
            for member in object.members {
                key(member.key)
                self.value(member.value)
            }
            endObject()
        }
    }

    // MARK: Member shorthands, so response builders read as one line per field

    public mutating func field(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    public mutating func field(_ name: String, _ value: Double) {
        key(name)
        number(value)
    }

    public mutating func field(_ name: String, _ value: Int64) {
        key(name)
        integer(value)
    }

    public mutating func field(_ name: String, _ value: Int) {
        key(name)
        integer(Int64(value))
    }

    public mutating func field(_ name: String, _ value: Bool) {
        key(name)
        bool(value)
    }

    public mutating func field(_ name: String, _ value: JSONValue) {
        key(name)
        self.value(value)
    }

    // A member whose value may be missing is written as null (never left out), so clients can
    // tell "no value" from a member this server does not send.

    public mutating func field(_ name: String, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    public mutating func field(_ name: String, _ value: Double?) {
        key(name)
        if let value { number(value) } else { null() }
    }

    public mutating func field(_ name: String, _ value: Int64?) {
        key(name)
        if let value { integer(value) } else { null() }
    }

    // MARK: Internals

    private mutating func beginValue() {
        if needsComma { bytes.append(0x2C) }  // ,
        if prettyPrinted, depth > 0, !afterKey { appendNewlineAndIndent() }
        afterKey = false
    }

    private mutating func endContainer(closing: UInt8) {
        depth -= 1
        // needsComma is false only right after the opening bracket: keep empty containers as {} and [].
        if prettyPrinted, needsComma { appendNewlineAndIndent() }
        bytes.append(closing)
        needsComma = true
    }

    private mutating func appendNewlineAndIndent() {
        bytes.append(0x0A)
        for _ in 0..<(depth * 2) { bytes.append(0x20) }
    }

    private mutating func appendLiteral(_ literal: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    private mutating func appendQuoted(_ text: String) {
        bytes.append(0x22)
        // Native strings lend their UTF-8 in place (small ones from a stack copy). Most strings
        // (names, units, device fields) need no escaping: copy them in one go.
        var text = text
        text.withUTF8 { utf8 in
            if !Self.needsEscaping(utf8) {
                bytes.append(contentsOf: utf8)
            } else {
                appendEscaped(utf8)
            }
        }
        bytes.append(0x22)
    }

    /// True when some byte is a control character, a quote or a backslash (checked a word at a
    /// time: a page of samples runs this over every uuid, date and name it writes).
    static func needsEscaping(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        ByteScan.containsByte(below: 0x20, or: 0x22, or: 0x5C, in: utf8)
    }

    /// Copies runs of bytes that need no escaping in one go.
    private mutating func appendEscaped<Bytes: Collection>(_ utf8: Bytes) where Bytes.Element == UInt8, Bytes.Index == Int {
        var runStart = utf8.startIndex
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte >= 0x20, byte != 0x22, byte != 0x5C {
                index += 1
                continue
            }
            bytes.append(contentsOf: utf8[runStart..<index])
            bytes.append(0x5C)  // backslash
            switch byte {
            case 0x22: bytes.append(0x22)
            case 0x5C: bytes.append(0x5C)
            case 0x0A: bytes.append(0x6E)  // n
            case 0x0D: bytes.append(0x72)  // r
            case 0x09: bytes.append(0x74)  // t
            case 0x08: bytes.append(0x62)  // b
            case 0x0C: bytes.append(0x66)  // f
            default:
                // Remaining control characters as \u00XX; the high nibble is 0 or 1.
                let low = byte & 0x0F
                bytes.append(contentsOf: [0x75, 0x30, 0x30, 0x30 + (byte >> 4), low < 10 ? 0x30 + low : 0x61 + low - 10])
            }
            index += 1
            runStart = index
        }
        bytes.append(contentsOf: utf8[runStart..<index])
    }

    private mutating func appendNumber(_ value: Double) {
        guard value.isFinite else {
            appendLiteral("null")
            return
        }
        if value == 0, value.sign == .minus {
            // Keep the sign: "-0" is valid JSON and reads back as -0.0.
            appendLiteral("-0")
            return
        }
        // The magnitude check makes the conversion safe; comparing back detects a fraction.
        // (Plain conversion rather than rounded()/Int64(exactly:), which pull in libm.)
        if value.magnitude <= 9_007_199_254_740_992, Double(Int64(value)) == value {
            appendInteger(Int64(value))
            return
        }
        // Swift's description is the shortest round-trip form; its exponent
        // forms ("1e-07", "1e+16") are valid JSON, and it never emits "inf" or
        // "nan" for finite values.
        bytes.append(contentsOf: value.description.utf8)
    }

    private mutating func appendInteger(_ value: Int64) {
        if value < 0 { bytes.append(0x2D) }
        var magnitude = value.magnitude
        // 24 bytes hold the 20 digits of UInt64.max; fill from the right, then copy.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var cursor = buffer.count
            repeat {
                cursor -= 1
                buffer[cursor] = 0x30 + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: buffer[cursor...])
        }
    }
}

extension JSONValue {
    /// Compact (or pretty-printed) UTF-8 JSON text of this value.
    public func serialized(prettyPrinted: Bool = false) -> [UInt8] {
        var writer = JSONWriter(capacity: 256, prettyPrinted: prettyPrinted)
        writer.value(self)
        return writer.bytes
    }

    /// The JSON text as a String; convenient in tests and logs.
    public func serializedString(prettyPrinted: Bool = false) -> String {
        String(decoding: serialized(prettyPrinted: prettyPrinted), as: UTF8.self)
    }
}
