import Foundation
import HealthModel
import JSON
import Testing
@testable import HealthAutoExport

/// The fixtures are written for these tests from the app's published format description.
enum HAEFixtures {
    static func bytes(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/health-auto-export/\(name)")
        return Array(try Data(contentsOf: url))
    }

    /// Everything a payload yields.
    static func items(_ bytes: [UInt8], interval: HealthAutoExportInterval = .minutes, batchSize: Int = 5_000) throws -> [HealthAutoExportItem] {
        var reader = HealthAutoExportReader(user: "user-1", interval: interval, batchSize: batchSize)
        var items: [HealthAutoExportItem] = []
        try bytes.withUnsafeBytes { body in try reader.read(body) { items += $0 } }
        return items
    }

    static func items(_ json: String) throws -> [HealthAutoExportItem] { try items(Array(json.utf8)) }

    static func samples(_ items: [HealthAutoExportItem]) -> [HealthSample] {
        items.compactMap { if case .sample(let sample, _) = $0 { return sample } else { return nil } }
    }

    static func unmapped(_ items: [HealthAutoExportItem]) -> [String: Int] {
        var counts: [String: Int] = [:]
        for case .unmapped(let name) in items { counts[name, default: 0] += 1 }
        return counts
    }

    static func instant(_ text: String) -> Int64 { RFC3339.parse(text) ?? .min }
}

func metadataValue(_ sample: HealthSample, _ key: String) -> MetadataValue? {
    sample.metadata.first { $0.key == key }?.value
}

@Suite("Health Auto Export mapping")
struct HealthAutoExportMappingTests {
    @Test("aggregated metrics map to their HealthKit types, units and intervals")
    func aggregatedMetrics() throws {
        let items = try HAEFixtures.items(try HAEFixtures.bytes("metrics-aggregated.json"))
        let samples = HAEFixtures.samples(items)
        func of(_ type: String) -> [HealthSample] { samples.filter { $0.type == type } }

        let steps = of("stepCount")
        #expect(steps.map(\.quantity) == [112, 87, 1])
        // A cumulative point spans its minute; the offset is kept as an instant and as HKTimeZone.
        #expect(steps[0].start == HAEFixtures.instant("2024-02-06T15:00:00Z"))
        #expect(steps[0].end == HAEFixtures.instant("2024-02-06T15:01:00Z"))
        #expect(metadataValue(steps[0], "HKTimeZone") == .string("GMT-0800"))
        #expect(metadataValue(steps[0], "HealthAutoExportSource") == .string("Jane's Apple Watch|Jane's iPhone"))

        // Keys in another order (data first) still map; km become metres.
        #expect(of("distanceWalkingRunning").compactMap(\.quantity).map { ($0 * 1000).rounded() / 1000 } == [81, 64])
        // 41.84 kJ = 10 kcal.
        #expect(abs((of("activeEnergyBurned").first?.quantity ?? 0) - 10) < 1e-9)

        let heartRates = of("heartRate")
        let expectedRates: [Double?] = [96.5, 101]  // canonical count/min
        #expect(heartRates.map(\.quantity) == expectedRates)
        #expect(heartRates[0].start == heartRates[0].end)  // a reading is an instant
        #expect(metadataValue(heartRates[0], "HealthAutoExportMinimum") == .number(88))
        #expect(metadataValue(heartRates[0], "HealthAutoExportMaximum") == .number(104))
        #expect(metadataValue(heartRates[1], "HealthAutoExportMinimum") == nil)

        #expect(of("restingHeartRate").first?.quantity == 58)
        #expect(abs((of("bodyMass").first?.quantity ?? 0) - 70.0) < 0.01)  // 154.32 lb
        #expect(of("oxygenSaturation").first?.quantity == 0.97)  // the app's 97 % is HealthKit's 0.97
        let glucose = try #require(of("bloodGlucose").first)
        #expect(abs((glucose.quantity ?? 0) - 97.28) < 0.01)  // 5.4 mmol/L in mg/dL
        #expect(metadataValue(glucose, "HKBloodGlucoseMealTime") == .number(1))

        let pressure = try #require(of("bloodPressure").first)
        guard case .correlation(let objects) = pressure.content else { Issue.record("not a correlation"); return }
        #expect(objects.map(\.type) == ["bloodPressureSystolic", "bloodPressureDiastolic"])
        #expect(objects.map(\.quantity) == [121, 79])

        #expect(HAEFixtures.unmapped(items) == ["physical_effort": 2])
        // The newer sections of the same payload: a symptom and a state of mind.
        #expect(of("headache").map(\.content) == [.category("mild")])
        #expect(of("stateOfMind").map(\.content) == [.category("slightlyPleasant")])
    }

    @Test("aggregated sleep becomes stage samples laid end to end from sleepStart, and in-bed time")
    func aggregatedSleep() throws {
        let samples = HAEFixtures.samples(try HAEFixtures.items(try HAEFixtures.bytes("metrics-aggregated.json")))
            .filter { $0.type == "sleepAnalysis" }
        let start = HAEFixtures.instant("2024-02-06T07:10:00Z")
        let hour: Int64 = 3_600_000
        let stages = samples.map { sample -> (String, Int64, Int64) in
            guard case .category(let value) = sample.content else { return ("?", 0, 0) }
            return (value, sample.start - start, sample.end - sample.start)
        }
        #expect(stages.map(\.0) == ["asleepCore", "asleepDeep", "asleepREM", "awake", "inBed"])
        #expect(stages.map(\.2) == [4 * hour, hour + hour / 4, 2 * hour, hour / 2, 8 * hour])
        #expect(stages[1].1 == 4 * hour && stages[2].1 == 5 * hour + hour / 4)
        #expect(samples.last?.start == HAEFixtures.instant("2024-02-06T06:55:00Z"))
        #expect(metadataValue(samples[0], "HealthAutoExportAggregatedSleep") == .bool(true))
    }

    @Test("older aggregated sleep: asleep is the night's total")
    func olderAggregatedSleep() throws {
        let items = try HAEFixtures.items(#"""
            {"data":{"metrics":[{"name":"sleep_analysis","units":"hr","data":[
              {"date":"2023-01-02","asleep":6.5,"sleepStart":"2023-01-01 23:30:00 +0000","sleepEnd":"2023-01-02 06:00:00 +0000",
               "sleepSource":"Pillow","inBed":7,"inBedStart":"2023-01-01 23:00:00 +0000","inBedEnd":"2023-01-02 06:00:00 +0000","inBedSource":"iPhone"}]}]}}
            """#)
        let samples = HAEFixtures.samples(items)
        #expect(samples.map { if case .category(let value) = $0.content { value } else { "" } } == ["asleepUnspecified", "inBed"])
        #expect(samples[0].end - samples[0].start == 6 * 3_600_000 + 1_800_000)
        #expect(metadataValue(samples[0], "HealthAutoExportSource") == .string("Pillow"))
        #expect(metadataValue(samples[1], "HealthAutoExportSource") == .string("iPhone"))
    }

    @Test("unaggregated sleep: one category sample per stage, offsets kept")
    func unaggregatedSleep() throws {
        let samples = HAEFixtures.samples(try HAEFixtures.items(try HAEFixtures.bytes("metrics-unaggregated.json")))
        let sleep = samples.filter { $0.type == "sleepAnalysis" }
        #expect(sleep.map { if case .category(let value) = $0.content { value } else { "" } }
                == ["asleepCore", "asleepDeep", "awake", "asleepREM", "asleepUnspecified", "inBed"])
        #expect(sleep[0].start == HAEFixtures.instant("2024-03-10T22:30:00Z"))
        #expect(sleep[0].end == HAEFixtures.instant("2024-03-10T23:10:00Z"))
        #expect(metadataValue(sleep[0], "HKTimeZone") == .string("GMT+0100"))
        let expectedRates: [Double?] = [52, 49]
        #expect(samples.filter { $0.type == "heartRate" }.map(\.quantity) == expectedRates)
    }

    @Test("the time grouping sets how long a cumulative point lasts")
    func intervals() throws {
        let json = Array(#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"2024-02-06 00:00:00 -0800","qty":9000}]}]}}"#.utf8)
        for interval in HealthAutoExportInterval.allCases {
            let sample = try #require(HAEFixtures.samples(try HAEFixtures.items(json, interval: interval)).first)
            #expect(sample.end - sample.start == interval.milliseconds)
        }
        // A day point spans the user's local day: midnight -08:00 to midnight -08:00.
        let day = try #require(HAEFixtures.samples(try HAEFixtures.items(json, interval: .days)).first)
        #expect(day.start == HAEFixtures.instant("2024-02-06T00:00:00-08:00"))
        #expect(day.end == HAEFixtures.instant("2024-02-07T00:00:00-08:00"))
    }

    @Test("workouts v1: totals converted, heart-rate samples, a route linked to the workout")
    func workoutsVersion1() throws {
        let items = try HAEFixtures.items(try HAEFixtures.bytes("workouts-v1.json"))
        let samples = HAEFixtures.samples(items)
        let workout = try #require(samples.first { $0.type == "workout" })
        guard case .workout(let details) = workout.content else { Issue.record("not a workout"); return }
        #expect(details.activityType == "walking")
        #expect(abs((details.totalEnergyBurned ?? 0) - 149.02) < 0.01)  // 623.5 kJ
        #expect(abs((details.totalDistance ?? 0) - 3379.62) < 0.01)  // 2.1 mi
        #expect(workout.start == HAEFixtures.instant("2023-06-01T22:00:00Z"))
        #expect(workout.end == HAEFixtures.instant("2023-06-01T22:40:00Z"))
        let expectedRates: [Double?] = [98, 112]
        #expect(samples.filter { $0.type == "heartRate" }.map(\.quantity) == expectedRates)
        #expect(HAEFixtures.unmapped(items).isEmpty)
        // Version 1 spells the coordinates lat and lon.
        let route = try #require(samples.first { $0.type == "workoutRoute" })
        guard case .workoutRoute(let locations) = route.content else { Issue.record("not a route"); return }
        #expect(locations.workout == workout.uuid)
        #expect(locations.locations.map(\.latitude) == [40.7812, 40.7815, 40.7819])
        #expect(locations.locations.map(\.altitude) == [41.2, 41.9, 42.3])
        #expect(route.start == HAEFixtures.instant("2023-06-01T22:00:05Z") && route.end == HAEFixtures.instant("2023-06-01T22:00:15Z"))
    }

    @Test("workouts v2: activity type from the name, indoor flag, id kept, heart-rate points")
    func workoutsVersion2() throws {
        let items = try HAEFixtures.items(try HAEFixtures.bytes("workouts-v2.json"))
        let workouts = HAEFixtures.samples(items).filter { $0.type == "workout" }
        #expect(workouts.count == 2)
        guard case .workout(let run) = workouts[0].content, case .workout(let lift) = workouts[1].content else {
            Issue.record("not workouts")
            return
        }
        #expect(run.activityType == "running")
        #expect(run.totalEnergyBurned == 350)
        #expect(run.totalDistance == 5200)
        #expect(metadataValue(workouts[0], "HKIndoorWorkout") == .bool(false))
        #expect(metadataValue(workouts[0], "HKExternalUUID") == .string("4C2B7D1E-9A8F-4E3D-B2C1-0F9E8D7C6B5A"))
        #expect(metadataValue(workouts[0], "HealthAutoExportName") == .string("Outdoor Run"))
        #expect(lift.activityType == "traditionalStrengthTraining")
        #expect(lift.totalDistance == nil)
        #expect(metadataValue(workouts[1], "HKIndoorWorkout") == .bool(true))
        let heartRates = HAEFixtures.samples(items).filter { $0.type == "heartRate" }
        let expected: [Double?] = [146, 155.5]
        #expect(heartRates.map(\.quantity) == expected)
        #expect(HAEFixtures.unmapped(items).isEmpty)
        let route = try #require(HAEFixtures.samples(items).first { $0.type == "workoutRoute" })
        guard case .workoutRoute(let path) = route.content else { Issue.record("not a route"); return }
        #expect(path.workout == workouts[0].uuid)
        #expect(path.locations.first == WorkoutRouteLocation(
            date: HAEFixtures.instant("2024-02-06T15:00:02Z"), latitude: 37.7749, longitude: -122.4194, altitude: 12.5, speed: 2.9,
            course: 90, horizontalAccuracy: 3.1, verticalAccuracy: 2.2))
        #expect(metadataValue(route, "HKTimeZone") == .string("GMT-0800"))
    }

    @Test("workout names", arguments: [
        ("Outdoor Walk", "walking", false as Bool?), ("Indoor Cycle", "cycling", true), ("Pool Swim", "swimming", nil),
        ("High Intensity Interval Training", "highIntensityIntervalTraining", nil), ("Yoga", "yoga", nil),
        ("Functional Strength Training", "functionalStrengthTraining", nil), ("Underwater Basket Weaving", "other", nil),
    ])
    func workoutNames(name: String, activityType: String, indoor: Bool?) {
        let mapped = HealthAutoExportMapper.activityType(name)
        #expect(mapped.0 == activityType)
        #expect(mapped.1 == indoor)
    }

    @Test("every name the app has used for a metric maps to that metric's type", arguments: HealthAutoExportMapper.metricAliases.map { ($0.alias, $0.name) })
    func aliasesMap(alias: String, name: String) throws {
        let types = try #require(HealthAutoExportMapper.typeIDs(forMetric: alias))
        #expect(types == HealthAutoExportMapper.typeIDs(forMetric: name))
        // An alias is an old spelling, never a name the table already maps otherwise.
        #expect(!HealthAutoExportMapper.quantityMetrics.contains { $0.0 == alias })
    }

    @Test("each dietary and body metric the app lists maps to its HealthKit type", arguments: [
        // The app's current names, then those of earlier versions.
        ("dietary_energy", "dietaryEnergyConsumed"), ("carbohydrates", "dietaryCarbohydrates"), ("total_fat", "dietaryFatTotal"),
        ("saturated_fat", "dietaryFatSaturated"), ("monounsaturated_fat", "dietaryFatMonounsaturated"),
        ("polyunsaturated_fat", "dietaryFatPolyunsaturated"), ("protein", "dietaryProtein"), ("dietary_sugar", "dietarySugar"),
        ("fiber", "dietaryFiber"), ("cholesterol", "dietaryCholesterol"), ("sodium", "dietarySodium"), ("potassium", "dietaryPotassium"),
        ("calcium", "dietaryCalcium"), ("iron", "dietaryIron"), ("vitamin_c", "dietaryVitaminC"), ("caffeine", "dietaryCaffeine"),
        ("dietary_water", "dietaryWater"), ("weight_body_mass", "bodyMass"), ("height", "height"), ("body_mass_index", "bodyMassIndex"),
        ("body_fat_percentage", "bodyFatPercentage"), ("lean_body_mass", "leanBodyMass"), ("waist_circumference", "waistCircumference"),
        ("dietary_cholesterol", "dietaryCholesterol"), ("dietary_caffeine", "dietaryCaffeine"), ("dietary_protein", "dietaryProtein"),
        ("dietary_carbohydrates", "dietaryCarbohydrates"), ("dietary_fiber", "dietaryFiber"), ("dietary_sodium", "dietarySodium"),
        ("dietary_fat_total", "dietaryFatTotal"), ("monosaturated_fat", "dietaryFatMonounsaturated"), ("body_mass", "bodyMass"),
    ])
    func dietaryAndBodyNames(name: String, type: String) throws {
        #expect(HealthAutoExportMapper.typeIDs(forMetric: name) == [type])
    }

    @Test("a point posted under an old name and under the current one is the same sample")
    func aliasIsTheSameSample() throws {
        func sample(_ name: String) throws -> HealthSample? {
            HAEFixtures.samples(try HAEFixtures.items(
                #"{"data":{"metrics":[{"name":"\#(name)","units":"mg","data":[{"date":"2023-01-20 7:57:00 pm +1100","qty":120}]}]}}"#)).first
        }
        let current = try #require(try sample("cholesterol"))
        #expect(current.type == "dietaryCholesterol")
        #expect(try sample("dietary_cholesterol") == current)
    }

    @Test("uuids come from content: the same point twice is one uuid, another value or source another")
    func contentUUIDs() throws {
        func uuid(_ point: String) throws -> HealthUUID? {
            HAEFixtures.samples(try HAEFixtures.items(#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[\#(point)]}]}}"#)).first?.uuid
        }
        let base = try uuid(#"{"date":"2024-02-06 07:00:00 -0800","qty":10,"source":"iPhone"}"#)
        #expect(base != nil)
        #expect(try uuid(#"{"source":"iPhone","qty":10,"date":"2024-02-06 07:00:00 -0800"}"#) == base)
        // The same instant written in another zone is the same sample.
        #expect(try uuid(#"{"date":"2024-02-06 16:00:00 +0100","qty":10,"source":"iPhone"}"#) == base)
        #expect(try uuid(#"{"date":"2024-02-06 07:00:00 -0800","qty":11,"source":"iPhone"}"#) != base)
        #expect(try uuid(#"{"date":"2024-02-06 07:00:00 -0800","qty":10,"source":"Watch"}"#) != base)
        var other = HealthAutoExportReader(user: "user-2")
        var otherItems: [HealthAutoExportItem] = []
        try Array(#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"2024-02-06 07:00:00 -0800","qty":10,"source":"iPhone"}]}]}}"#.utf8)
            .withUnsafeBytes { body in try other.read(body) { otherItems += $0 } }
        #expect(HAEFixtures.samples(otherItems).first?.uuid != base)
        // Version 8, variant 10, the start's milliseconds first.
        let value = try #require(base)
        #expect((value.high >> 12) & 0xF == 8)
        #expect(value.low >> 62 == 2)
        #expect(Int64(value.high >> 16) == HAEFixtures.instant("2024-02-06T15:00:00Z"))
    }

    @Test("values HealthKit refuses are reported as invalid, not fatal")
    func invalidValues() throws {
        let items = try HAEFixtures.items(#"""
            {"data":{"metrics":[{"name":"heart_rate","units":"count/min","data":[
              {"date":"2024-02-06 07:00:00 -0800","Avg":900},{"date":"2024-02-06 07:01:00 -0800","Avg":60}]},
              {"name":"step_count","units":"kg","data":[{"date":"2024-02-06 07:00:00 -0800","qty":5}]}]}}
            """#)
        #expect(HAEFixtures.samples(items).count == 1)
        let invalid = items.compactMap { if case .invalid(let metric, let field, _) = $0 { "\(metric).\(field)" } else { nil } }
        #expect(invalid == ["heart_rate.Avg", "step_count.units"])
    }

    @Test("a mindful session too long to be one is invalid, never a trap")
    func overlongMindfulSession() throws {
        let items = try HAEFixtures.items(#"""
            {"data":{"metrics":[{"name":"mindful_minutes","units":"min","data":[
              {"date":"2024-02-06 07:00:00 -0800","qty":1e20},{"date":"2024-02-06 08:00:00 -0800","qty":10}]}]}}
            """#)
        #expect(HAEFixtures.samples(items).count == 1)
        let invalid = items.compactMap { if case .invalid(let metric, let field, _) = $0 { "\(metric).\(field)" } else { nil } }
        #expect(invalid == ["mindful_minutes.qty"])
    }

    @Test("a quantity metric without units is invalid, never read in the canonical unit; fixed-unit metrics keep theirs")
    func metricsWithoutUnits() throws {
        let items = try HAEFixtures.items(#"""
            {"data":{"metrics":[{"name":"weight_body_mass","data":[{"date":"2024-02-06 07:00:00 -0800","qty":150}]},
              {"name":"heart_rate","data":[{"date":"2024-02-06 07:00:00 -0800","Avg":60}]},
              {"name":"blood_pressure","data":[{"date":"2024-02-06 07:00:00 -0800","systolic":120,"diastolic":80}]},
              {"name":"mindful_minutes","data":[{"date":"2024-02-06 07:00:00 -0800","qty":10}]}]}}
            """#)
        let invalid = items.compactMap { if case .invalid(let metric, let field, let detail) = $0 { "\(metric).\(field): \(detail)" } else { nil } }
        #expect(invalid == ["weight_body_mass.units: unit is required for a quantity sample: bodyMass takes kg, g, lb, oz, st",
                            "heart_rate.units: unit is required for a quantity sample: heartRate takes count/min, count/s, Hz"])
        #expect(HAEFixtures.samples(items).map(\.type) == ["bloodPressure", "mindfulSession"])
    }

    @Test("batches are bounded")
    func batches() throws {
        let points = (0..<25).map { #"{"date":"2024-02-06 07:\#(String(format: "%02d", $0)):00 -0800","qty":\#($0)}"# }
        let json = Array(#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[\#(points.joined(separator: ","))]}]}}"#.utf8)
        var reader = HealthAutoExportReader(user: "u", batchSize: 10)
        var sizes: [Int] = []
        try json.withUnsafeBytes { body in try reader.read(body) { sizes.append($0.count) } }
        #expect(sizes == [10, 10, 5])
    }
}

@Suite("Health Auto Export malformed payloads")
struct HealthAutoExportMalformedTests {
    func issues(_ json: String) -> [String] {
        do {
            _ = try HAEFixtures.items(json)
            return []
        } catch let error as HealthAutoExportError {
            return error.issues.map(\.field)
        } catch {
            return ["unexpected \(error)"]
        }
    }

    @Test("syntax errors and wrong shapes name the field", arguments: [
        (#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"2024-02-06 07:00:00 -0800","qty":1}]"#, ""),
        (#"[1,2]"#, ""),
        (#"{"metrics":[]}"#, "data"),
        (#"{"data":[]}"#, "data"),
        (#"{"data":{"metrics":{}}}"#, "data.metrics"),
        (#"{"data":{"metrics":[{"units":"count","data":[]}]}}"#, "data.metrics[0].name"),
        (#"{"data":{"metrics":[{"name":"step_count","units":"count"}]}}"#, "data.metrics[0].data"),
        (#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"2024-02-06T07:00:00Z","qty":1}]}]}}"#, "data.metrics[0].data[0].date"),
        (#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"2024-02-06 07:00:00 -0800","qty":"12"}]}]}}"#, "data.metrics[0].data[0].qty"),
        (#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[{"date":"2024-02-06 07:00:00 -0800"}]}]}}"#, "data.metrics[0].data[0].qty"),
        (#"{"data":{"metrics":[{"name":"blood_pressure","units":"mmHg","data":[{"date":"2024-02-06 07:00:00 -0800","systolic":120}]}]}}"#, "data.metrics[0].data[0].diastolic"),
        (#"{"data":{"workouts":[{"name":"Run","start":"2024-02-06 07:00:00 -0800"}]}}"#, "data.workouts[0].end"),
        (#"{"data":{"workouts":[{"name":"Run","start":"2024-02-06 07:00:00 -0800","end":"2024-02-06 07:30:00 -0800","heartRateData":[{"date":"x","qty":1}]}]}}"#, "data.workouts[0].heartRateData[0].date"),
        (#"{"data":{"metrics":[{"name":"sleep_analysis","units":"hr","data":[{"startDate":"2024-02-06 01:00:00 -0800","value":"Core"}]}]}}"#, "data.metrics[0].data[0].endDate"),
        // Durations too long to be a night (1e300 hours would not fit in milliseconds).
        (#"{"data":{"metrics":[{"name":"sleep_analysis","units":"hr","data":[{"date":"2024-02-06 00:00:00 -0800","sleepStart":"2024-02-05 23:00:00 -0800","core":1e300}]}]}}"#, "data.metrics[0].data[0].core"),
        (#"{"data":{"metrics":[{"name":"sleep_analysis","units":"hr","data":[{"date":"2024-02-06 00:00:00 -0800","sleepStart":"2024-02-05 23:00:00 -0800","asleep":169}]}]}}"#, "data.metrics[0].data[0].asleep"),
        (#"{"data":{"metrics":[],"metrics":[]}}"#, ""),
        (#"{"data":{"metrics":[{"name":"x","data":[1,]}]}}"#, ""),
        (#"{"data":{"metrics":[{"name":"x","data":[{"a":1 "b":2}]}]}}"#, ""),
    ])
    func malformed(json: String, field: String) {
        #expect(issues(json).first == field, "\(json)")
    }

    @Test("every malformed point is listed, up to 100")
    func manyIssues() {
        let points = (0..<150).map { _ in #"{"date":"yesterday","qty":1}"# }.joined(separator: ",")
        do {
            _ = try HAEFixtures.items(#"{"data":{"metrics":[{"name":"step_count","units":"count","data":[\#(points)]}]}}"#)
            Issue.record("accepted")
        } catch let error as HealthAutoExportError {
            #expect(error.issues.count == 100)
            #expect(error.truncated)
            #expect(error.issues[99].field == "data.metrics[0].data[99].date")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

@Suite("JSON stream scanner")
struct JSONStreamScannerTests {
    func skip(_ text: String) -> Result<Range<Int>, JSONParseError> {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { raw in
            var scanner = JSONStreamScanner(raw)
            do throws(JSONParseError) { return .success(try scanner.skipValue()) } catch { return .failure(error) }
        }
    }

    @Test("skips whole values and refuses broken structure", arguments: [
        (#"[[],1]"#, true), (#"{"a":{},"b":[{}]}"#, true), (#" "x\"\u00e9" "#, true), (#"-1.5e3"#, true), (#"[true,false,null]"#, true),
        (#"[1:2]"#, false), (#"{"a" 1}"#, false), (#"{1:2}"#, false), (#"[1,2"#, false), (#""abc"#, false), (#""\q""#, false),
        (#"[tru]"#, false), (#"{"a":1,}"#, false),
        // A \u escape cut short by the end of input once looped forever (found by the fuzzer).
        (#""\u12"#, false), (#"{"c:\u5"#, false), (#""\u"#, false),
    ])
    func skipping(text: String, valid: Bool) {
        switch skip(text) {
        case .success: #expect(valid, "\(text)")
        case .failure: #expect(!valid, "\(text)")
        }
    }
}

@Suite("Health Auto Export cut payloads")
struct HealthAutoExportCutPayloadTests {
    /// A body cut anywhere (a dropped connection, a full buffer) is refused as a whole or, cut
    /// after its last brace, read whole; it never crashes and never yields half a document.
    @Test("every prefix of a payload is an error or the whole payload")
    func prefixes() throws {
        let bytes = try HAEFixtures.bytes("workouts-v2.json")
        let whole = try HAEFixtures.items(bytes)
        for length in 0..<bytes.count {
            let prefix = Array(bytes[0..<length])
            do {
                let items = try HAEFixtures.items(prefix)
                #expect(items == whole, "a prefix of \(length) bytes was read as a document")
            } catch is HealthAutoExportError {
            } catch {
                Issue.record("prefix of \(length) bytes: unexpected \(error)")
            }
        }
    }
}
