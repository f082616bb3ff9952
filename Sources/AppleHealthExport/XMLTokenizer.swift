/// A well-formedness error: what is wrong and where (1-based line; column in bytes from the line's start, 1-based).
public struct XMLSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var detail: String

    public init(line: Int, column: Int, detail: String) {
        self.line = line
        self.column = column
        self.detail = detail
    }

    public var description: String { "line \(line), column \(column): \(detail)" }
}

/// Receives the tokenizer's events. An empty element `<a/>` arrives as a start then an end.
public protocol XMLTokenHandler {
    mutating func startElement(_ tag: XMLStartTag)
    mutating func endElement(_ name: UnsafeRawBufferPointer)
}

/// Where an attribute lies in the tokenizer's buffer (offsets from the start tag's `<`).
struct XMLAttributeSpan {
    var nameStart: Int32
    var nameEnd: Int32
    var valueStart: Int32
    var valueEnd: Int32
    /// The value holds entity references or literal tab/newline/return bytes that XML turns into spaces.
    var needsDecoding: Bool
}

/// A start tag as the tokenizer saw it, valid only during `startElement`: names are compared as bytes
/// and a value becomes a `String` only when asked for.
public struct XMLStartTag {
    private let base: UnsafeRawPointer
    private let spans: UnsafeBufferPointer<XMLAttributeSpan>
    public let name: UnsafeRawBufferPointer

    init(base: UnsafeRawPointer, name: UnsafeRawBufferPointer, spans: UnsafeBufferPointer<XMLAttributeSpan>) {
        self.base = base
        self.name = name
        self.spans = spans
    }

    public var attributeCount: Int { spans.count }

    public func attributeName(at index: Int) -> UnsafeRawBufferPointer {
        let span = spans[index]
        return UnsafeRawBufferPointer(start: base + Int(span.nameStart), count: Int(span.nameEnd - span.nameStart))
    }

    /// The raw bytes between the quotes, entity references not yet decoded.
    public func rawValue(at index: Int) -> UnsafeRawBufferPointer {
        let span = spans[index]
        return UnsafeRawBufferPointer(start: base + Int(span.valueStart), count: Int(span.valueEnd - span.valueStart))
    }

    /// Whether the raw value holds references or tab/newline/return bytes that decoding changes.
    public func valueNeedsDecoding(at index: Int) -> Bool { spans[index].needsDecoding }

    /// The attribute's value as XML defines it: references decoded, tab/newline/return as spaces.
    public func value(at index: Int) -> String {
        let raw = rawValue(at: index)
        guard spans[index].needsDecoding else { return String(decoding: raw, as: UTF8.self) }
        return String(decoding: XMLTokenizer.decodeAttributeValue(raw), as: UTF8.self)
    }

    /// The index of the attribute named `name`, if the tag has it.
    public func index(of name: StaticString) -> Int? {
        let wanted = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        for index in 0..<spans.count where XMLTokenizer.equal(attributeName(at: index), wanted) { return index }
        return nil
    }

    public func value(_ name: StaticString) -> String? {
        index(of: name).map { value(at: $0) }
    }
}

/// A streaming tokenizer for the XML of Apple Health exports (and well-formed XML in general, without
/// DTD processing): feed it bytes in chunks of any size and it reports start and end tags with their
/// attributes, exactly as if the whole document had come at once. It scans raw bytes (no `String`
/// per byte or per name; names are compared as bytes), skips the XML declaration, processing
/// instructions, comments, CDATA sections, text and `<!DOCTYPE ...>` with its internal subset (also
/// the invalid one of iOS 16 exports: the subset ends at the first `]` followed by `>`), and checks
/// well-formedness: matching end tags, attribute syntax, references, one root element, no document
/// that stops inside a tag or an element. UTF-8 passes through untouched.
///
/// A token cut by a chunk boundary is kept and scanned again once the bytes that can end it arrive.
public struct XMLTokenizer {
    /// Unconsumed bytes: at most the start of one token that a chunk boundary cut.
    private var buffer: [UInt8] = []
    /// Names of the open elements, back to back; `openEnds` marks where each ends.
    private var openNames: [UInt8] = []
    private var openEnds: [Int] = []
    private var spans: [XMLAttributeSpan] = []
    /// Lines and the offset of the current line's start, over bytes already dropped from `buffer`.
    private var droppedLines = 0
    private var droppedBytes = 0
    private var droppedLineStart = 0
    /// Whether the root element has been seen, and whether it has ended.
    private var sawRoot = false
    private var rootEnded = false
    /// The byte a pending token cannot end without: no need to scan again until it arrives.
    private var pendingNeeds: UInt8?
    private var finished = false

    public init() {}

    /// Whether a start tag has been seen.
    public var sawRootElement: Bool { sawRoot }

    /// Open elements right now (the root counts).
    public var depth: Int { openEnds.count }

    /// Scans `bytes` (the next part of the document), reporting every complete tag to `handler`.
    public mutating func feed<Handler: XMLTokenHandler>(_ bytes: UnsafeRawBufferPointer, to handler: inout Handler)
        throws(XMLSyntaxError) {
        // After an error or `finish` the document is over: nothing more is reported.
        guard !bytes.isEmpty, !finished else { return }
        buffer.append(contentsOf: bytes)
        if let needed = pendingNeeds {
            // Still inside the same token unless the new bytes can end it.
            guard bytes.contains(needed) else { return }
        }
        try scan(to: &handler, atEnd: false)
    }

    /// The document has ended: anything left open is an error. (A document without any element is
    /// not reported here: `sawRoot` tells, and the caller knows best what to call it.)
    public mutating func finish<Handler: XMLTokenHandler>(to handler: inout Handler) throws(XMLSyntaxError) {
        guard !finished else { return }
        finished = true
        try scan(to: &handler, atEnd: true)
        if !buffer.isEmpty {
            throw error(at: 0, "the file ends inside markup that starts here (truncated?)")
        }
        if openEnds.count > 0 {
            let innermost = String(decoding: openNames[(openEnds.count > 1 ? openEnds[openEnds.count - 2] : 0)...], as: UTF8.self)
            throw error(at: 0, "the file ends before </\(innermost)> (truncated export?)")
        }
    }

    // MARK: Scanning

    /// An error found while the buffer is borrowed: located (line, column) once it is back.
    private struct ScanError: Error {
        var offset: Int
        var detail: String
        init(at offset: Int, _ detail: String) {
            self.offset = offset
            self.detail = detail
        }
    }

    private enum Step {
        /// The token ends just before this offset.
        case complete(Int)
        /// The token is cut off; it cannot end before a byte `needs` arrives (nil: any byte may do).
        case incomplete(needs: UInt8?)
    }

    private mutating func scan<Handler: XMLTokenHandler>(to handler: inout Handler, atEnd: Bool) throws(XMLSyntaxError) {
        pendingNeeds = nil
        let count = buffer.count
        // Swift's exclusivity rules forbid touching `self` while borrowing `buffer`'s storage, so
        // the buffer is swapped out for the scan and back afterwards (a swap, so it stays uniquely
        // referenced and dropping the consumed bytes does not copy it).
        var bytes: [UInt8] = []
        swap(&bytes, &buffer)
        var consumed = 0
        var failure: ScanError?
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            do throws(ScanError) {
                consumed = try scanTokens(base, count: count, atEnd: atEnd, to: &handler)
            } catch {
                failure = error
                consumed = 0
            }
        }
        swap(&bytes, &buffer)
        if let failure {
            // Nothing after an error is scanned again.
            finished = true
            throw error(at: failure.offset, failure.detail)
        }
        dropConsumed(consumed)
    }

    private mutating func dropConsumed(_ consumed: Int) {
        guard consumed > 0 else { return }
        buffer.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
            // Branch-free count (vectorizes), then the last line start found from the end.
            var newlines = 0
            for index in 0..<consumed { newlines &+= base[index] == 0x0A ? 1 : 0 }
            guard newlines > 0 else { return }
            droppedLines += newlines
            var last = consumed - 1
            while base[last] != 0x0A { last -= 1 }
            droppedLineStart = droppedBytes + last + 1
        }
        droppedBytes += consumed
        if consumed == buffer.count {
            buffer.removeAll(keepingCapacity: true)
        } else {
            buffer.removeFirst(consumed)
        }
    }

    /// Scans complete tokens from the start of `base`; returns how many bytes they took.
    private mutating func scanTokens<Handler: XMLTokenHandler>(_ base: UnsafeRawPointer, count: Int, atEnd: Bool,
                                                               to handler: inout Handler) throws(ScanError) -> Int {
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        var position = 0
        if droppedBytes == 0, count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            position = 3  // UTF-8 byte order mark
        } else if droppedBytes == 0, count > 0, count < 3, !atEnd, bytes[0] == 0xEF {
            return 0  // perhaps the start of a byte order mark
        }
        while position < count {
            if bytes[position] != UInt8(ascii: "<") {
                position = try scanText(bytes, from: position, count: count)
                continue
            }
            let step: Step
            if position + 1 >= count {
                step = .incomplete(needs: nil)
            } else {
                switch bytes[position + 1] {
                case UInt8(ascii: "/"): step = try scanEndTag(base, at: position, count: count, to: &handler)
                case UInt8(ascii: "?"): step = try scanUntil(bytes, at: position, count: count, after: 2, terminator: "?>")
                case UInt8(ascii: "!"): step = try scanDeclaration(bytes, at: position, count: count)
                default: step = try scanStartTag(base, at: position, count: count, to: &handler)
                }
            }
            switch step {
            case .complete(let end):
                position = end
            case .incomplete(let needs):
                if atEnd { return position }
                pendingNeeds = needs
                return position
            }
        }
        return position
    }

    @inline(__always) private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
    }

    /// Name characters: ASCII letters, digits, `_:.-`, and every byte of a multi-byte UTF-8 sequence.
    /// (Comparisons, not a lookup table: a static table costs a lazy-initialization check per byte.)
    @inline(__always) private static func isNameByte(_ byte: UInt8) -> Bool {
        let folded = byte | 0x20
        return (folded >= UInt8(ascii: "a") && folded <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
            || byte >= 0x80
    }

    @inline(__always) private static func isNameStart(_ byte: UInt8) -> Bool {
        isNameByte(byte) && !(byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) && byte != UInt8(ascii: ".")
            && byte != UInt8(ascii: "-")
    }

    /// Text up to the next `<`: skipped inside the root; outside it only whitespace may stand.
    private func scanText(_ bytes: UnsafePointer<UInt8>, from start: Int, count: Int) throws(ScanError) -> Int {
        var position = start
        if openEnds.isEmpty {
            while position < count, bytes[position] != UInt8(ascii: "<") {
                guard Self.isWhitespace(bytes[position]) else {
                    throw ScanError(at: position, sawRoot ? "text after the root element" : "text before the root element (not XML?)")
                }
                position += 1
            }
            return position
        }
        while position < count, bytes[position] != UInt8(ascii: "<") { position += 1 }
        return position
    }

    /// `<?...?>`, `<!--...-->`, `<![CDATA[...]]>`: finds the terminator after `after` bytes of opening.
    private func scanUntil(_ bytes: UnsafePointer<UInt8>, at start: Int, count: Int, after: Int, terminator: StaticString) throws(ScanError) -> Step {
        let last = terminator.utf8Start[terminator.utf8CodeUnitCount - 1]
        let length = terminator.utf8CodeUnitCount
        var position = start + after
        while position + length <= count {
            if bytes[position + length - 1] == last {
                var matches = true
                for offset in 0..<(length - 1) where bytes[position + offset] != terminator.utf8Start[offset] {
                    matches = false
                    break
                }
                if matches { return .complete(position + length) }
            }
            position += 1
        }
        return .incomplete(needs: last)
    }

    private func hasPrefix(_ bytes: UnsafePointer<UInt8>, at start: Int, count: Int, _ prefix: StaticString) -> Bool? {
        for offset in 0..<prefix.utf8CodeUnitCount {
            guard start + offset < count else { return nil }
            if bytes[start + offset] != prefix.utf8Start[offset] { return false }
        }
        return true
    }

    /// `<!--`, `<![CDATA[` (only inside the root) or `<!DOCTYPE` (only before it).
    private func scanDeclaration(_ bytes: UnsafePointer<UInt8>, at start: Int, count: Int) throws(ScanError) -> Step {
        switch hasPrefix(bytes, at: start, count: count, "<!--") {
        case nil: return .incomplete(needs: nil)
        case true?: return try scanUntil(bytes, at: start, count: count, after: 4, terminator: "-->")
        case false?: break
        }
        switch hasPrefix(bytes, at: start, count: count, "<![CDATA[") {
        case nil: return .incomplete(needs: nil)
        case true?:
            guard !openEnds.isEmpty else { throw ScanError(at: start, "CDATA section outside the root element") }
            return try scanUntil(bytes, at: start, count: count, after: 9, terminator: "]]>")
        case false?: break
        }
        switch hasPrefix(bytes, at: start, count: count, "<!DOCTYPE") {
        case nil: return .incomplete(needs: nil)
        case true?:
            guard !sawRoot else { throw ScanError(at: start, "DOCTYPE after the root element started") }
            return scanDoctype(bytes, at: start, count: count)
        case false?:
            throw ScanError(at: start, "'<!' that starts no comment, CDATA section or DOCTYPE")
        }
    }

    /// `<!DOCTYPE name ... [ subset ]>`: quoted literals are honoured before the subset; the subset
    /// itself ends at the first `]` followed (after whitespace) by `>`, whatever it holds, so an
    /// invalid subset (iOS 16) is skipped like a valid one.
    private func scanDoctype(_ bytes: UnsafePointer<UInt8>, at start: Int, count: Int) -> Step {
        var position = start + 9
        var quote: UInt8 = 0
        while position < count {
            let byte = bytes[position]
            if quote != 0 {
                if byte == quote { quote = 0 }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                return .complete(position + 1)
            } else if byte == UInt8(ascii: "[") {
                position += 1
                while position < count {
                    if bytes[position] == UInt8(ascii: "]") {
                        var after = position + 1
                        while after < count, Self.isWhitespace(bytes[after]) { after += 1 }
                        if after >= count { return .incomplete(needs: UInt8(ascii: ">")) }
                        if bytes[after] == UInt8(ascii: ">") { return .complete(after + 1) }
                    }
                    position += 1
                }
                return .incomplete(needs: UInt8(ascii: "]"))
            }
            position += 1
        }
        return .incomplete(needs: quote != 0 ? quote : UInt8(ascii: ">"))
    }

    /// Scans a name from `start`; returns its end (== start when there is none).
    @inline(__always) private static func nameEnd(_ bytes: UnsafePointer<UInt8>, from start: Int, count: Int) -> Int {
        guard start < count, isNameStart(bytes[start]) else { return start }
        var position = start + 1
        while position < count, isNameByte(bytes[position]) { position += 1 }
        return position
    }

    private mutating func scanStartTag<Handler: XMLTokenHandler>(_ base: UnsafeRawPointer, at start: Int, count: Int,
                                                                 to handler: inout Handler) throws(ScanError) -> Step {
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        let nameStart = start + 1
        let nameEnd = Self.nameEnd(bytes, from: nameStart, count: count)
        if nameEnd >= count { return .incomplete(needs: UInt8(ascii: ">")) }
        guard nameEnd > nameStart else { throw ScanError(at: nameStart, "'<' must start a tag name") }
        if rootEnded { throw ScanError(at: start, "a second root element (content after the end of the document)") }
        spans.removeAll(keepingCapacity: true)
        var position = nameEnd
        var selfClosing = false
        while true {
            guard position < count else { return .incomplete(needs: UInt8(ascii: ">")) }
            var byte = bytes[position]
            let hadSpace = Self.isWhitespace(byte)
            while Self.isWhitespace(byte) {
                position += 1
                guard position < count else { return .incomplete(needs: UInt8(ascii: ">")) }
                byte = bytes[position]
            }
            if byte == UInt8(ascii: ">") {
                position += 1
                break
            }
            if byte == UInt8(ascii: "/") {
                guard position + 1 < count else { return .incomplete(needs: UInt8(ascii: ">")) }
                guard bytes[position + 1] == UInt8(ascii: ">") else { throw ScanError(at: position, "'/' in a tag must be followed by '>'") }
                selfClosing = true
                position += 2
                break
            }
            guard hadSpace else { throw ScanError(at: position, "attributes must be separated by whitespace") }
            // name S? = S? quoted value
            let attributeStart = position
            let attributeEnd = Self.nameEnd(bytes, from: attributeStart, count: count)
            guard attributeEnd < count else { return .incomplete(needs: UInt8(ascii: ">")) }
            guard attributeEnd > attributeStart else {
                throw ScanError(at: position, "unexpected '\(Self.printable(byte))' in a tag (attribute name expected)")
            }
            position = attributeEnd
            while position < count, Self.isWhitespace(bytes[position]) { position += 1 }
            guard position < count else { return .incomplete(needs: UInt8(ascii: ">")) }
            guard bytes[position] == UInt8(ascii: "=") else { throw ScanError(at: position, "attribute without '=' and a value") }
            position += 1
            while position < count, Self.isWhitespace(bytes[position]) { position += 1 }
            guard position < count else { return .incomplete(needs: UInt8(ascii: ">")) }
            let quote = bytes[position]
            guard quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
                throw ScanError(at: position, "attribute value must be quoted")
            }
            position += 1
            let valueStart = position
            var needsDecoding = false
            while true {
                guard position < count else { return .incomplete(needs: quote) }
                let valueByte = bytes[position]
                if valueByte == quote { break }
                if valueByte == UInt8(ascii: "<") || valueByte == UInt8(ascii: "&") || valueByte <= 0x0D {
                    if valueByte == UInt8(ascii: "<") { throw ScanError(at: position, "'<' inside an attribute value") }
                    if valueByte == UInt8(ascii: "&") {
                        guard let referenceEnd = try reference(bytes, at: position, count: count) else {
                            return .incomplete(needs: quote)
                        }
                        position = referenceEnd
                        needsDecoding = true
                        continue
                    }
                    if valueByte == 0x09 || valueByte == 0x0A || valueByte == 0x0D { needsDecoding = true }  // they become spaces
                }
                position += 1
            }
            let valueEnd = position
            position += 1
            for existing in spans where existing.nameEnd - existing.nameStart == Int32(attributeEnd - attributeStart) {
                let earlier = UnsafeRawBufferPointer(start: base + start + Int(existing.nameStart), count: Int(existing.nameEnd - existing.nameStart))
                let current = UnsafeRawBufferPointer(start: base + attributeStart, count: attributeEnd - attributeStart)
                if Self.equal(earlier, current) {
                    throw ScanError(at: attributeStart, "attribute \(String(decoding: current, as: UTF8.self)) appears twice")
                }
            }
            guard valueEnd - start < Int(Int32.max) else { throw ScanError(at: start, "tag too long") }
            spans.append(XMLAttributeSpan(nameStart: Int32(attributeStart - start), nameEnd: Int32(attributeEnd - start),
                                          valueStart: Int32(valueStart - start), valueEnd: Int32(valueEnd - start),
                                          needsDecoding: needsDecoding))
        }
        let name = UnsafeRawBufferPointer(start: base + nameStart, count: nameEnd - nameStart)
        sawRoot = true
        spans.withUnsafeBufferPointer { attributes in
            handler.startElement(XMLStartTag(base: base + start, name: name, spans: attributes))
        }
        if selfClosing {
            handler.endElement(name)
            if openEnds.isEmpty { rootEnded = true }
        } else {
            openNames.append(contentsOf: name)
            openEnds.append(openNames.count)
        }
        return .complete(position)
    }

    private mutating func scanEndTag<Handler: XMLTokenHandler>(_ base: UnsafeRawPointer, at start: Int, count: Int,
                                                               to handler: inout Handler) throws(ScanError) -> Step {
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        let nameStart = start + 2
        let nameEnd = Self.nameEnd(bytes, from: nameStart, count: count)
        var position = nameEnd
        while position < count, Self.isWhitespace(bytes[position]) { position += 1 }
        guard position < count else { return .incomplete(needs: UInt8(ascii: ">")) }
        guard nameEnd > nameStart, bytes[position] == UInt8(ascii: ">") else { throw ScanError(at: nameStart, "malformed end tag") }
        let name = UnsafeRawBufferPointer(start: base + nameStart, count: nameEnd - nameStart)
        guard let top = openEnds.last else {
            throw ScanError(at: start, "end tag </\(String(decoding: name, as: UTF8.self))> without a start tag")
        }
        let topStart = openEnds.count > 1 ? openEnds[openEnds.count - 2] : 0
        let matches = openNames.withUnsafeBytes { open in
            Self.equal(UnsafeRawBufferPointer(rebasing: open[topStart..<top]), name)
        }
        guard matches else {
            let expected = String(decoding: openNames[topStart..<top], as: UTF8.self)
            throw ScanError(at: start, "end tag </\(String(decoding: name, as: UTF8.self))> does not match <\(expected)>")
        }
        handler.endElement(name)
        openEnds.removeLast()
        openNames.removeSubrange(topStart...)
        if openEnds.isEmpty { rootEnded = true }
        return .complete(position + 1)
    }

    /// Checks the reference at `start` (`&`); returns the offset after its `;`, or nil when it is cut off.
    private func reference(_ bytes: UnsafePointer<UInt8>, at start: Int, count: Int) throws(ScanError) -> Int? {
        var position = start + 1
        // Longest valid reference: &#x10FFFF; plus leading zeros; names are short. Bound the scan.
        while position < count, bytes[position] != UInt8(ascii: ";") {
            if position - start > 40 { throw ScanError(at: start, "'&' that starts no reference (write &amp;)") }
            position += 1
        }
        guard position < count else { return nil }
        let body = UnsafeRawBufferPointer(start: bytes + start + 1, count: position - start - 1)
        guard Self.referencedScalar(body) != nil else {
            throw ScanError(at: start, "unknown or invalid reference &\(String(decoding: body, as: UTF8.self));")
        }
        return position + 1
    }

    /// The character a reference's body (between `&` and `;`) stands for.
    static func referencedScalar(_ body: UnsafeRawBufferPointer) -> Unicode.Scalar? {
        guard let first = body.first else { return nil }
        if first == UInt8(ascii: "#") {
            var value: UInt32 = 0
            var digits = 0
            let hex = body.count > 1 && body[1] == UInt8(ascii: "x")
            for byte in body.dropFirst(hex ? 2 : 1) {
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f") where hex: digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F") where hex: digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: return nil
                }
                value = value * (hex ? 16 : 10) + digit
                guard value <= 0x10FFFF else { return nil }
                digits += 1
            }
            // XML 1.0 Char: tab, newline, return, and everything from space up except surrogates and FFFE/FFFF.
            guard digits > 0, value == 0x09 || value == 0x0A || value == 0x0D || value >= 0x20,
                  value != 0xFFFE, value != 0xFFFF else { return nil }
            return Unicode.Scalar(value)
        }
        switch body.count {
        case 2 where body[0] == UInt8(ascii: "l") && body[1] == UInt8(ascii: "t"): return "<"
        case 2 where body[0] == UInt8(ascii: "g") && body[1] == UInt8(ascii: "t"): return ">"
        case 3 where equal(body, "amp"): return "&"
        case 4 where equal(body, "quot"): return "\""
        case 4 where equal(body, "apos"): return "'"
        default: return nil
        }
    }

    /// Decodes a value the tokenizer has checked: references replaced, tab/newline/return as spaces
    /// (a `\r\n` pair is one line break, so one space).
    static func decodeAttributeValue(_ raw: UnsafeRawBufferPointer) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var position = 0
        while position < raw.count {
            let byte = raw[position]
            switch byte {
            case UInt8(ascii: "&"):
                var end = position + 1
                while end < raw.count, raw[end] != UInt8(ascii: ";") { end += 1 }
                if end < raw.count, let scalar = referencedScalar(UnsafeRawBufferPointer(rebasing: raw[(position + 1)..<end])) {
                    output.append(contentsOf: UTF8.encode(scalar).map { Array($0) } ?? [])
                    position = end + 1
                } else {
                    output.append(byte)
                    position += 1
                }
            case 0x0D:
                output.append(0x20)
                position += position + 1 < raw.count && raw[position + 1] == 0x0A ? 2 : 1
            case 0x09, 0x0A:
                output.append(0x20)
                position += 1
            default:
                output.append(byte)
                position += 1
            }
        }
        return output
    }

    @inline(__always) static func equal(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Bool {
        guard left.count == right.count else { return false }
        for index in 0..<left.count where left[index] != right[index] { return false }
        return true
    }

    static func equal(_ left: UnsafeRawBufferPointer, _ right: StaticString) -> Bool {
        equal(left, UnsafeRawBufferPointer(start: right.utf8Start, count: right.utf8CodeUnitCount))
    }

    private static func printable(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
    }

    /// An error at `offset` into the unconsumed buffer, with its line and column in the document.
    private func error(at offset: Int, _ detail: String) -> XMLSyntaxError {
        var line = droppedLines + 1
        var lineStart = droppedLineStart
        buffer.withUnsafeBytes { raw in
            for index in 0..<min(offset, raw.count) where raw[index] == 0x0A {
                line += 1
                lineStart = droppedBytes + index + 1
            }
        }
        return XMLSyntaxError(line: line, column: droppedBytes + offset - lineStart + 1, detail: detail)
    }
}
