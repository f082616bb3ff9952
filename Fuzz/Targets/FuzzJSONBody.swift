import JSON

// libFuzzer target: a request body as POST /v1/samples decodes it: the strict JSON parser, the
// field reader and SampleCodec with its validation. Any input must end in a value or an error
// naming a field, never a crash; a decoded sample must re-encode to JSON that parses again.

/// Uuids for samples without one: deterministic, so a crash replays exactly.
nonisolated(unsafe) private var fuzzUUIDs = CountingUUIDs()

private struct CountingUUIDs {
    var count: UInt64 = 0
    mutating func next() -> HealthUUID {
        count += 1
        return HealthUUID(high: 0x7000, low: 0x8000_0000_0000_0000 | count)
    }
}

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
            _ = try SampleCodec.decode(&reader) { fuzzUUIDs.next() }
            try reader.finish()
        }
    } catch {
        _ = error.field
    }
    return 0
}
