import HealthModel
import Testing
@testable import AppleHealthExport

/// Runs the mapper over element events and returns what it produced.
private func map(_ events: [(String, [String: String]?)]) -> [AppleHealthImportItem] {
    var mapper = AppleHealthExportMapper()
    for (name, attributes) in events {
        if let attributes { mapper.start(name, attributes) } else { mapper.end(name) }
    }
    return mapper.drain()
}

private func samples(_ items: [AppleHealthImportItem]) -> [SourcedSample] {
    items.compactMap { if case .sample(let sample) = $0 { sample } else { nil } }
}

private func skips(_ items: [AppleHealthImportItem]) -> [AppleHealthSkip] {
    items.compactMap { if case .skipped(let skip) = $0 { skip } else { nil } }
}

private let watch = "<<HKDevice: 0x283a01f40>, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,1, software:10.1>"

private func record(_ type: String, value: String, unit: String? = nil, source: String = "Jane's Apple Watch",
                    start: String = "2019-05-14 19:05:29 -0400", end: String = "2019-05-14 19:06:29 -0400",
                    device: String? = nil) -> [String: String] {
    var attributes = ["type": type, "value": value, "sourceName": source, "startDate": start, "endDate": end,
                      "creationDate": end]
    if let unit { attributes["unit"] = unit }
    if let device { attributes["device"] = device }
    return attributes
}

@Suite struct AppleHealthMapperTests {
    @Test func quantityRecordWithMetadataAndDevice() throws {
        let items = map([
            ("Record", record("HKQuantityTypeIdentifierHeartRate", value: "74", unit: "count/min", device: watch)),
            ("MetadataEntry", ["key": "HKMetadataKeyHeartRateMotionContext", "value": "0"]),
            ("MetadataEntry", ["key": "HKTimeZone", "value": "America/New_York"]),
            ("Record", nil),
        ])
        let sample = try #require(samples(items).first)
        #expect(sample.app == "Jane's Apple Watch")
        #expect(sample.sample.type == "heartRate")
        #expect(sample.sample.quantity == 74)
        #expect(sample.sample.start == 1_557_875_129_000)
        #expect(sample.sample.end == 1_557_875_189_000)
        #expect(sample.sample.metadata == [MetadataEntry(key: "HKMetadataKeyHeartRateMotionContext", value: .string("0")),
                                           MetadataEntry(key: "HKTimeZone", value: .string("America/New_York"))])
        #expect(sample.sample.device == SampleDevice(name: "Apple Watch", manufacturer: "Apple Inc.", model: "Watch",
                                                     hardwareVersion: "Watch6,1", softwareVersion: "10.1"))
    }

    @Test func unitsConvertToCanonical() throws {
        let items = map([
            ("Record", record("HKQuantityTypeIdentifierBloodGlucose", value: "5.5", unit: "mmol<180.1558800000541>/L")), ("Record", nil),
            ("Record", record("HKQuantityTypeIdentifierDistanceWalkingRunning", value: "1.5", unit: "km")), ("Record", nil),
        ])
        let converted = samples(items)
        #expect(converted.count == 2)
        let glucose = try #require(converted.first?.sample.quantity)
        #expect(abs(glucose - 99.085) < 0.01)
        #expect(converted.last?.sample.quantity == 1500)
    }

    @Test func categoryValuesByExportName() {
        let items = map([
            ("Record", record("HKCategoryTypeIdentifierSleepAnalysis", value: "HKCategoryValueSleepAnalysisAsleepCore")), ("Record", nil),
            ("Record", record("HKCategoryTypeIdentifierSleepAnalysis", value: "HKCategoryValueSleepAnalysisInBed")), ("Record", nil),
        ])
        #expect(samples(items).map(\.sample.content) == [.category("asleepCore"), .category("inBed")])
    }

    @Test func invalidRecordsAreSkippedWithReasons() {
        let items = map([
            ("Record", record("HKQuantityTypeIdentifierStepCount", value: "-5", unit: "count")), ("Record", nil),
            ("Record", record("HKDataTypeSleepDurationGoal", value: "8", unit: "hr")), ("Record", nil),
            ("Record", record("HKQuantityTypeIdentifierStepCount", value: "12", unit: "count", start: "yesterday")), ("Record", nil),
            ("Record", record("HKQuantityTypeIdentifierStepCount", value: "12", unit: "count",
                              start: "2019-05-14 19:05:29 -0400", end: "2019-05-14 18:05:29 -0400")), ("Record", nil),
            ("Record", record("HKQuantityTypeIdentifierStepCount", value: "12", unit: "kg")), ("Record", nil),
            ("Record", record("HKQuantityTypeIdentifierStepCount", value: "12", unit: "count")), ("Record", nil),
            // No unit: skipped, not read in the canonical unit (150 could be pounds).
            ("Record", record("HKQuantityTypeIdentifierBodyMass", value: "150")), ("Record", nil),
        ])
        #expect(samples(items).count == 1)
        let reasons = skips(items).map(\.reason)
        #expect(reasons.count == 6)
        #expect(reasons.last == "unit is required for a quantity sample: bodyMass takes kg, g, lb, oz, st")
        #expect(reasons[0].contains("cumulative"))
        #expect(reasons[1] == "type not supported by healthd")
        #expect(reasons[2].contains("startDate"))
        #expect(reasons[3].contains("before start"))
        #expect(reasons[4].contains("kg"))
    }

    @Test func uuidsDeriveFromContent() {
        let first = map([("Record", record("HKQuantityTypeIdentifierStepCount", value: "12", unit: "count")), ("Record", nil)])
        let again = map([("Record", record("HKQuantityTypeIdentifierStepCount", value: "12", unit: "count")), ("Record", nil)])
        let otherValue = map([("Record", record("HKQuantityTypeIdentifierStepCount", value: "13", unit: "count")), ("Record", nil)])
        let otherSource = map([("Record", record("HKQuantityTypeIdentifierStepCount", value: "12", unit: "count", source: "iPhone")),
                               ("Record", nil)])
        let uuid = samples(first).first?.sample.uuid
        #expect(uuid != nil)
        #expect(samples(again).first?.sample.uuid == uuid)
        #expect(samples(otherValue).first?.sample.uuid != uuid)
        #expect(samples(otherSource).first?.sample.uuid != uuid)
        // Version 8 and the RFC variant.
        #expect(uuid.map { ($0.high >> 12) & 0xF } == 8)
        #expect(uuid.map { $0.low >> 62 } == 2)
    }

    @Test func correlationObjectsShareTheTopLevelRecordsUUIDs() throws {
        let systolic = record("HKQuantityTypeIdentifierBloodPressureSystolic", value: "120", unit: "mmHg", source: "Omron")
        let diastolic = record("HKQuantityTypeIdentifierBloodPressureDiastolic", value: "80", unit: "mmHg", source: "Omron")
        var correlation = record("HKCorrelationTypeIdentifierBloodPressure", value: "", source: "Omron")
        correlation["value"] = nil
        let items = map([
            ("Record", systolic), ("Record", nil), ("Record", diastolic), ("Record", nil),
            ("Correlation", correlation), ("MetadataEntry", ["key": "HKWasUserEntered", "value": "1"]),
            ("Record", systolic), ("Record", nil), ("Record", diastolic), ("Record", nil), ("Correlation", nil),
        ])
        let mapped = samples(items)
        #expect(mapped.count == 3)
        guard case .correlation(let objects) = mapped[2].sample.content else {
            Issue.record("not a correlation")
            return
        }
        #expect(objects.map(\.uuid) == [mapped[0].sample.uuid, mapped[1].sample.uuid])
        #expect(mapped[2].sample.metadata == [MetadataEntry(key: "HKWasUserEntered", value: .string("1"))])
    }

    @Test func workoutWithNestedActivityEventsAndStatistics() throws {
        let items = map([
            ("Workout", ["workoutActivityType": "HKWorkoutActivityTypeRunning", "sourceName": "Watch", "duration": "30",
                         "durationUnit": "min", "startDate": "2024-01-01 10:00:00 +0000", "endDate": "2024-01-01 10:30:00 +0000"]),
            ("MetadataEntry", ["key": "HKIndoorWorkout", "value": "0"]),
            ("WorkoutEvent", ["type": "HKWorkoutEventTypeSegment", "date": "2024-01-01 10:00:00 +0000"]), ("WorkoutEvent", nil),
            ("WorkoutActivity", ["uuid": "X", "startDate": "2024-01-01 10:00:00 +0000"]),
            ("WorkoutEvent", ["type": "HKWorkoutEventTypePause", "date": "2024-01-01 10:05:00 +0000"]), ("WorkoutEvent", nil),
            ("WorkoutStatistics", ["type": "HKQuantityTypeIdentifierActiveEnergyBurned", "sum": "300", "unit": "kcal"]),
            ("WorkoutStatistics", nil),
            ("WorkoutStatistics", ["type": "HKQuantityTypeIdentifierDistanceWalkingRunning", "sum": "5", "unit": "km"]),
            ("WorkoutStatistics", nil),
            ("MetadataEntry", ["key": "HKActivityOnly", "value": "1"]),
            ("WorkoutActivity", nil),
            ("Workout", nil),
        ])
        let workout = try #require(samples(items).first?.sample)
        guard case .workout(let details) = workout.content else {
            Issue.record("not a workout")
            return
        }
        #expect(details.activityType == "running")
        #expect(details.totalEnergyBurned == 300)
        #expect(details.totalDistance == 5000)
        #expect(details.events.map(\.type) == [.segment, .pause])
        #expect(workout.metadata.map(\.key) == ["HKIndoorWorkout"])
    }

    @Test func workoutTotalsFromAttributes() throws {
        let items = map([
            ("Workout", ["workoutActivityType": "HKWorkoutActivityTypeOther", "sourceName": "Watch",
                         "totalDistance": "0.5", "totalDistanceUnit": "mi", "totalEnergyBurned": "139.3", "totalEnergyBurnedUnit": "kcal",
                         "startDate": "2016-04-02 10:40:38 +0100", "endDate": "2016-04-02 11:12:22 +0100"]),
            ("Workout", nil),
        ])
        guard case .workout(let details)? = samples(items).first?.sample.content else {
            Issue.record("not a workout")
            return
        }
        #expect(details.totalEnergyBurned == 139.3)
        #expect(abs((details.totalDistance ?? 0) - 804.672) < 0.001)
    }

    /// A total without its unit attribute is never read in kcal or m: the workout's statistics
    /// (which carry units) give it, or it is left out.
    @Test func workoutTotalsWithoutAUnitComeFromStatisticsOrAreLeftOut() throws {
        let items = map([
            ("Workout", ["workoutActivityType": "HKWorkoutActivityTypeRunning", "sourceName": "Watch",
                         "totalDistance": "3", "totalEnergyBurned": "250",
                         "startDate": "2024-01-01 10:00:00 +0000", "endDate": "2024-01-01 10:30:00 +0000"]),
            ("WorkoutStatistics", ["type": "HKQuantityTypeIdentifierDistanceWalkingRunning", "sum": "3", "unit": "mi"]),
            ("WorkoutStatistics", nil),
            ("Workout", nil),
        ])
        guard case .workout(let details)? = samples(items).first?.sample.content else {
            Issue.record("not a workout")
            return
        }
        #expect(abs((details.totalDistance ?? 0) - 4828.032) < 0.001, "3 mi from the statistics, not 3 m")
        #expect(details.totalEnergyBurned == nil, "no unit and no statistics: left out, not 250 kcal")
    }

    @Test func activitySummaryAndCharacteristics() {
        let items = map([
            ("Me", ["HKCharacteristicTypeIdentifierDateOfBirth": "1965-07-31",
                    "HKCharacteristicTypeIdentifierBiologicalSex": "HKBiologicalSexMale",
                    "HKCharacteristicTypeIdentifierBloodType": "HKBloodTypeABPositive",
                    "HKCharacteristicTypeIdentifierFitzpatrickSkinType": "HKFitzpatrickSkinTypeIII",
                    "HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse": "None"]),
            ("Me", nil),
            ("ActivitySummary", ["dateComponents": "2016-04-14", "activeEnergyBurned": "700.698", "activeEnergyBurnedGoal": "680",
                                 "activeEnergyBurnedUnit": "kcal", "appleExerciseTime": "89", "appleExerciseTimeGoal": "30",
                                 "appleStandHours": "16", "appleStandHoursGoal": "12"]),
            ("ActivitySummary", nil),
            ("ActivitySummary", ["activeEnergyBurned": "1"]), ("ActivitySummary", nil),
        ])
        #expect(items.contains(.characteristics(["dateOfBirth": "1965-07-31", "biologicalSex": "male", "bloodType": "abPositive",
                                                 "fitzpatrickSkinType": "III"])))
        let day = HealthDay(year: 2016, month: 4, day: 14)
        #expect(items.contains(.activitySummary(ActivitySummary(
            day: day ?? HealthDay(daysSinceEpoch: 0), activeEnergyBurned: 700.698, activeEnergyBurnedGoal: 680, appleExerciseTime: 89,
            appleExerciseTimeGoal: 30, appleStandHours: 16, appleStandHoursGoal: 12))))
        #expect(skips(items).map(\.element).sorted() == ["ActivitySummary", "Me"])
    }

    @Test func deviceStrings() {
        #expect(AppleHealthExportMapper.parseDevice(watch)?.hardwareVersion == "Watch6,1")
        let odd = AppleHealthExportMapper.parseDevice("<<HKDevice: 0x1>, name:Scale, Model X, manufacturer:Withings, model:(null)>")
        #expect(odd == SampleDevice(name: "Scale, Model X", manufacturer: "Withings"))
        #expect(AppleHealthExportMapper.parseDevice("<<HKDevice: 0x1>>") == nil)
    }
}

@Suite struct XMLByteSanitizerTests {
    private func sanitize(_ text: String, chunk: Int) -> String {
        var sanitizer = XMLByteSanitizer()
        var output: [UInt8] = []
        let bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + chunk)
            bytes.withUnsafeBytes { sanitizer.sanitize(UnsafeRawBufferPointer(rebasing: $0[start..<end]), into: &output) }
            start = end
        }
        sanitizer.finish(into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    @Test func removesTheDoctypeAndInvalidControlCharactersAtAnyChunkBoundary() {
        let input = "<?xml version=\"1.0\"?>\n<!DOCTYPE HealthData [\n<!ATTLIST Record type CDATA #REQUIRED>\n<!-- broken <!ELEMENT -->\n]>\n"
            + "<HealthData><!-- keep --><Record value=\"a\u{01}b\u{1F}c\tz\"/><![CDATA[x]]></HealthData><"
        let expected = "<?xml version=\"1.0\"?>\n\n<HealthData><!-- keep --><Record value=\"abc\tz\"/><![CDATA[x]]></HealthData><"
        for chunk in 1...12 {
            #expect(sanitize(input, chunk: chunk) == expected, "chunk size \(chunk)")
        }
    }

    @Test func doctypeWithoutSubset() {
        #expect(sanitize("<!DOCTYPE HealthData><HealthData/>", chunk: 3) == "<HealthData/>")
    }
}

@Suite struct ContentHashTests {
    private func hash(_ text: String) -> (UInt64, UInt64) {
        Array(text.utf8).withUnsafeBytes { ContentHash.murmur3x64_128($0) }
    }

    @Test func murmur3ReferenceVectors() {
        #expect(hash("") == (0, 0))
        #expect(hash("hello") == (0xCBD8_A7B3_41BD_9B02, 0x5B1E_906A_48AE_1D19))
        #expect(hash("The quick brown fox jumps over the lazy dog") == (0xE34B_BC7B_BC07_1B6C, 0x7A43_3CA9_C49A_9347))
    }
}
