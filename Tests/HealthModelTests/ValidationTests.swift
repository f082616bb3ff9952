import Testing
@testable import HealthModel
import Primitives

@Suite("Validation primitives")
struct ValidationTests {
    func type(_ id: String) throws -> HealthType {
        try #require(HealthTypeCatalog.type(id))
    }

    struct Failure: Equatable {
        let field: String
        let reason: HealthValidationError.Reason

        init(_ field: String, _ reason: HealthValidationError.Reason) {
            self.field = field
            self.reason = reason
        }
    }

    /// The field and reason `body` fails with, nil when it passes.
    func field(of body: () throws -> Void) -> Failure? {
        do {
            try body()
            return nil
        } catch let error as HealthValidationError {
            return Failure(error.field, error.reason)
        } catch {
            return Failure("unexpected \(error)", .missingField)
        }
    }

    @Test func quantityValues() throws {
        let steps = try type("stepCount")
        let heartRate = try type("heartRate")
        let oxygen = try type("oxygenSaturation")
        let temperature = try type("bodyTemperature")

        #expect(try HealthValidation.quantity(1200, unit: .count, for: steps) == 1200)
        #expect(try HealthValidation.quantity(1.2, unit: HealthUnit.parse("Hz"), for: heartRate) == 72)
        #expect(try HealthValidation.quantity(0.97, unit: .percent, for: oxygen) == 0.97)
        #expect(isClose(try HealthValidation.quantity(98.6, unit: HealthUnit.parse("degF"), for: temperature), 37))

        #expect(field { _ = try HealthValidation.quantity(-1, unit: .count, for: steps) } == Failure("value", .valueNegative))
        #expect(field { _ = try HealthValidation.quantity(.nan, unit: .count, for: steps) } == Failure("value", .valueNotFinite))
        #expect(field { _ = try HealthValidation.quantity(.infinity, unit: .count, for: steps) } == Failure("value", .valueNotFinite))
        #expect(field { _ = try HealthValidation.quantity(97, unit: .percent, for: oxygen) } == Failure("value", .valueOutOfRange))
        #expect(field { _ = try HealthValidation.quantity(0, unit: .countPerMinute, for: heartRate) } == Failure("value", .valueOutOfRange))
        #expect(field { _ = try HealthValidation.quantity(301, unit: .countPerMinute, for: heartRate) } == Failure("value", .valueOutOfRange))
        #expect(field { _ = try HealthValidation.quantity(1, unit: .meter, for: steps) } == Failure("unit", .unitIncompatible))
        let sleep = try type("sleepAnalysis")
        #expect(field { _ = try HealthValidation.quantity(1, unit: .count, for: sleep) } == Failure("value", .typeNotAllowed))
    }

    @Test func quantityFromUnitString() throws {
        let bodyMass = try type("bodyMass")
        #expect(isClose(try HealthValidation.quantity(154, unitString: "lb", for: bodyMass), 154 * 0.45359237))
        #expect(field { _ = try HealthValidation.quantity(1, unitString: "m", for: bodyMass) } == Failure("unit", .unitIncompatible))
        #expect(field { _ = try HealthValidation.quantity(-1, unitString: "kg", for: bodyMass) } == Failure("value", .valueOutOfRange))
        do {
            _ = try HealthValidation.quantity(2000, unitString: "kg", for: bodyMass)
            Issue.record("2000 kg accepted")
        } catch {
            #expect(error.detail == "bodyMass must be within 0...1000 kg")
        }
    }

    @Test func units() throws {
        let distance = try type("distanceWalkingRunning")
        #expect(try HealthValidation.unit("mi", for: distance) == HealthUnit.parse("mi"))
        #expect(field { _ = try HealthValidation.unit("furlong", for: distance) } == Failure("unit", .unitMalformed))
        #expect(field { _ = try HealthValidation.unit("kg", for: distance) } == Failure("unit", .unitIncompatible))
        let sleep = try type("sleepAnalysis")
        #expect(field { _ = try HealthValidation.unit("count", for: sleep) } == Failure("unit", .unitIncompatible))
    }

    @Test func intervals() throws {
        let steps = try type("stepCount")
        let heartRate = try type("heartRate")
        let start = try HealthValidation.instant("2026-03-08T09:30:00-05:00", field: "start")
        try HealthValidation.interval(start: start, end: start, for: steps)
        try HealthValidation.interval(start: start, end: start + 345_600_000, for: steps)
        try HealthValidation.interval(start: start, end: start + 10 * 86_400_000, for: heartRate)
        #expect(field { try HealthValidation.interval(start: start, end: start + 345_600_001, for: steps) } == Failure("end", .durationTooLong))
        #expect(field { try HealthValidation.interval(start: start, end: start - 1, for: heartRate) } == Failure("end", .endBeforeStart))
        #expect(field { try HealthValidation.interval(start: HealthInstantLimits.earliestSampleInstant - 1, end: start, for: heartRate) } == Failure("start", .instantOutOfRange))
        #expect(field { try HealthValidation.interval(start: start, end: HealthInstantLimits.latestSampleInstant + 1, for: heartRate) } == Failure("end", .instantOutOfRange))
        #expect(field { _ = try HealthValidation.instant("1899-12-31T23:59:59Z", field: "start") } == Failure("start", .instantOutOfRange))
        #expect(field { _ = try HealthValidation.instant("2200-01-01T00:00:00.001Z", field: "end") } == Failure("end", .instantOutOfRange))
        #expect(field { _ = try HealthValidation.instant("yesterday", field: "end") } == Failure("end", .malformedInstant))
    }

    @Test func categoryValues() throws {
        let sleep = try type("sleepAnalysis")
        #expect(try HealthValidation.categoryValue("asleepDeep", for: sleep) == "asleepDeep")
        #expect(try HealthValidation.categoryValue("HKCategoryValueSleepAnalysisAwake", for: sleep) == "awake")
        #expect(try HealthValidation.categoryValue(rawValue: 0, for: sleep) == "inBed")
        #expect(field { _ = try HealthValidation.categoryValue("napping", for: sleep) } == Failure("value", .valueNotInSet))
        #expect(field { _ = try HealthValidation.categoryValue(rawValue: 9, for: sleep) } == Failure("value", .valueNotInSet))
        let steps = try type("stepCount")
        #expect(field { _ = try HealthValidation.categoryValue("light", for: steps) } == Failure("value", .typeNotAllowed))
        #expect(try HealthValidation.workoutActivityType("HKWorkoutActivityTypeYoga") == "yoga")
        #expect(field { _ = try HealthValidation.workoutActivityType("jogging") } == Failure("activityType", .valueNotInSet))
    }

    @Test func workouts() throws {
        let energy = HealthTypeCatalog.workoutTotalEnergyBurnedUnit
        let distance = HealthTypeCatalog.workoutTotalDistanceUnit
        #expect(try HealthValidation.workoutTotal(1, unit: "kJ", canonicalUnit: energy, field: "totalEnergyBurned")
                    == 1 / 4.184)
        #expect(try HealthValidation.workoutTotal(5, unit: "km", canonicalUnit: distance, field: "totalDistance") == 5000)
        #expect(field { _ = try HealthValidation.workoutTotal(5, unit: "kg", canonicalUnit: distance, field: "totalDistance") }
                    == Failure("totalDistance.unit", .unitIncompatible))
        #expect(field { _ = try HealthValidation.workoutTotal(-5, unit: "m", canonicalUnit: distance, field: "totalDistance") }
                    == Failure("totalDistance.value", .valueNegative))
        #expect(field { _ = try HealthValidation.workoutTotal(.nan, unit: "m", canonicalUnit: distance, field: "totalDistance") }
                    == Failure("totalDistance.value", .valueNotFinite))
        #expect(field { _ = try HealthValidation.workoutTotal(1, unit: "parsec", canonicalUnit: distance, field: "totalDistance") }
                    == Failure("totalDistance.unit", .unitMalformed))
        #expect(try HealthValidation.workoutEventType("lap", field: "events[0].type") == "lap")
        #expect(field { _ = try HealthValidation.workoutEventType("motionPaused", field: "events[1].type") }
                    == Failure("events[1].type", .valueNotInSet))
        let workout = try type("workout")
        #expect(field { try HealthValidation.interval(start: 0, end: 345_600_001, for: workout) } == Failure("end", .durationTooLong))
    }

    @Test func typesAndCorrelations() throws {
        #expect(try HealthValidation.type("HKQuantityTypeIdentifierHeartRate").id == "heartRate")
        #expect(field { _ = try HealthValidation.type("heartbeat") } == Failure("type", .unknownType))
        let bloodPressure = try type("bloodPressure")
        try HealthValidation.correlationObject("bloodPressureSystolic", in: bloodPressure, field: "objects[0].type")
        #expect(field { try HealthValidation.correlationObject("heartRate", in: bloodPressure, field: "objects[1].type") } == Failure("objects[1].type", .typeNotAllowed))
        let nested = HealthValidationError(field: "value", reason: .valueNegative, detail: "x").nested(under: "objects[2]")
        #expect(nested.field == "objects[2].value")
    }

    @Test func metadataLimits() {
        #expect(field { try HealthValidation.metadata(keyCount: 128, serializedByteCount: 16_384) } == nil)
        #expect(field { try HealthValidation.metadata(keyCount: 129) } == Failure("metadata", .tooManyMetadataKeys))
        #expect(field { try HealthValidation.metadata(keyCount: 1, serializedByteCount: 16_385) } == Failure("metadata", .metadataTooLarge))
    }

    @Test func uuids() throws {
        let text = "3F2504E0-4F89-41D3-9A0C-0305E82C3301"
        let uuid = try #require(HealthUUID(text))
        #expect(uuid.uuidString == text)
        #expect(uuid.lowercasedString == text.lowercased())
        #expect(HealthUUID(text.lowercased()) == uuid)
        #expect(HealthUUID("3f2504e0-4F89-41d3-9A0C-0305e82c3301") == uuid)
        #expect(uuid.bytes == [0x3F, 0x25, 0x04, 0xE0, 0x4F, 0x89, 0x41, 0xD3, 0x9A, 0x0C, 0x03, 0x05, 0xE8, 0x2C, 0x33, 0x01])
        #expect(HealthUUID(bytes: uuid.bytes) == uuid)
        #expect(HealthUUID(bytes: [UInt8](repeating: 0, count: 15)) == nil)
        for bad in ["", "3F2504E0-4F89-41D3-9A0C-0305E82C330", "3F2504E0-4F89-41D3-9A0C-0305E82C33011",
                    "3F2504E04F8941D39A0C0305E82C3301", "{3F2504E0-4F89-41D3-9A0C-0305E82C3301}",
                    "3F2504E0-4F89-41D3-9A0C_0305E82C3301", "3F2504E0-4F89-41D3-9A0C-0305E82C330G",
                    "3F2504E0-4F8941D3-9A0C--0305E82C3301"] {
            #expect(HealthUUID(bad) == nil, "\(bad)")
        }
        #expect(field { _ = try HealthValidation.uuid("nope") } == Failure("uuid", .malformedUUID))

        var generator = SplitMix64(seed: 7)
        var seen = Set<HealthUUID>()
        for _ in 0..<1_000 {
            let random = HealthUUID.random(using: &generator)
            #expect(random.bytes[6] >> 4 == 4, "version 4")
            #expect(random.bytes[8] >> 6 == 0b10, "RFC 4122 variant")
            #expect(HealthUUID(random.uuidString) == random)
            #expect(HealthUUID(random.lowercasedString) == random)
            seen.insert(random)
        }
        #expect(seen.count == 1_000)
    }
}

@Suite struct PercentAndCountTests {
    @Test func percentIsNotACount() throws {
        let steps = try #require(HealthTypeCatalog.type("stepCount"))
        let oxygen = try #require(HealthTypeCatalog.type("oxygenSaturation"))
        #expect(throws: HealthValidationError.self) { try HealthValidation.unit("%", for: steps) }
        #expect(throws: HealthValidationError.self) { try HealthValidation.unit("count", for: oxygen) }
        #expect(try HealthValidation.unit("%", for: oxygen).unitString == "%")
        #expect(try HealthValidation.unit("count", for: steps).unitString == "count")
    }
}
