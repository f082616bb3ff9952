import HealthModel
import JSON
import Testing
@testable import HealthdCommandLine

/// healthd's NDJSON export read back: what the server writes for a sample decodes to the same sample.
@Suite struct HealthdExportLineTests {
    private func sample(_ json: String) throws -> HealthSample {
        var reader = try JSONFieldReader(parsing: Array(json.utf8))
        return try SampleCodec.decode(&reader) { HealthUUID(high: 0x7000, low: 0x8000_0000_0000_0000) }
    }

    private func exported(_ sample: HealthSample, app: String) -> [UInt8] {
        var writer = JSONWriter()
        SampleCodec.write(StoredSample(sample: sample, source: SampleSource(app: app, user: "3f1c…"), created: 1_772_980_200_000),
                          into: &writer)
        return writer.bytes
    }

    @Test(arguments: [
        #"{"uuid":"0195c8a4-1f00-7000-8000-000000000001","type":"stepCount","value":420.25,"unit":"count","start":"2026-03-08T09:00:00-05:00","end":"2026-03-08T09:10:00-05:00","metadata":{"HKWasUserEntered":true},"device":{"name":"Watch","model":"Watch6,14"}}"#,
        #"{"uuid":"0195c8a4-1f00-7000-8000-000000000002","type":"bloodPressure","start":"2026-03-08T09:00:00Z","objects":[{"uuid":"0195c8a4-1f00-7000-8000-000000000003","type":"bloodPressureSystolic","value":120,"unit":"mmHg","start":"2026-03-08T09:00:00Z"},{"uuid":"0195c8a4-1f00-7000-8000-000000000004","type":"bloodPressureDiastolic","value":80,"unit":"mmHg","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"uuid":"0195c8a4-1f00-7000-8000-000000000005","type":"workout","activityType":"running","totalDistance":{"value":5.2,"unit":"km"},"events":[{"type":"pause","date":"2026-03-08T09:10:00Z"},{"type":"resume","date":"2026-03-08T09:12:00Z"}],"start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:40:00Z"}"#,
        #"{"uuid":"0195c8a4-1f00-7000-8000-000000000006","type":"sleepAnalysis","value":"asleepREM","start":"2026-03-08T01:00:00Z","end":"2026-03-08T01:30:00Z"}"#,
    ])
    func anExportedLineDecodesToTheSameSampleAndApp(json: String) throws {
        let original = try sample(json)
        let line = exported(original, app: "my-watch")
        let restored = try HealthdExportLine.decode(line[...])
        #expect(restored.app == "my-watch")
        #expect(restored.sample == original, "\(String(decoding: line, as: UTF8.self))")
    }

    private func failure(_ line: String) -> JSONFieldError? {
        do {
            _ = try HealthdExportLine.decode(Array(line.utf8)[...])
            return nil
        } catch {
            return error
        }
    }

    @Test func linesThatAreNotOursSayWhy() {
        #expect(failure(#"{"type":"stepCount"}"#)?.field == "source.app")
        #expect(failure(#"{"type":"stepCount","source":{"app":"a"}}"#)?.field == "uuid")
        #expect(failure("[1]")?.detail.contains("expected a sample object") == true)
        #expect(failure(#"{"x"#)?.detail.contains("invalid JSON") == true)
        // Checked like a POST body: a value out of range is named.
        #expect(failure(#"{"uuid":"0195c8a4-1f00-7000-8000-000000000001","type":"stepCount","value":-1,"unit":"count","start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:01:00Z","source":{"app":"a"}}"#)?.field == "value")
    }

    @Test func theFormatIsReadFromTheFirstBytes() {
        #expect(ImportFormat.detect(head: [0x50, 0x4B, 0x03, 0x04, 0x14]) == .appleHealthZip)
        #expect(ImportFormat.detect(head: Array("<?xml version=\"1.0\"?>".utf8)) == .appleHealthXML)
        #expect(ImportFormat.detect(head: [0xEF, 0xBB, 0xBF] + Array("\n<HealthData>".utf8)) == .appleHealthXML)
        #expect(ImportFormat.detect(head: Array("{\"uuid\":\"…\"}\n".utf8)) == .healthdNDJSON)
        #expect(ImportFormat.detect(head: Array("t,x,y,z\n".utf8)) == nil)
        #expect(ImportFormat.detect(head: []) == nil)
    }
}
