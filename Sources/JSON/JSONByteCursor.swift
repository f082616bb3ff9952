/// Byte-level pieces of the strict grammar shared by `JSONParser` and `JSONByteCursor`, so the
/// two accept exactly the same numbers and UTF-8.
enum JSONBytes {
    /// What `number(_:at:)` found.
    enum NumberScan {
        case value(Double, end: Int)
        /// A byte that cannot continue the number (`offset` may be the end of the input).
        case unexpected(at: Int, expecting: String)
        case leadingZero(start: Int)
        case outOfRange(start: Int, text: String)
    }

    /// Exact powers of ten for the fast number path: every 10^k with k <= 22 is exactly representable.
    static let exactPowersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    /// Reads the RFC 8259 number starting at `start` (a `-` or a digit).
    static func number(_ input: UnsafeBufferPointer<UInt8>, at start: Int) -> NumberScan {
        var index = start
        let isNegative = index < input.count && input[index] == UInt8(ascii: "-")
        if isNegative { index += 1 }

        // Up to 19 digits fit a UInt64; beyond 15 the fast path is off anyway.
        var mantissa: UInt64 = 0
        var digitCount = 0
        var fractionDigits = 0

        guard index < input.count, isDigit(input[index]) else { return .unexpected(at: index, expecting: "a digit") }
        if input[index] == UInt8(ascii: "0") {
            index += 1
            if index < input.count, isDigit(input[index]) { return .leadingZero(start: start) }
        } else {
            while index < input.count, isDigit(input[index]) {
                if digitCount < 19 { mantissa = mantissa &* 10 &+ UInt64(input[index] &- UInt8(ascii: "0")) }
                digitCount += 1
                index += 1
            }
        }

        if index < input.count, input[index] == UInt8(ascii: ".") {
            index += 1
            guard index < input.count, isDigit(input[index]) else { return .unexpected(at: index, expecting: "a digit after '.'") }
            while index < input.count, isDigit(input[index]) {
                if digitCount < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(input[index] &- UInt8(ascii: "0"))
                    fractionDigits += 1
                }
                digitCount += 1
                index += 1
            }
        }

        var exponent = 0
        if index < input.count, input[index] == UInt8(ascii: "e") || input[index] == UInt8(ascii: "E") {
            index += 1
            var exponentIsNegative = false
            if index < input.count, input[index] == UInt8(ascii: "-") || input[index] == UInt8(ascii: "+") {
                exponentIsNegative = input[index] == UInt8(ascii: "-")
                index += 1
            }
            guard index < input.count, isDigit(input[index]) else { return .unexpected(at: index, expecting: "a digit in the exponent") }
            while index < input.count, isDigit(input[index]) {
                // Saturate: anything this large over- or underflows regardless.
                if exponent < 100_000 { exponent = exponent * 10 + Int(input[index] &- UInt8(ascii: "0")) }
                index += 1
            }
            if exponentIsNegative { exponent = -exponent }
        }

        // Clinger's fast path: an exact mantissa times an exact power of ten
        // is correctly rounded by a single IEEE operation.
        if digitCount <= 15 {
            let scale = exponent - fractionDigits
            var value: Double?
            if mantissa == 0 {
                value = 0
            } else if scale == 0 {
                value = Double(mantissa)
            } else if scale > 0, scale <= 22 {
                value = Double(mantissa) * exactPowersOfTen[scale]
            } else if scale < 0, scale >= -22 {
                value = Double(mantissa) / exactPowersOfTen[-scale]
            }
            if let value {
                return .value(isNegative ? -value : value, end: index)
            }
        }

        // Slow path: the standard library's correctly rounded conversion. The
        // grammar was checked above, so it cannot see "inf", "nan" or hex forms.
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { return .outOfRange(start: start, text: text) }
        return .value(value, end: index)
    }

    /// Length of the well-formed multi-byte UTF-8 sequence at `index` (Unicode
    /// Table 3-7), which rules out overlong forms, surrogates and values above U+10FFFF; nil when
    /// the bytes there are not one.
    static func utf8SequenceLength(_ input: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        let lead = input[index]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: return nil
        }
        guard index + length <= input.count else { return nil }
        guard secondRange.contains(input[index + 1]) else { return nil }
        for offset in 2..<length where input[index + offset] & 0xC0 != 0x80 {
            return nil
        }
        return length
    }
}

/// A forward cursor for decoders that read a document of a known shape straight from its bytes,
/// with no tree and no intermediate strings (the samples of a `POST /v1/samples` body).
///
/// Each step reads only what the strict `JSONParser` would accept the same way, and answers nil
/// (or false) for anything else: a string with an escape, a malformed number, an unexpected
/// byte. Nil never means "invalid", only "not read here": the caller then gives that part, or the
/// whole document, to `JSONParser`, which accepts it or names the error. So a decoder built on
/// the cursor needs no error messages of its own and cannot accept what the parser refuses.
public struct JSONByteCursor {
    public let bytes: UnsafeBufferPointer<UInt8>
    public var position: Int

    public init(_ bytes: UnsafeBufferPointer<UInt8>, position: Int = 0) {
        self.bytes = bytes
        self.position = position
    }

    public var isAtEnd: Bool { position >= bytes.count }

    @inline(__always)
    public mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    /// The next byte after whitespace, not consumed; nil at the end.
    @inline(__always)
    public mutating func peek() -> UInt8? {
        skipWhitespace()
        return position < bytes.count ? bytes[position] : nil
    }

    /// Consumes `byte` after whitespace; false (nothing consumed but whitespace) when another byte is there.
    @inline(__always)
    public mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    /// A string without escapes, after whitespace: the range of its content bytes (valid UTF-8,
    /// no control characters), with the cursor past its closing quote. Nil for anything else.
    public mutating func plainString() -> Range<Int>? {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), let base = bytes.baseAddress else { return nil }
        let start = position + 1
        var index = start
        let raw = UnsafeRawPointer(base)
        while index < bytes.count {
            // Eight bytes at a time up to the first that needs a look: a quote, a backslash, a
            // control character or a non-ASCII byte (see `ByteScan`; the lowest flagged byte of a
            // word is always a true one, and only it is acted on).
            if index + 8 <= bytes.count {
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let ones: UInt64 = 0x0101_0101_0101_0101
                let quotes = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
                let backslashes = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
                let flagged = ((word &- ones &* 0x20) | (quotes &- ones) & ~quotes | (backslashes &- ones) & ~backslashes | word)
                    & 0x8080_8080_8080_8080
                if flagged == 0 {
                    index += 8
                    continue
                }
                index += flagged.trailingZeroBitCount / 8
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                position = index + 1
                return start..<index
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            if byte < 0x80 {
                index += 1
            } else {
                guard let length = JSONBytes.utf8SequenceLength(bytes, at: index) else { return nil }
                index += length
            }
        }
        return nil
    }

    /// A number, after whitespace, exactly as `JSONParser` reads it; nil when none is there or it
    /// is malformed or out of range.
    public mutating func number() -> Double? {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "-") || JSONBytes.isDigit(bytes[position]) else { return nil }
        guard case .value(let value, end: let end) = JSONBytes.number(bytes, at: position) else { return nil }
        position = end
        return value
    }

    /// `true`, `false` or `null` after whitespace: consumed when `literal` is there.
    public mutating func consumeLiteral(_ literal: StaticString) -> Bool {
        skipWhitespace()
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[position + offset] != literal.utf8Start[offset] { return false }
        position += count
        return true
    }

    /// True when `range` of the input holds exactly the bytes of `text`.
    @inline(__always)
    public func matches(_ range: Range<Int>, _ text: StaticString) -> Bool {
        guard range.count == text.utf8CodeUnitCount, range.lowerBound >= 0, range.upperBound <= bytes.count,
              let base = bytes.baseAddress else { return range.isEmpty && text.utf8CodeUnitCount == 0 }
        return memoryEqual(base + range.lowerBound, text.utf8Start, range.count)
    }

    /// True when the bytes at `range` equal those at `other` (both in this input).
    @inline(__always)
    public func sameBytes(_ range: Range<Int>, _ other: Range<Int>) -> Bool {
        guard range.count == other.count, range.upperBound <= bytes.count, other.upperBound <= bytes.count else { return false }
        guard let base = bytes.baseAddress else { return range.isEmpty }
        return memoryEqual(base + range.lowerBound, base + other.lowerBound, range.count)
    }

    /// The text of `range` (valid UTF-8: the cursor checked it).
    public func string(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }
}

/// `memcmp` without importing the C library into a pure module: eight bytes at a time.
@inline(__always)
func memoryEqual(_ left: UnsafePointer<UInt8>, _ right: UnsafePointer<UInt8>, _ count: Int) -> Bool {
    var offset = 0
    let leftRaw = UnsafeRawPointer(left), rightRaw = UnsafeRawPointer(right)
    while offset + 8 <= count {
        if leftRaw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            != rightRaw.loadUnaligned(fromByteOffset: offset, as: UInt64.self) { return false }
        offset += 8
    }
    while offset < count {
        if left[offset] != right[offset] { return false }
        offset += 1
    }
    return true
}
