import Testing
import JSON
@testable import HealthModel
import Primitives

/// Decoding errors name the field by its full path, built only when a check fails.
@Suite struct SampleCodecTests {
    func decodeError(_ json: String, path: String = "samples[7]") -> JSONFieldError? {
        do {
            var reader = try JSONFieldReader(parsing: Array(json.utf8))
            reader = JSONFieldReader(reader.object, path: path)
            _ = try SampleCodec.decode(&reader) { HealthUUID(high: 0x7000, low: 0x8000_0000_0000_0000) }
            try reader.finish()
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        (#"{"type":"stepz","value":1,"start":"2026-03-08T09:00:00Z"}"#, "samples[7].type"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","uuid":"x"}"#, "samples[7].uuid"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08"}"#, "samples[7].start"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","end":"soon"}"#, "samples[7].end"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T10:00:00Z","end":"2026-03-08T09:00:00Z"}"#, "samples[7].end"),
        (#"{"type":"stepCount","value":1,"unit":"count","start":"1850-03-08T10:00:00Z","end":"2026-03-08T09:00:00Z"}"#, "samples[7].start"),
        (#"{"type":"stepCount","value":1,"unit":"kg","start":"2026-03-08T09:00:00Z"}"#, "samples[7].unit"),
        (#"{"type":"stepCount","value":1,"unit":"furlong^","start":"2026-03-08T09:00:00Z"}"#, "samples[7].unit"),
        (#"{"type":"stepCount","value":-1,"unit":"count","start":"2026-03-08T09:00:00Z"}"#, "samples[7].value"),
        (#"{"type":"bloodPressure","start":"2026-03-08T09:00:00Z","objects":[{"type":"bloodPressureSystolic","value":120,"unit":"mmHg","start":"2026-03-08T09:00:00Z"},{"type":"bloodPressureDiastolic","value":9999,"unit":"mmHg","start":"2026-03-08T09:00:00Z"}]}"#,
         "samples[7].objects[1].value"),
        (#"{"type":"stepCount","value":1,"start":"2026-03-08T09:00:00Z"}"#, "samples[7].unit"),
        (#"{"type":"bloodPressure","start":"2026-03-08T09:00:00Z","objects":[{"type":"bloodPressureSystolic","value":120,"unit":"mmHg","start":"2026-03-08T09:00:00Z"},{"type":"bloodPressureDiastolic","value":80,"start":"2026-03-08T09:00:00Z"}]}"#,
         "samples[7].objects[1].unit"),
        (#"{"type":"workout","activityType":"running","start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:30:00Z","totalEnergyBurned":{"value":300}}"#,
         "samples[7].totalEnergyBurned.unit"),
    ])
    func errorsNameTheFullPath(json: String, field: String) {
        #expect(decodeError(json)?.field == field, "\(json)")
    }

    /// A quantity without a unit is refused, saying which units its type takes: it is never read in
    /// the canonical unit (150 meant in lb is not 150 kg). `null` is the same as leaving it out.
    @Test(arguments: [
        (#"{"type":"stepCount","value":420,"start":"2026-03-08T09:00:00Z"}"#, "unit is required for a quantity sample: stepCount takes count"),
        (#"{"type":"bodyMass","value":150,"unit":null,"start":"2026-03-08T09:00:00Z"}"#, "unit is required for a quantity sample: bodyMass takes kg, g, lb, oz, st"),
        (#"{"type":"HKQuantityTypeIdentifierHeartRate","value":61,"start":"2026-03-08T09:00:00Z"}"#, "unit is required for a quantity sample: heartRate takes count/min, count/s, Hz"),
    ])
    func aQuantityWithoutAUnitIsRefusedNamingTheUnitsItsTypeTakes(json: String, detail: String) {
        let error = decodeError(json)
        #expect(error?.field == "samples[7].unit")
        #expect(error?.detail == detail)
    }

    @Test func validSamplesDecode() {
        #expect(decodeError(#"{"type":"heartRate","value":61,"unit":"count/min","start":"2026-03-08T09:00:00-05:00","metadata":{"HKHeartRateMotionContext":1}}"#) == nil)
    }

    @Test func samplesWithoutAUUIDGetOneFromTheGivenSource() throws {
        var generator = SplitMix64(seed: 7)
        let minted = HealthUUID.timeOrdered(unixMilliseconds: 1_772_960_400_000, using: &generator)
        var asked = 0
        func decode(_ json: String) throws -> HealthSample {
            var reader = try JSONFieldReader(parsing: Array(json.utf8))
            return try SampleCodec.decode(&reader) { asked += 1; return minted }
        }
        let assigned = try decode(#"{"type":"stepCount","value":5,"unit":"count","start":"2026-03-08T09:00:00Z"}"#)
        #expect(assigned.uuid == minted && asked == 1)
        let correlation = try decode(#"{"type":"bloodPressure","start":"2026-03-08T09:00:00Z","uuid":"0b1f6f4e-9c1a-4c39-8d43-1f0c6f7f5c2a","objects":[{"type":"bloodPressureSystolic","value":120,"unit":"mmHg","start":"2026-03-08T09:00:00Z"}]}"#)
        guard case .correlation(let objects) = correlation.content else { Issue.record("not a correlation"); return }
        #expect(objects.first?.uuid == minted && asked == 2, "objects without a uuid get one from the same source")
        let given = try decode(#"{"type":"stepCount","value":5,"unit":"count","start":"2026-03-08T09:00:00Z","uuid":"0b1f6f4e-9c1a-4c39-8d43-1f0c6f7f5c2a"}"#)
        #expect(given.uuid == HealthUUID("0B1F6F4E-9C1A-4C39-8D43-1F0C6F7F5C2A"), "a client's uuid is kept as sent")
    }

    @Test func metadataSizeLimitHoldsAtTheBoundary() {
        // {"k":"xxx…"} is 8 bytes plus the string: exactly 16 KiB passes, one byte more fails.
        func sample(_ length: Int) -> String {
            #"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{"k":"\#(String(repeating: "x", count: length))"}}"#
        }
        #expect(decodeError(sample(16_384 - 8)) == nil)
        #expect(decodeError(sample(16_384 - 7))?.field == "samples[7].metadata")
        // Escapes count as written: 3,000 control characters are 18,000 bytes of JSON.
        let escaped = String(repeating: "\\u0001", count: 3_000)
        #expect(decodeError(#"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{"k":"\#(escaped)"}}"#)?.field
                == "samples[7].metadata")
    }

    @Test func metadataSizeBoundIsNeverBelowTheWrittenSize() {
        let entries: [[MetadataEntry]] = [
            [],
            [MetadataEntry(key: "a", value: .bool(false))],
            [MetadataEntry(key: "\u{1}\"\\é😀", value: .string("\u{0}\u{1f}\"\\\n\t😀é")), MetadataEntry(key: "n", value: .number(-1.2345678901234567e-300))],
            [MetadataEntry(key: "x", value: .number(.nan)), MetadataEntry(key: "y", value: .number(123_456_789_012_345_680))],
        ]
        for metadata in entries {
            var writer = JSONWriter()
            SampleCodec.writeMetadata(metadata, into: &writer)
            #expect(SampleCodec.metadataSizeBound(metadata) >= writer.bytes.count)
        }
    }
}
