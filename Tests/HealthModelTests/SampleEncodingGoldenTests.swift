import Testing
import JSON
@testable import HealthModel

/// The sample writer puts uuids and instants straight into the output buffer and encodes member
/// names once; clients must see the same bytes as from the plain writer it replaced. The reference
/// below is that plain writer (String-formatted uuids and instants, names written as Strings),
/// kept here to compare against, over every kind of content, odd metadata and every unit.
@Suite struct SampleEncodingGoldenTests {
    // MARK: The reference encoder

    enum Reference {
        static func write(_ stored: StoredSample, unit: HealthUnit? = nil, into writer: inout JSONWriter) {
            let sample = stored.sample
            writer.beginObject()
            writer.key("uuid"); writer.string(sample.uuid.lowercasedString)
            writer.key("type"); writer.string(sample.type)
            let type = HealthTypeCatalog.type(sample.type)
            switch sample.content {
            case .quantity(let canonicalValue):
                let canonical = type?.canonicalUnit ?? .count
                let conversion = unit.flatMap { HealthUnitConversion(from: canonical, to: $0) } ?? .identity(canonical)
                writer.key("value"); writer.number(conversion.apply(canonicalValue))
                writer.key("unit"); writer.string(conversion.target.unitString)
            case .category(let name):
                writer.key("value"); writer.string(name)
            case .correlation(let objects):
                writer.key("objects")
                writer.beginArray()
                for object in objects {
                    write(StoredSample(sample: object, source: stored.source, created: stored.created), unit: nil, into: &writer)
                }
                writer.endArray()
            case .workout(let workout):
                writer.key("activityType"); writer.string(workout.activityType)
                if let energy = workout.totalEnergyBurned {
                    writer.key("totalEnergyBurned")
                    writeQuantity(energy, canonical: .kilocalorie, shown: unit, into: &writer)
                }
                if let distance = workout.totalDistance {
                    writer.key("totalDistance")
                    writeQuantity(distance, canonical: .meter, shown: unit, into: &writer)
                }
                writer.key("events")
                writer.beginArray()
                for event in workout.events {
                    writer.beginObject()
                    writer.key("type"); writer.string(event.type.rawValue)
                    writer.key("date"); writer.string(RFC3339.format(event.date))
                    writer.endObject()
                }
                writer.endArray()
            case .workoutRoute(let route):
                writer.key("workout"); writer.string(route.workout.lowercasedString)
                writer.key("locations")
                writer.beginArray()
                for location in route.locations {
                    writer.beginObject()
                    writer.key("date"); writer.string(RFC3339.format(location.date))
                    writer.key("latitude"); writer.number(location.latitude)
                    writer.key("longitude"); writer.number(location.longitude)
                    for (name, value) in location.optionalFields {
                        if let value { writer.key(name); writer.number(value) }
                    }
                    writer.endObject()
                }
                writer.endArray()
            }
            writer.key("start"); writer.string(RFC3339.format(sample.start))
            writer.key("end"); writer.string(RFC3339.format(sample.end))
            writer.key("metadata")
            writer.beginObject()
            for entry in sample.metadata {
                writer.key(entry.key)
                switch entry.value {
                case .string(let text): writer.string(text)
                case .number(let number): writer.number(number)
                case .bool(let flag): writer.bool(flag)
                }
            }
            writer.endObject()
            writer.key("device")
            if let device = sample.device {
                writer.beginObject()
                for (name, value) in [("name", device.name), ("manufacturer", device.manufacturer), ("model", device.model),
                                      ("hardwareVersion", device.hardwareVersion), ("softwareVersion", device.softwareVersion),
                                      ("localIdentifier", device.localIdentifier)] {
                    if let value { writer.key(name); writer.string(value) }
                }
                writer.endObject()
            } else {
                writer.null()
            }
            writer.key("source")
            writer.beginObject()
            writer.key("app"); writer.string(stored.source.app)
            writer.key("user"); writer.string(stored.source.user)
            writer.endObject()
            writer.key("created"); writer.string(RFC3339.format(stored.created))
            writer.endObject()
        }

        static func writeQuantity(_ canonicalValue: Double, canonical: HealthUnit, shown: HealthUnit?, into writer: inout JSONWriter) {
            let conversion = shown.flatMap { HealthUnitConversion(from: canonical, to: $0) } ?? .identity(canonical)
            writer.beginObject()
            writer.key("value"); writer.number(conversion.apply(canonicalValue))
            writer.key("unit"); writer.string(conversion.target.unitString)
            writer.endObject()
        }
    }

    // MARK: Samples

    static let odd = "quote \" backslash \\ newline \n tab \t bell \u{07} nul \u{00} del \u{7F} é ü 日本 🏃‍♀️ \u{2028} </script>"

    static let devices: [SampleDevice?] = [
        nil,
        SampleDevice(name: "iPhone", manufacturer: "Apple Inc.", model: "iPhone", hardwareVersion: "iPhone15,2", softwareVersion: "17.4"),
        SampleDevice(name: "Watch \"Ultra\"", localIdentifier: "local\\id\n"),
        SampleDevice(manufacturer: odd),
    ]

    static let metadata: [[MetadataEntry]] = [
        [],
        [MetadataEntry(key: "HKWasUserEntered", value: .bool(false))],
        [MetadataEntry(key: "HKHeartRateMotionContext", value: .number(1)),
         MetadataEntry(key: "HKExternalUUID", value: .string("a1b2c3")),
         MetadataEntry(key: "ratio", value: .number(0.1 + 0.2)),
         MetadataEntry(key: "tiny", value: .number(1e-7)),
         MetadataEntry(key: "huge", value: .number(1e300)),
         MetadataEntry(key: "negativeZero", value: .number(-0.0)),
         MetadataEntry(key: "flag", value: .bool(true))],
        [MetadataEntry(key: odd, value: .string(odd)), MetadataEntry(key: "", value: .string("")),
         MetadataEntry(key: "ключ", value: .string("значение \u{1F}"))],
    ]

    /// Instants from before 1970 to past year 9999 (the expanded year form), with and without milliseconds.
    static let instants: [Int64] = [
        1_772_962_200_000, 1_772_962_200_001, 0, -1, -62_135_596_800_000, 253_402_300_799_999, 253_402_300_800_000,
        -62_198_755_200_000, 951_782_400_123,
    ]

    static func quantity(_ type: HealthType, value: Double, index: Int) -> HealthSample {
        let start = instants[index % instants.count]
        return HealthSample(uuid: HealthUUID(high: UInt64(index) &* 0x9E37_79B9_7F4A_7C15, low: ~UInt64(index)), type: type.id,
                            start: start, end: start &+ Int64(index % 3) * 60_000, content: .quantity(value),
                            metadata: metadata[index % metadata.count], device: devices[index % devices.count])
    }

    static func stored(_ sample: HealthSample, index: Int) -> StoredSample {
        StoredSample(sample: sample, source: SampleSource(app: index % 2 == 0 ? "my-phone" : odd, user: "0195c8a4-user"),
                     created: instants[(index + 3) % instants.count])
    }

    /// Quantities of every catalog type (integral, fractional, tiny and huge values), categories,
    /// a correlation, workouts and a route.
    static var samples: [StoredSample] {
        var samples: [HealthSample] = []
        var index = 0
        for type in HealthTypeCatalog.quantityTypes {
            for value in [0, 42, 72.5, 0.1 + 0.2, 1e-9, 123_456_789.123, 9_007_199_254_740_994] as [Double] {
                samples.append(quantity(type, value: value, index: index))
                index += 1
            }
        }
        for type in HealthTypeCatalog.categoryTypes {
            for name in type.values?.caseNames ?? ["notApplicable"] {
                var sample = quantity(type, value: 0, index: index)
                sample.content = .category(name)
                samples.append(sample)
                index += 1
            }
        }
        let systolic = quantity(HealthTypeCatalog.type("bloodPressureSystolic")!, value: 121, index: 1)
        let diastolic = quantity(HealthTypeCatalog.type("bloodPressureDiastolic")!, value: 79.5, index: 2)
        var pressure = quantity(HealthTypeCatalog.type("bloodPressure")!, value: 0, index: 3)
        pressure.content = .correlation([systolic, diastolic])
        samples.append(pressure)
        for (position, details) in [
            WorkoutDetails(activityType: "running", totalEnergyBurned: 412.5, totalDistance: 5_012.25,
                           events: WorkoutEventType.allCases.enumerated().map { WorkoutEvent(type: $1, date: 1_772_962_200_000 + Int64($0) * 1_001) }),
            WorkoutDetails(activityType: "yoga"),
            WorkoutDetails(activityType: "cycling", totalDistance: 0.5),
        ].enumerated() {
            var workout = quantity(HealthTypeCatalog.workoutType, value: 0, index: position)
            workout.content = .workout(details)
            samples.append(workout)
        }
        var route = quantity(HealthTypeCatalog.workoutRouteType, value: 0, index: 5)
        route.content = .workoutRoute(WorkoutRoute(workout: HealthUUID(high: 0x0195_c8a4_1f00_7000, low: 0x8000_0000_0000_0001), locations: [
            WorkoutRouteLocation(date: 1_772_962_200_000, latitude: 52.520008, longitude: 13.404954),
            WorkoutRouteLocation(date: 1_772_962_201_500, latitude: -33.8688, longitude: 151.2093, altitude: 12.5, speed: 3.1,
                                 course: 270, horizontalAccuracy: 4.25, verticalAccuracy: 6),
            WorkoutRouteLocation(date: 1_772_962_203_000, latitude: 0, longitude: -0.0, speed: 0, verticalAccuracy: 1e-3),
        ]))
        samples.append(route)
        return samples.enumerated().map { stored($1, index: $0) }
    }

    /// Every unit a type accepts, plus a few a workout's totals may be shown in.
    static func units(for sample: HealthSample) -> [HealthUnit?] {
        var names: [String] = []
        if let type = HealthTypeCatalog.type(sample.type) {
            names = type.units
            if type.kind == .workout { names = ["kcal", "kJ", "Cal", "km", "mi", "ft"] }
        }
        return [nil] + names.compactMap { try? HealthUnit.parse($0) }
    }

    static func bytes(prettyPrinted: Bool, _ body: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter(prettyPrinted: prettyPrinted)
        body(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    // MARK: Tests

    @Test func everySampleInEveryUnitMatchesTheReference() {
        var compared = 0
        for stored in Self.samples {
            for unit in Self.units(for: stored.sample) {
                for pretty in [false, true] {
                    let expected = Self.bytes(prettyPrinted: pretty) { Reference.write(stored, unit: unit, into: &$0) }
                    let actual = Self.bytes(prettyPrinted: pretty) { SampleCodec.write(stored, unit: unit, into: &$0) }
                    #expect(actual == expected, "\(stored.sample.type) in \(unit?.unitString ?? "its canonical unit")")
                    compared += 1
                }
            }
        }
        #expect(compared > 500)
    }

    /// A page mixes types (the array writer reuses a type's unit conversion while the type stays
    /// the same), and a unit that fits only some of them.
    @Test func pagesMatchTheReferenceSampleBySample() throws {
        let samples = Self.samples
        for unit in [nil, try HealthUnit.parse("count"), try HealthUnit.parse("kcal"), try HealthUnit.parse("km")] as [HealthUnit?] {
            for pretty in [false, true] {
                let expected = Self.bytes(prettyPrinted: pretty) { writer in
                    writer.beginArray()
                    for stored in samples { Reference.write(stored, unit: unit, into: &writer) }
                    writer.endArray()
                }
                let actual = Self.bytes(prettyPrinted: pretty) { SampleCodec.write(samples, unit: unit, into: &$0) }
                #expect(actual == expected)
            }
        }
    }

    /// The bytes themselves, pinned: a change to the reference would otherwise go unseen.
    @Test func aStepCountSampleIsWrittenExactlySo() throws {
        let sample = HealthSample(uuid: HealthUUID(high: 0x0195_c8a4_1f00_7000, low: 0x8000_0000_0000_0001), type: "stepCount",
                                  start: 1_772_962_200_000, end: 1_772_962_800_000, content: .quantity(420),
                                  metadata: [MetadataEntry(key: "HKWasUserEntered", value: .bool(false))],
                                  device: SampleDevice(name: "iPhone", manufacturer: "Apple Inc."))
        let stored = StoredSample(sample: sample, source: SampleSource(app: "my-phone", user: "u1"), created: 1_772_962_801_234)
        let text = Self.bytes(prettyPrinted: false) { SampleCodec.write(stored, into: &$0) }
        #expect(text == #"{"uuid":"0195c8a4-1f00-7000-8000-000000000001","type":"stepCount","value":420,"unit":"count","#
            + #""start":"2026-03-08T09:30:00.000Z","end":"2026-03-08T09:40:00.000Z","metadata":{"HKWasUserEntered":false},"#
            + #""device":{"name":"iPhone","manufacturer":"Apple Inc."},"source":{"app":"my-phone","user":"u1"},"#
            + #""created":"2026-03-08T09:40:01.234Z"}"#)
    }

    @Test func instantsAndUUIDsWrittenInPlaceMatchTheirStrings() {
        for instant in Self.instants + [Int64.max / 2, Int64.min / 2] {
            let text = Self.bytes(prettyPrinted: false) { SampleCodec.writeInstant(instant, into: &$0) }
            #expect(text == "\"\(RFC3339.format(instant))\"")
        }
        let uuid = HealthUUID(high: 0xABCD_EF01_2345_6789, low: 0xFEDC_BA98_7654_3210)
        #expect(Self.bytes(prettyPrinted: false) { SampleCodec.writeUUID(uuid, into: &$0) } == "\"\(uuid.lowercasedString)\"")
    }
}
