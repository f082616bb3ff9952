// libFuzzer target: the HTTP/1.1 request parser. The input is fed whole and, separately, in two
// pieces split at a point taken from its first byte; both runs must reach the same outcome
// (split-independence), and neither may crash, hang or grow without bound.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let limits = HTTPLimits(maxRequestLineLength: 256, maxHeaderBlockLength: 1024, maxHeaderCount: 16, maxBodyLength: 4096)
    let whole = outcome(of: [bytes], limits: limits)
    let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    let pieces = outcome(of: [Array(bytes[..<split]), Array(bytes[split...])], limits: limits)
    if whole != pieces {
        fatalError("split at \(split) changes the outcome: \(whole) vs \(pieces)")
    }
    return 0
}

/// Messages completed with their body sizes, then the error status if any.
private func outcome(of pieces: [[UInt8]], limits: HTTPLimits) -> [Int] {
    var parser = HTTPRequestParser(limits: limits)
    var summary: [Int] = []
    var bodyBytes = 0
    for piece in pieces {
        parser.append(contentsOf: piece)
        var steps = 0
        while let event = parser.next() {
            steps += 1
            if steps > 100_000 { fatalError("the parser produced events without consuming input") }
            switch event {
            case .head: bodyBytes = 0
            case .body(let chunk): bodyBytes += chunk.count
            case .end: summary.append(bodyBytes)
            case .error(let error):
                summary.append(-error.status.code)
                return summary
            }
        }
    }
    return summary
}
