import HealthModel
import Testing
@testable import HealthAutoExport

/// The sections after metrics and workouts: symptoms, heart-rate notifications, ECG, state of
/// mind, and the ones healthd counts as unmapped (medications).
@Suite("Health Auto Export sections")
struct HealthAutoExportSectionTests {
    static func sections() throws -> [HealthAutoExportItem] { try HAEFixtures.items(try HAEFixtures.bytes("sections.json")) }

    static func invalid(_ items: [HealthAutoExportItem]) -> [String] {
        items.compactMap { if case .invalid(let metric, let field, _) = $0 { "\(metric).\(field)" } else { nil } }
    }

    @Test("symptoms become HealthKit's symptom category types with HKCategoryValueSeverity")
    func symptoms() throws {
        let items = try Self.sections()
        let samples = HAEFixtures.samples(items)
        let breath = try #require(samples.first { $0.type == "shortnessOfBreath" })
        #expect(breath.content == .category("moderate"))
        #expect(breath.start == HAEFixtures.instant("2024-05-03T06:15:00Z") && breath.end == HAEFixtures.instant("2024-05-03T08:45:00Z"))
        #expect(metadataValue(breath, "HKWasUserEntered") == .bool(true))
        #expect(metadataValue(breath, "HKTimeZone") == .string("GMT+0200"))
        #expect(samples.first { $0.type == "rapidPoundingOrFlutteringHeartbeat" }?.content == .category("notPresent"))
        // No severity is HealthKit's unspecified; "Cough" is the coughing type.
        #expect(samples.first { $0.type == "coughing" }?.content == .category("unspecified"))
        // A symptom healthd has no type for is counted by name; a severity it cannot read is invalid.
        #expect(HAEFixtures.unmapped(items)["symptoms.Hiccups"] == 1)
        #expect(Self.invalid(items).contains("symptoms.severity"))
        #expect(!samples.contains { $0.type == "fatigue" })
    }

    @Test("heart-rate notifications: high or low by threshold, irregular rhythm without one; readings counted")
    func heartRateNotifications() throws {
        let items = try Self.sections()
        let samples = HAEFixtures.samples(items)
        let high = try #require(samples.first { $0.type == "highHeartRateEvent" })
        #expect(high.content == .category("notApplicable"))
        #expect(metadataValue(high, "HKHeartRateEventThreshold") == .number(120))
        #expect(high.end - high.start == 600_000)
        let low = try #require(samples.first { $0.type == "lowHeartRateEvent" })
        #expect(metadataValue(low, "HKHeartRateEventThreshold") == .number(40))
        let irregular = try #require(samples.first { $0.type == "irregularHeartRhythmEvent" })
        #expect(metadataValue(irregular, "HKHeartRateEventThreshold") == nil)
        let unmapped = HAEFixtures.unmapped(items)
        #expect(unmapped["heartRateNotifications.heartRate"] == 2)
        #expect(unmapped["heartRateNotifications.heartRateVariation"] == 1)
    }

    @Test("ECG: an electrocardiogram sample with its classification and average heart rate; voltages counted as unmapped")
    func electrocardiograms() throws {
        let items = try Self.sections()
        let ecgs = HAEFixtures.samples(items).filter { $0.type == "electrocardiogram" }
        #expect(ecgs.map(\.content) == [.category("sinusRhythm"), .category("inconclusivePoorReading")])
        #expect(metadataValue(ecgs[0], "averageHeartRate") == .number(68))
        #expect(metadataValue(ecgs[0], "samplingFrequency") == .number(512))
        #expect(metadataValue(ecgs[0], "numberOfVoltageMeasurements") == .number(4))
        #expect(metadataValue(ecgs[0], "HealthAutoExportSource") == .string("Sam's Apple Watch"))
        #expect(ecgs[0].end - ecgs[0].start == 30_000)
        // Only the ECG that carried voltages reports them as not stored.
        #expect(HAEFixtures.unmapped(items)["ecg.voltageMeasurements"] == 1)
    }

    @Test("state of mind: the valence's classification as the value, valence, kind, labels and associations as metadata")
    func stateOfMind() throws {
        let items = try Self.sections()
        let moods = HAEFixtures.samples(items).filter { $0.type == "stateOfMind" }
        #expect(moods.map(\.content) == [.category("veryPleasant"), .category("unpleasant")])
        #expect(metadataValue(moods[0], "valence") == .number(0.82))
        #expect(metadataValue(moods[0], "kind") == .string("dailyMood"))
        #expect(metadataValue(moods[0], "labels") == .string("content,grateful"))
        #expect(metadataValue(moods[0], "associations") == .string("family,fitness"))
        #expect(metadataValue(moods[1], "kind") == .string("momentaryEmotion"))
        #expect(metadataValue(moods[1], "HKExternalUUID") == .string("6A0B1C2D-3E4F-4A5B-8C6D-7E8F9A0B1C2D"))
        // A valence outside -1...1 is invalid, not saved.
        #expect(Self.invalid(items).contains("stateOfMind.valence"))
    }

    @Test("valence classification: seven equal bands over -1...1", arguments: [
        (-1.0, "veryUnpleasant"), (-0.72, "veryUnpleasant"), (-0.7, "unpleasant"), (-0.3, "slightlyUnpleasant"), (0, "neutral"),
        (0.14, "neutral"), (0.15, "slightlyPleasant"), (0.5, "pleasant"), (0.72, "veryPleasant"), (1.0, "veryPleasant"),
    ])
    func valenceBands(valence: Double, classification: String) {
        #expect(HealthAutoExportMapper.valenceClassification(valence) == classification)
    }

    @Test("medications and cycle tracking have no type: counted as unmapped by section")
    func unmappedSections() throws {
        let unmapped = HAEFixtures.unmapped(try Self.sections())
        #expect(unmapped["medications"] == 1)
        #expect(unmapped["cycleTracking"] == nil)
    }

    @Test("a malformed entry in a section is a malformed payload naming its path")
    func malformedSectionEntry() {
        #expect(throws: HealthAutoExportError.self) {
            try HAEFixtures.items(#"{"data":{"symptoms":[{"name":"Headache","start":"yesterday"}]}}"#)
        }
        do {
            _ = try HAEFixtures.items(#"{"data":{"ecg":[{"start":"2024-05-03 19:41:12 +0200","averageHeartRate":"68"}], "stateOfMind":[7]}}"#)
            Issue.record("accepted")
        } catch let error as HealthAutoExportError {
            #expect(error.issues.map(\.field) == ["data.ecg[0].averageHeartRate", "data.stateOfMind[0]"])
        } catch {
            Issue.record("\(error)")
        }
    }
}

@Suite("Health Auto Export workout routes")
struct HealthAutoExportRouteTests {
    static func workout(route: String) throws -> [HealthAutoExportItem] {
        try HAEFixtures.items(#"""
            {"data":{"workouts":[{"id":"A1","name":"Outdoor Cycle","start":"2024-05-05 09:00:00 +0200","end":"2024-05-05 10:00:00 +0200",
              "distance":{"qty":21.4,"units":"km"},"route":\#(route)}]}}
            """#)
    }

    @Test("locations out of order are put in time order; CLLocation's -1 for unknown becomes nil")
    func order() throws {
        let items = try Self.workout(route: #"""
            [{"latitude":48.1,"longitude":11.5,"altitude":519,"speed":-1,"course":-1,"horizontalAccuracy":4,"verticalAccuracy":-1,"timestamp":"2024-05-05 09:00:20 +0200"},
             {"latitude":48.0,"longitude":11.4,"altitude":518,"speed":6.5,"course":271.5,"horizontalAccuracy":5,"verticalAccuracy":3,"timestamp":"2024-05-05 09:00:10 +0200"}]
            """#)
        let route = try #require(HAEFixtures.samples(items).first { $0.type == "workoutRoute" })
        guard case .workoutRoute(let path) = route.content else { Issue.record("not a route"); return }
        #expect(path.locations.map(\.latitude) == [48.0, 48.1])
        #expect(path.locations[1].speed == nil && path.locations[1].course == nil && path.locations[1].verticalAccuracy == nil)
        #expect(path.locations[1].horizontalAccuracy == 4)
        #expect(route.start == HAEFixtures.instant("2024-05-05T07:00:10Z") && route.end == HAEFixtures.instant("2024-05-05T07:00:20Z"))
    }

    @Test("a location off the globe makes the route invalid, counted and reported; the workout is saved")
    func offTheGlobe() throws {
        let items = try Self.workout(route: #"[{"latitude":91,"longitude":11.5,"timestamp":"2024-05-05 09:00:20 +0200"}]"#)
        let samples = HAEFixtures.samples(items)
        #expect(samples.map(\.type) == ["workout"])
        let invalid = items.compactMap { if case .invalid(let metric, let field, let detail) = $0 { (metric, field, detail) } else { nil } }
        #expect(invalid.map(\.0) == ["workouts.route"])
        #expect(invalid.first?.1 == "route[0].latitude")
    }

    @Test("a route point that is not a location is a malformed payload naming the field")
    func malformed() {
        do {
            _ = try Self.workout(route: #"[{"latitude":"48.1","longitude":11.5,"timestamp":"2024-05-05 09:00:20 +0200"}]"#)
            Issue.record("accepted")
        } catch let error as HealthAutoExportError {
            #expect(error.issues.map(\.field) == ["data.workouts[0].route[0].latitude"])
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("the same route posted again has the same uuid, linked to the same workout uuid")
    func idempotent() throws {
        let route = #"[{"latitude":48.1,"longitude":11.5,"timestamp":"2024-05-05 09:00:20 +0200"}]"#
        let first = HAEFixtures.samples(try Self.workout(route: route)).map(\.uuid)
        let second = HAEFixtures.samples(try Self.workout(route: route)).map(\.uuid)
        #expect(first.count == 2 && first == second)
    }
}
