// libFuzzer target: the pure path of `healthd import` (repair filter, byte-level XML tokenizer,
// mapper) on arbitrary bytes, minus the byte source and SQLite. The first two bytes choose how the
// rest is cut into chunks; the same bytes are also parsed in one piece, and both runs must give the
// same items and the same error: chunk boundaries may never change what an export means.
import HealthModel

private struct ParseResult: Equatable {
    var items: [AppleHealthImportItem] = []
    var error: XMLSyntaxError?
    var records = 0
    var sawHealthData = false
    var sawHealthDataEnd = false
}

private func parse(_ document: UnsafeRawBufferPointer, chunkSeed: UInt32?) -> ParseResult {
    var parser = AppleHealthExportParser()
    var result = ParseResult()
    var state = chunkSeed ?? 0
    var start = 0
    do throws(XMLSyntaxError) {
        while start < document.count {
            var length = document.count - start
            if chunkSeed != nil {
                // A small LCG: chunk sizes from 1 to 64 bytes, sometimes larger.
                state = state &* 1_103_515_245 &+ 12_345
                let roll = Int((state >> 16) & 0x7FFF)
                length = min(length, roll % 8 == 0 ? 1 + roll % 4096 : 1 + roll % 64)
            }
            try parser.feed(UnsafeRawBufferPointer(rebasing: document[start..<(start + length)]))
            result.items += parser.drain()
            start += length
        }
        try parser.finish()
    } catch {
        result.error = error
    }
    result.items += parser.drain()
    result.records = parser.records
    result.sawHealthData = parser.sawHealthData
    result.sawHealthDataEnd = parser.sawHealthDataEnd
    return result
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppleHealthXML(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let seed = UInt32(data[0]) << 8 | UInt32(data[1])
    let document = UnsafeRawBufferPointer(start: data + 2, count: size - 2)
    let whole = parse(document, chunkSeed: nil)
    let split = parse(document, chunkSeed: seed)
    precondition(whole == split, "chunk boundaries changed the result: \(whole) vs \(split)")
    if let error = whole.error {
        precondition(error.line >= 1 && error.column >= 1, "error position out of range: \(error)")
    }
    precondition(!whole.sawHealthDataEnd || whole.sawHealthData, "</HealthData> without <HealthData>")
    for item in whole.items {
        if case .sample(let sourced) = item {
            precondition(!sourced.app.isEmpty, "a sample without an app")
            precondition(sourced.sample.end >= sourced.sample.start, "a sample that ends before it starts")
        }
    }
    return 0
}
