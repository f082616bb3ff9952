import JSON

// libFuzzer target: a request body as POST /v1/samples decodes it: the strict JSON parser, the
// field reader and SampleCodec with its validation. Any input must end in a value or an error
// naming a field, never a crash; a decoded sample must re-encode to JSON that parses again.
// The byte-level SampleBatchDecoder runs on every input too, and must agree with the general
// path: the same samples when it returns some, and nothing for a body the general path refuses.

/// Uuids for samples without one: deterministic, so a crash replays exactly.
nonisolated(unsafe) private var fuzzUUIDs = CountingUUIDs()

private struct CountingUUIDs {
    var count: UInt64 = 0
    mutating func next() -> HealthUUID {
        count += 1
        return HealthUUID(high: 0x7000, low: 0x8000_0000_0000_0000 | count)
    }
}

/// The general path's samples (nil where the route answers an error), at most 64 per batch.
private func generalSamples(_ bytes: [UInt8]) -> [HealthSample]? {
    do throws(JSONFieldError) {
        var body = try JSONFieldReader(parsing: bytes)
        let list = try body.requiredArray("samples")
        try body.finish()
        guard !list.isEmpty, list.count <= 64 else { return nil }
        var samples: [HealthSample] = []
        for index in 0 ..< list.count {
            var reader = try list.object(at: index)
            samples.append(try SampleCodec.decode(&reader) { fixedUUID })
            try reader.finish()
        }
        return samples
    } catch {
        return nil
    }
}

/// One uuid for every sample without one, so the two paths agree whatever order they mint in.
private let fixedUUID = HealthUUID(high: 0x7000, low: 0x8000_0000_0000_0000)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONBody(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let fast = SampleBatchDecoder.decode(bytes, maxBatchSize: 64, newUUID: { fixedUUID }) {
        guard let general = generalSamples(bytes) else { fatalError("the byte-level decoder accepted a body the general path refuses") }
        guard general == fast else { fatalError("the byte-level decoder's samples differ from the general path's") }
    }
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
