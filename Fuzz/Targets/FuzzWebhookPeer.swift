// libFuzzer target: what a webhook receiver controls. The first line is a receiver URL (parsed,
// its literal address classed and checked by the SSRF policy); the rest is the receiver's HTTP
// response, read by the outbound client's parser whole and again in two pieces split at a point
// taken from the first byte. None may crash or hang.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebhookPeer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let newline = bytes.firstIndex(of: 10) ?? bytes.count
    if let url = try? ReceiverURL(parsing: String(decoding: bytes[..<newline], as: UTF8.self)) {
        _ = SSRFPolicy().check(url)
    }
    _ = IPAddress(String(decoding: bytes[..<newline], as: UTF8.self))
    let response = Array(bytes[min(newline + 1, bytes.count)...])
    var limits = HTTPResponseParser.Limits()
    limits.headerBytes = 1024
    limits.keptBodyBytes = 256
    limits.readBodyBytes = 2048
    let split = response.isEmpty ? 0 : Int(response[0]) % (response.count + 1)
    for pieces in [[response], [Array(response[..<split]), Array(response[split...])]] {
        for noBodyExpected in [false, true] {
            var parser = HTTPResponseParser(limits: limits, noBodyExpected: noBodyExpected)
            do {
                for piece in pieces { if case .complete = try parser.consume(piece) { break } }
                _ = try parser.endOfInput()
            } catch {}
        }
    }
    return 0
}
