import Testing
import JSON
@testable import HealthModel
import Primitives

/// The byte-level batch decoder returns exactly what the general path (parser, field reader,
/// SampleCodec) returns for a valid body, and nil for every body the general path refuses.
@Suite struct SampleBatchDecoderTests {
    static let minted = HealthUUID(high: 0x0195_c8a4_1f00_7000, low: 0x8000_0000_0000_0001)

    /// The general path, as the route runs it: nil where it answers an error.
    static func general(_ body: [UInt8], maxBatchSize: Int = 10_000) -> [HealthSample]? {
        do throws(JSONFieldError) {
            var document = try JSONFieldReader(parsing: body)
            let list = try document.requiredArray("samples")
            try document.finish()
            guard !list.isEmpty, list.count <= maxBatchSize else { return nil }
            var samples: [HealthSample] = []
            for index in 0..<list.count {
                var reader = try list.object(at: index)
                samples.append(try SampleCodec.decode(&reader) { minted })
                try reader.finish()
            }
            return samples
        } catch {
            return nil
        }
    }

    static func fast(_ body: [UInt8], maxBatchSize: Int = 10_000) -> [HealthSample]? {
        SampleBatchDecoder.decode(body, maxBatchSize: maxBatchSize) { minted }
    }

    static func body(_ samples: [String]) -> [UInt8] {
        Array(#"{"samples":[\#(samples.joined(separator: ","))]}"#.utf8)
    }

    static let steps = #"{"uuid":"0195c8a4-1f00-7000-8000-000000000001","type":"stepCount","value":420,"unit":"count","start":"2026-03-08T09:00:00-05:00","end":"2026-03-08T09:10:00-05:00","device":{"name":"iPhone","manufacturer":"Apple Inc.","model":"iPhone","hardwareVersion":"iPhone15,2","softwareVersion":"17.4"},"metadata":{"HKWasUserEntered":false}}"#
    static let heartRate = #"{"type":"heartRate","value":72,"unit":"count/min","start":"2026-03-08T09:05:00.250-05:00","metadata":{"HKHeartRateMotionContext":1,"note":"résumé ✓"},"device":{"name":"Apple Watch","manufacturer":"Apple Inc.","model":"Watch","localIdentifier":null}}"#
    static let converted = #"{"type":"distanceWalkingRunning","value":1.5,"unit":"km","start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:20:00Z","uuid":null,"device":null,"metadata":{}}"#
    static let temperature = #"{"type":"bodyTemperature","value":98.6,"unit":"degF","start":"2026-03-08T09:00:00Z"}"#
    static let workout = #"{"type":"workout","activityType":"running","start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:30:00Z","totalDistance":{"value":5,"unit":"km"},"events":[{"type":"pause","date":"2026-03-08T09:10:00Z"}]}"#
    static let correlation = #"{"type":"bloodPressure","start":"2026-03-08T09:00:00Z","objects":[{"type":"bloodPressureSystolic","value":120,"unit":"mmHg","start":"2026-03-08T09:00:00Z"},{"type":"bloodPressureDiastolic","value":80,"unit":"mmHg","start":"2026-03-08T09:00:00Z"}]}"#
    static let category = #"{"type":"sleepAnalysis","value":"asleepCore","start":"2026-03-08T01:00:00Z","end":"2026-03-08T02:00:00Z"}"#
    static let escaped = #"{"type":"stepCount","value":3,"unit":"count","start":"2026-03-08T09:00:00Z","device":{"name":"Jo\u00EBl's \"phone\""}}"#
    static let longIdentifier = #"{"type":"HKQuantityTypeIdentifierStepCount","value":3,"unit":"count","start":"2026-03-08T09:00:00Z"}"#

    static let valid = [steps, heartRate, converted, temperature, workout, correlation, category, escaped, longIdentifier]

    @Test func validBatchesDecodeAsTheGeneralPathDecodesThem() throws {
        let bodies: [[UInt8]] = [
            Self.body(Self.valid),
            Self.body([Self.steps, Self.heartRate, Self.steps, Self.heartRate, Self.converted, Self.heartRate]),
            Array(" \n{ \"samples\" :\t[ \(Self.steps) , \(Self.heartRate) ] } \r\n".utf8),
            Self.body(Array(Self.valid.reversed())),
        ]
        for body in bodies {
            let general = try #require(Self.general(body))
            #expect(Self.fast(body) == general, "\(String(decoding: body, as: UTF8.self))")
        }
    }

    @Test func plainQuantitySamplesAreReadAndConvertedExactly() throws {
        let samples = try #require(Self.fast(Self.body([Self.steps, Self.heartRate, Self.converted, Self.temperature])))
        #expect(samples.map(\.type) == ["stepCount", "heartRate", "distanceWalkingRunning", "bodyTemperature"])
        #expect(samples[0].uuid == HealthUUID("0195C8A4-1F00-7000-8000-000000000001"))
        #expect(samples[1].uuid == Self.minted, "a sample without a uuid gets one from the given source")
        #expect(samples[0].quantity == 420 && samples[2].quantity == 1_500)
        #expect(abs((samples[3].quantity ?? 0) - 37) < 1e-9)
        #expect(samples[1].start == samples[1].end && samples[1].start == 1_772_978_700_250)
        #expect(samples[1].metadata == [MetadataEntry(key: "HKHeartRateMotionContext", value: .number(1)),
                                        MetadataEntry(key: "note", value: .string("résumé ✓"))])
        #expect(samples[1].device == SampleDevice(name: "Apple Watch", manufacturer: "Apple Inc.", model: "Watch"))
        #expect(samples[2].device == nil && samples[2].metadata.isEmpty)
    }

    @Test func repeatedDevicesAndMetadataAreTheSameValues() throws {
        // The second and later copies come from the decoder's memory of recent objects.
        let body = Self.body(Array(repeating: Self.steps, count: 3) + Array(repeating: Self.heartRate, count: 3))
        let samples = try #require(Self.fast(body))
        #expect(samples == Self.general(body))
        #expect(Set(samples.map(\.device)).count == 2)
    }

    /// Bodies the general path refuses: the decoder must hand each back (nil), so the route
    /// answers with the general path's own errors.
    @Test(arguments: [
        "", " ", "\u{FEFF}{\"samples\":[]}", "[]", "{}", #"{"samples":[]}"#, #"{"samples":{}}"#, #"{"samples":[1]}"#,
        #"{"samples":[{}]}"#, #"{"samples":[\#(SampleBatchDecoderTests.steps)],"other":1}"#, #"{"samples":[\#(SampleBatchDecoderTests.steps)],"samples":[]}"#,
        #"{"samples":[\#(SampleBatchDecoderTests.steps),]}"#, #"{"samples":[\#(SampleBatchDecoderTests.steps)]} x"#, #"{"samples":[\#(SampleBatchDecoderTests.steps)]"#,
        #"{"samples":[{"type":"stepCount","type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{"a":1,"a":2}}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{"a":null}}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{"a":{}}}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":[]}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","device":{"name":"a","name":"b"}}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","device":{"colour":"red"}}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","device":{"name":1}}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","source":{"app":"x"}}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","created":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","uuid":"nope"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","uuid":"0195c8a4-1f00-7000-8000-00000000000g"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"1850-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T10:00:00Z","end":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-01T00:00:00Z","end":"2026-03-08T00:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":-1,"unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":"1","unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":null,"unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count"}]}"#,
        #"{"samples":[{"type":null,"value":1,"unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepz","value":1,"unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"biologicalSex","value":1,"start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"kg","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"%","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"furlong^","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"heartRate","value":900,"unit":"count/min","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1e400,"unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":01,"unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1.,"unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:00:00Z\u0000"}]}"#,
        #"{"samples":[{"type":"sleepAnalysis","value":"dozing","start":"2026-03-08T01:00:00Z"}]}"#,
        // A quantity names its unit: never the canonical one by default.
        #"{"samples":[{"type":"stepCount","value":1,"start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"bodyMass","value":150,"unit":null,"start":"2026-03-08T09:00:00Z"}]}"#,
        #"{"samples":[{"type":"HKQuantityTypeIdentifierBodyMass","value":150,"start":"2026-03-08T09:00:00Z","device":{"name":"Scale"}}]}"#,
        #"{"samples":[{"type":"bloodPressure","start":"2026-03-08T09:00:00Z","objects":[{"type":"bloodPressureSystolic","value":120,"unit":"mmHg","start":"2026-03-08T09:00:00Z"},{"type":"bloodPressureDiastolic","value":80,"start":"2026-03-08T09:00:00Z"}]}]}"#,
        #"{"samples":[{"type":"workout","activityType":"running","start":"2026-03-08T09:00:00Z","end":"2026-03-08T09:30:00Z","totalDistance":{"value":5}}]}"#,
        #"{"samples":[\#(SampleBatchDecoderTests.steps),{"type":"heartRate","value":72,"start":"2026-03-08T09:05:00Z"}]}"#,
        #"{"samples":[\#(SampleBatchDecoderTests.steps),{"type":"stepCount","value":-1,"unit":"count","start":"2026-03-08T09:00:00Z"}]}"#,
    ])
    func refusedBodiesAreHandedBack(text: String) {
        let body = Array(text.utf8)
        #expect(Self.general(body) == nil, "the case itself must be one the general path refuses")
        #expect(Self.fast(body) == nil)
    }

    @Test func bytesTheParserRefusesAreHandedBack() {
        let prefix = Array(#"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{"k":""#.utf8)
        let suffix = Array(#""}}]}"#.utf8)
        for bad: [UInt8] in [[0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x01], [0xE2, 0x82]] {
            #expect(Self.fast(prefix + bad + suffix) == nil)
        }
        // Keys equal only as Unicode text (the same combining marks in another order, as many
        // bytes): the parser calls them duplicates, so the decoder must not read them itself.
        let reordered = Array("{\"samples\":[{\"type\":\"stepCount\",\"value\":1,\"start\":\"2026-03-08T09:00:00Z\",\"metadata\":{\"a\u{301}\u{316}\":1,\"a\u{316}\u{301}\":2}}]}".utf8)
        #expect(Self.general(reordered) == nil)
        #expect(Self.fast(reordered) == nil)
        // Keys the parser tells apart (K and KELVIN SIGN differ in length): both paths keep both.
        let kelvin = Array(#"{"samples":[{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{"K":1,"\#u{212A}":2}}]}"#.utf8)
        #expect(Self.fast(kelvin) == Self.general(kelvin))
        #expect(Self.fast(kelvin)?.first?.metadata.count == 2)
    }

    @Test func batchSizeLimitMatches() {
        let body = Self.body(Array(repeating: Self.steps, count: 5))
        #expect(Self.fast(body, maxBatchSize: 5)?.count == 5)
        #expect(Self.fast(body, maxBatchSize: 4) == nil)
    }

    @Test func largeMetadataIsMeasuredByTheGeneralPath() throws {
        func sample(_ length: Int) -> String {
            #"{"type":"stepCount","value":1,"unit":"count","start":"2026-03-08T09:00:00Z","metadata":{"k":"\#(String(repeating: "x", count: length))"}}"#
        }
        let fits = Self.body([sample(16_384 - 8)])
        let decoded = try #require(Self.fast(fits))
        #expect(decoded == Self.general(fits))
        #expect(Self.fast(Self.body([sample(16_384 - 7)])) == nil)
    }

    /// Every prefix of a valid body is refused, and every single-byte change either gives the
    /// general path's samples or is handed back, never different samples.
    @Test func truncatedAndMutatedBodiesNeverDisagree() {
        let body = Self.body([Self.steps, Self.heartRate, Self.correlation, Self.converted])
        for length in 0..<body.count {
            #expect(Self.fast(Array(body[..<length])) == nil, "prefix of \(length) bytes")
        }
        var random = SplitMix64(seed: 19)
        let replacements: [UInt8] = Array(#"{}[]",:0-.e"#.utf8) + [0x20, 0x5C, 0x00, 0x80, 0xC3, 0x61, 0x5A, 0x6E, 0x74]
        for position in body.indices {
            for _ in 0..<3 {
                var mutated = body
                mutated[position] = replacements[Int(random.next() % UInt64(replacements.count))]
                guard let fast = Self.fast(mutated) else { continue }
                #expect(Self.general(mutated) == fast, "byte \(position): \(String(decoding: mutated, as: UTF8.self))")
            }
        }
    }
}

/// The cursor reads numbers and strings exactly as the parser does, and nothing else.
@Suite struct JSONByteCursorTests {
    @Test(arguments: ["0", "-0", "42", "-17", "3.25", "1e3", "1E+3", "25e-2", "0.1", "1.7976931348623157e308", "5e-324",
                      "1e-400", "123456789012345678901234567890", "9007199254740993", "0.30000000000000004"])
    func numbersMatchTheParser(text: String) throws {
        let bytes = Array(text.utf8)
        let parsed = try JSONParser.parse(bytes)
        let read = bytes.withUnsafeBufferPointer { buffer -> Double? in
            var cursor = JSONByteCursor(buffer)
            let number = cursor.number()
            return cursor.isAtEnd ? number : nil
        }
        #expect(read.map(JSONValue.number) == parsed)
        #expect(read?.sign == parsed.numberValue?.sign)
    }

    @Test(arguments: ["01", "-", "1.", ".5", "1e", "1e+", "+1", "1e400", "-1e400", "x"])
    func malformedNumbersAreNotRead(text: String) {
        let read = Array(text.utf8).withUnsafeBufferPointer { buffer -> Double? in
            var cursor = JSONByteCursor(buffer)
            return cursor.number()
        }
        // "01" reads no number at all (the parser refuses a leading zero), unlike a prefix.
        #expect(read == nil, "\(text)")
    }

    @Test func plainStringsOnly() {
        func read(_ text: String) -> String? {
            Array(text.utf8).withUnsafeBufferPointer { buffer -> String? in
                var cursor = JSONByteCursor(buffer)
                return cursor.plainString().map { cursor.string($0) }
            }
        }
        #expect(read(#"  "abc""#) == "abc")
        #expect(read(#""""#) == "")
        #expect(read(#""é😀""#) == "é😀")
        #expect(read(#""a\nb""#) == nil, "escapes are the parser's")
        #expect(read("\"a\u{1}b\"") == nil, "control characters are refused")
        #expect(read(#""abc"#) == nil, "unterminated")
        #expect(read("abc") == nil)
    }

    @Test func parseValueStopsAfterOneValue() throws {
        let bytes = Array(#"[{"a":[1,2]} , 3]"#.utf8)
        let (value, end) = try bytes.withUnsafeBufferPointer { buffer in try JSONParser.parseValue(buffer, at: 1) }
        #expect(value == ["a": [1, 2]])
        #expect(end == 12)
        #expect(throws: JSONParseError.self) {
            _ = try bytes.withUnsafeBufferPointer { buffer in try JSONParser.parseValue(buffer, at: 1, maxDepth: 1) }
        }
    }
}
