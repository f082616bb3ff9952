import HealthModel

/// The whole pure pipeline of `healthd import`, fed chunk by chunk: bytes → `XMLByteSanitizer` →
/// `XMLTokenizer` → `AppleHealthExportMapper`. Memory is one chunk plus at most one cut token,
/// whatever the export's size. The importer and the fuzz target drive it the same way: `feed` each
/// chunk and `drain` the items, `finish` at the end.
public struct AppleHealthExportParser {
    private var sanitizer = XMLByteSanitizer()
    private var tokenizer = XMLTokenizer()
    private var events = MappingHandler()
    private var sanitized: [UInt8] = []

    public init() {}

    /// Record-like elements (Record, Correlation, Workout, ActivitySummary, Me) ended so far,
    /// nested records included.
    public var records: Int { events.records }
    public var sawHealthData: Bool { events.sawHealthData }
    public var sawHealthDataEnd: Bool { events.sawHealthDataEnd }
    public var droppedControlCharacters: Int { sanitizer.droppedControlCharacters }
    public var removedDoctype: Bool { sanitizer.removedDoctype }

    /// Parses the next bytes of the export. After an error, items mapped before it can still be
    /// drained; bytes fed after it are ignored.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(XMLSyntaxError) {
        sanitized.removeAll(keepingCapacity: true)
        sanitizer.sanitize(bytes, into: &sanitized)
        try tokenize()
    }

    /// The export has ended: a document cut off inside a tag or an element is an error.
    public mutating func finish() throws(XMLSyntaxError) {
        sanitized.removeAll(keepingCapacity: true)
        sanitizer.finish(into: &sanitized)
        try tokenize()
        try tokenizer.finish(to: &events)
    }

    /// Hands over the items mapped so far.
    public mutating func drain() -> [AppleHealthImportItem] { events.mapper.drain() }

    private mutating func tokenize() throws(XMLSyntaxError) {
        guard !sanitized.isEmpty else { return }
        // Swapped out for the call: `tokenizer` and `sanitized` are both parts of `self`.
        var bytes: [UInt8] = []
        swap(&bytes, &sanitized)
        defer { swap(&bytes, &sanitized) }
        var failure: XMLSyntaxError?
        bytes.withUnsafeBytes { raw in
            do throws(XMLSyntaxError) { try tokenizer.feed(raw, to: &events) } catch { failure = error }
        }
        if let failure { throw failure }
    }
}

/// Passes the tokenizer's elements to the mapper and counts what the importer reports.
struct MappingHandler: XMLTokenHandler {
    var mapper = AppleHealthExportMapper()
    var records = 0
    var sawHealthData = false
    var sawHealthDataEnd = false

    mutating func startElement(_ tag: XMLStartTag) {
        let element = AppleHealthElement(tag.name)
        if element == .healthData { sawHealthData = true }
        mapper.start(element, tag)
    }

    mutating func endElement(_ name: UnsafeRawBufferPointer) {
        let element = AppleHealthElement(name)
        mapper.end(element)
        if element == .healthData { sawHealthDataEnd = true }
        if element.isRecordLike { records += 1 }
    }
}
