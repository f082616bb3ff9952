import JSON

// libFuzzer target: a request body as POST /v1/samples decodes it: the strict JSON parser, the
// field reader and SampleCodec with its validation. Any input must end in a value or an error
// naming a field, never a crash; a decoded sample must re-encode to JSON that parses again.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONBody(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? JSONParser.parse(bytes) else { return 0 }
    var writer = JSONWriter()
    writer.value(value)
    guard (try? JSONParser.parse(writer.bytes)) != nil else { fatalError("written JSON does not parse again") }
    do throws(JSONFieldError) {
        var body = try JSONFieldReader(parsing: bytes)
        let list = try body.requiredArray("samples")
        for index in 0 ..< min(list.count, 64) {
            var reader = try list.object(at: index)
            _ = try SampleCodec.decode(&reader)
            try reader.finish()
        }
    } catch {
        _ = error.field
    }
    return 0
}
