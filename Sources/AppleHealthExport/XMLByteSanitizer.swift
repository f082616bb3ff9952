/// Repairs the bytes of an Apple Health `export.xml` on their way to the XML parser, chunk by chunk:
/// drops the DOCTYPE (some iOS 16 exports carry an internal DTD subset that is not valid, and the
/// importer never needs the DTD) and drops control characters XML 1.0 forbids (real exports
/// contain them in metadata values). State carries across chunk boundaries.
public struct XMLByteSanitizer: Sendable {
    private enum State: Sendable {
        case text
        /// Inside `<!DOCTYPE ...`, before any `[`.
        case doctype
        /// Inside the internal subset `[ ... ]`.
        case subset
        /// After the subset's `]`, waiting for `>`.
        case subsetClosed
    }

    private static let doctypeOpening: [UInt8] = Array("<!DOCTYPE".utf8)

    private var state = State.text
    /// How many bytes of `<!DOCTYPE` have been held back because they may start one.
    private var heldCount = 0
    public private(set) var droppedControlCharacters = 0
    public private(set) var removedDoctype = false

    public init() {}

    /// Appends the repaired form of `input` to `output`.
    public mutating func sanitize(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        output.reserveCapacity(output.count + input.count + Self.doctypeOpening.count)
        var index = 0
        let count = input.count
        while index < count {
            if heldCount == 0, case .text = state {
                // Fast path: copy a run of ordinary bytes at once.
                var runEnd = index
                while runEnd < count {
                    let byte = input[runEnd]
                    if byte == UInt8(ascii: "<") || (byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D) { break }
                    runEnd += 1
                }
                if runEnd > index {
                    output.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index..<runEnd]))
                    index = runEnd
                    continue
                }
            }
            let byte = input[index]
            switch state {
            case .text:
                if heldCount > 0 {
                    if byte == Self.doctypeOpening[heldCount] {
                        heldCount += 1
                        if heldCount == Self.doctypeOpening.count {
                            heldCount = 0
                            state = .doctype
                            removedDoctype = true
                        }
                        index += 1
                        continue
                    }
                    // Not a DOCTYPE after all: release what was held, then look at this byte afresh.
                    output.append(contentsOf: Self.doctypeOpening[0..<heldCount])
                    heldCount = 0
                    continue
                }
                if byte == UInt8(ascii: "<") {
                    heldCount = 1
                } else if byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
                    droppedControlCharacters += 1
                } else {
                    output.append(byte)
                }
            case .doctype:
                if byte == UInt8(ascii: "[") { state = .subset } else if byte == UInt8(ascii: ">") { state = .text }
            case .subset:
                if byte == UInt8(ascii: "]") { state = .subsetClosed }
            case .subsetClosed:
                if byte == UInt8(ascii: ">") {
                    state = .text
                } else if byte != 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
                    state = .subset
                }
            }
            index += 1
        }
    }

    /// Releases bytes held back at the end of the input.
    public mutating func finish(into output: inout [UInt8]) {
        if heldCount > 0 {
            output.append(contentsOf: Self.doctypeOpening[0..<heldCount])
            heldCount = 0
        }
    }
}
