// libFuzzer target: RFC 3339 instants, calendar days and Apple export dates. A parsed instant
// must format to text that parses back to the same instant.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInstant(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buffer = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: buffer, as: UTF8.self)
    if let instant = RFC3339.parse(utf8: buffer) {
        let formatted = RFC3339.format(instant)
        guard RFC3339.parse(formatted) == instant else { fatalError("'\(text)' -> '\(formatted)' does not round-trip") }
    }
    _ = RFC3339.parse(text)
    _ = HealthDate.parseDay(text)
    _ = HealthDate.parseAppleExportDate(text)
    return 0
}
